/* Blocking ito calls from plain pthreads that are not workers: the OS thread
 * blocks, and ito threads keep running on the workers. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

static void *iptr(intptr_t v) { return (void *)v; }

static pthread_t pspawn(void *(*fn)(void *), void *arg) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, fn, arg), 0);
  return t;
}

static void *pjoin(pthread_t t) {
  void *r = NULL;
  CHECK_EQ(pthread_join(t, &r), 0);
  return r;
}

static void not_a_worker(void) {
  CHECK_EQ(ito_worker_id(), -1);
  CHECK(ito_self() == 0);
}

/* ---- create and join from a plain pthread ------------------------------- */
static void *square_fn(void *p) {
  intptr_t v = (intptr_t)p;
  CHECK(ito_worker_id() >= 0);
  CHECK(ito_self() != 0);
  return iptr(v * v);
}

static void *sleepy_fn(void *p) {
  struct timespec ts = {0, 50 * 1000000L};
  nanosleep(&ts, NULL);
  return p;
}

static void *create_join_pt(void *arg) {
  (void)arg;
  not_a_worker();
  enum { N = 32 };
  ito_thread_t t[N];
  for (intptr_t i = 0; i < N; i++) CHECK_EQ(ito_create(square_fn, iptr(i), &t[i]), 0);
  for (intptr_t i = 0; i < N; i++) {
    void *r = NULL;
    CHECK_EQ(ito_join(t[i], &r), 0);
    CHECK_EQ((intptr_t)r, i * i);
  }
  /* ito_join must really block until the thread is done. */
  ito_thread_t s;
  CHECK_EQ(ito_create(sleepy_fn, iptr(99), &s), 0);
  void *r = NULL;
  CHECK_EQ(ito_join(s, &r), 0);
  CHECK_EQ((intptr_t)r, 99);
  CHECK_EQ(ito_join(s, &r), EINVAL);
  return iptr(1);
}

/* ---- a mutex contended by pthreads and ito threads ---------------------- */
enum { M_ITERS = 30000, M_ITO = 4, M_PT = 2 };
static ito_mutex_t mu = ITO_MUTEX_INITIALIZER;
static long counter;

static void count_loop(int is_ito) {
  for (int i = 0; i < M_ITERS; i++) {
    CHECK_EQ(ito_mutex_lock(&mu), 0);
    long v = counter;
    if (i % 1000 == 0) {
      if (is_ito)
        CHECK_EQ(ito_yield(), 0);
      else
        sched_yield();
    }
    counter = v + 1;
    CHECK_EQ(ito_mutex_unlock(&mu), 0);
  }
}

static void *count_ito(void *p) {
  count_loop(1);
  return p;
}

static void *count_pt(void *p) {
  not_a_worker();
  count_loop(0);
  return p;
}

static void test_mutex(void) {
  ito_thread_t t[M_ITO];
  pthread_t pt[M_PT];
  for (int i = 0; i < M_PT; i++) pt[i] = pspawn(count_pt, NULL);
  for (int i = 0; i < M_ITO; i++) CHECK_EQ(ito_create(count_ito, NULL, &t[i]), 0);
  for (int i = 0; i < M_ITO; i++) CHECK_EQ(ito_join(t[i], NULL), 0);
  for (int i = 0; i < M_PT; i++) pjoin(pt[i]);
  CHECK_EQ(counter, (long)(M_ITO + M_PT) * M_ITERS);
}

/* ---- condition variables across the two kinds of thread ------------------ */
enum { ROUNDS = 1000 };
static ito_mutex_t cm = ITO_MUTEX_INITIALIZER;
static ito_cond_t cv = ITO_COND_INITIALIZER;
static int turn; /* 0: the pthread's turn, 1: the ito thread's */
static int rounds_pt, rounds_ito;

/* Each side waits for its turn, then hands the turn over with a signal: the
 * pthread wakes the ito thread and the ito thread wakes the pthread. */
static void *pingpong_pt(void *arg) {
  (void)arg;
  not_a_worker();
  for (int r = 0; r < ROUNDS; r++) {
    CHECK_EQ(ito_mutex_lock(&cm), 0);
    while (turn != 0) CHECK_EQ(ito_cond_wait(&cv, &cm), 0);
    turn = 1;
    rounds_pt++;
    CHECK_EQ(ito_cond_signal(&cv), 0);
    CHECK_EQ(ito_mutex_unlock(&cm), 0);
  }
  return NULL;
}

static void *pingpong_ito(void *arg) {
  (void)arg;
  for (int r = 0; r < ROUNDS; r++) {
    CHECK_EQ(ito_mutex_lock(&cm), 0);
    while (turn != 1) CHECK_EQ(ito_cond_wait(&cv, &cm), 0);
    turn = 0;
    rounds_ito++;
    CHECK_EQ(ito_cond_signal(&cv), 0);
    CHECK_EQ(ito_mutex_unlock(&cm), 0);
  }
  return NULL;
}

static void test_cond_pingpong(void) {
  ito_thread_t t;
  CHECK_EQ(ito_create(pingpong_ito, NULL, &t), 0);
  pthread_t pt = pspawn(pingpong_pt, NULL);
  pjoin(pt);
  CHECK_EQ(ito_join(t, NULL), 0);
  CHECK_EQ(rounds_pt, ROUNDS);
  CHECK_EQ(rounds_ito, ROUNDS);
  CHECK_EQ(turn, 0); /* the ito thread moved last */
}

/* One side is known to be blocked in ito_cond_wait before the other signals. */
typedef struct {
  ito_mutex_t m;
  ito_cond_t c;
  int waiting, flag;
} oneshot_t;

static void *oneshot_wait(void *p) {
  oneshot_t *s = p;
  CHECK_EQ(ito_mutex_lock(&s->m), 0);
  s->waiting = 1;
  while (!s->flag) CHECK_EQ(ito_cond_wait(&s->c, &s->m), 0);
  int f = s->flag;
  CHECK_EQ(ito_mutex_unlock(&s->m), 0);
  return iptr(f);
}

static void *oneshot_signal(void *p) {
  oneshot_t *s = p;
  for (;;) {
    CHECK_EQ(ito_mutex_lock(&s->m), 0);
    if (s->waiting) break;
    CHECK_EQ(ito_mutex_unlock(&s->m), 0);
    (void)ito_yield();
    sched_yield();
  }
  s->flag = 5;
  CHECK_EQ(ito_cond_signal(&s->c), 0);
  CHECK_EQ(ito_mutex_unlock(&s->m), 0);
  return NULL;
}

static void test_cond_oneshot(void) {
  /* ito thread signals a waiting pthread. */
  oneshot_t a = {ITO_MUTEX_INITIALIZER, ITO_COND_INITIALIZER, 0, 0};
  pthread_t w = pspawn(oneshot_wait, &a);
  ito_thread_t s;
  CHECK_EQ(ito_create(oneshot_signal, &a, &s), 0);
  CHECK_EQ((intptr_t)pjoin(w), 5);
  CHECK_EQ(ito_join(s, NULL), 0);
  /* pthread signals a waiting ito thread. */
  oneshot_t b = {ITO_MUTEX_INITIALIZER, ITO_COND_INITIALIZER, 0, 0};
  ito_thread_t w2;
  CHECK_EQ(ito_create(oneshot_wait, &b, &w2), 0);
  pjoin(pspawn(oneshot_signal, &b));
  void *r = NULL;
  CHECK_EQ(ito_join(w2, &r), 0);
  CHECK_EQ((intptr_t)r, 5);
}

/* ---- timed wait on a pthread ----------------------------------------------- */
static void *timedwait_pt(void *arg) {
  (void)arg;
  ito_mutex_t m = ITO_MUTEX_INITIALIZER;
  ito_cond_t c = ITO_COND_INITIALIZER;
  struct timespec deadline, now;
  CHECK_EQ(clock_gettime(CLOCK_REALTIME, &deadline), 0);
  deadline.tv_nsec += 100 * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  CHECK_EQ(ito_mutex_lock(&m), 0);
  int rc;
  do rc = ito_cond_timedwait(&c, &m, &deadline);
  while (rc == 0);
  CHECK_EQ(rc, ETIMEDOUT);
  CHECK_EQ(clock_gettime(CLOCK_REALTIME, &now), 0);
  CHECK(now.tv_sec > deadline.tv_sec ||
        (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec));
  CHECK_EQ(ito_mutex_unlock(&m), 0);
  return iptr(1);
}

/* ---- barrier across both kinds ------------------------------------------- */
enum { PHASES = 5 };
static ito_barrier_t bar;
static atomic_int serials[PHASES];

static void *barrier_fn(void *p) {
  for (int ph = 0; ph < PHASES; ph++) {
    int rc = ito_barrier_wait(&bar);
    if (rc == ITO_BARRIER_SERIAL_THREAD)
      atomic_fetch_add(&serials[ph], 1);
    else
      CHECK_EQ(rc, 0);
  }
  return p;
}

static void test_barrier(void) {
  CHECK_EQ(ito_barrier_init(&bar, 4), 0);
  pthread_t p1 = pspawn(barrier_fn, NULL), p2 = pspawn(barrier_fn, NULL);
  ito_thread_t t1, t2;
  CHECK_EQ(ito_create(barrier_fn, NULL, &t1), 0);
  CHECK_EQ(ito_create(barrier_fn, NULL, &t2), 0);
  pjoin(p1);
  pjoin(p2);
  CHECK_EQ(ito_join(t1, NULL), 0);
  CHECK_EQ(ito_join(t2, NULL), 0);
  for (int ph = 0; ph < PHASES; ph++) CHECK_EQ(atomic_load(&serials[ph]), 1);
  CHECK_EQ(ito_barrier_destroy(&bar), 0);
}

int main(void) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ((intptr_t)pjoin(pspawn(create_join_pt, NULL)), 1);
  test_mutex();
  test_cond_pingpong();
  test_cond_oneshot();
  CHECK_EQ((intptr_t)pjoin(pspawn(timedwait_pt, NULL)), 1);
  test_barrier();
  puts("test_nonworker: OK");
  return 0;
}
