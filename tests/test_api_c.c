/* Every function of the C API (ito.h), with ITO_NUM_WORKERS=3.
 * "test_api_c yield" runs only the yield ping-pong (registered with
 * ITO_NUM_WORKERS=1, where it only terminates if ito_yield really switches). */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define NW 3

static void *iptr(intptr_t v) { return (void *)v; }

/* Waits without assuming the caller is (or is not) an ito thread. */
static void relax(void) {
  (void)ito_yield();
  sched_yield();
}

static ito_thread_t spawn(void *(*fn)(void *), void *arg) {
  ito_thread_t t = 0;
  CHECK_EQ(ito_create(fn, arg, &t), 0);
  CHECK(t != 0);
  return t;
}

static intptr_t join(ito_thread_t t) {
  void *r = iptr(-12345);
  CHECK_EQ(ito_join(t, &r), 0);
  return (intptr_t)r;
}

/* ---- runtime ---------------------------------------------------------- */
static void test_init(int workers) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_init(), 0); /* a second init is harmless */
  CHECK_EQ(ito_num_workers(), workers);
}

/* ---- create / join / self / worker_id ----------------------------------- */
typedef struct {
  int in, out, worker;
  ito_thread_t self;
} work_t;

static void *square_fn(void *p) {
  work_t *w = p;
  w->worker = ito_worker_id();
  w->self = ito_self();
  w->out = w->in * w->in;
  return iptr(w->in + 1000);
}

static void test_create_join(void) {
  enum { N = 64 };
  work_t w[N];
  ito_thread_t t[N];
  for (int i = 0; i < N; i++) {
    w[i].in = i;
    w[i].out = -1;
    w[i].worker = -2;
    w[i].self = 0;
    t[i] = spawn(square_fn, &w[i]);
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < i; j++) CHECK(t[i] != t[j]);
  for (int i = 0; i < N; i++) {
    CHECK_EQ(join(t[i]), i + 1000);
    CHECK_EQ(w[i].out, i * i);
    CHECK(w[i].worker >= 0 && w[i].worker < NW);
    CHECK(w[i].self != 0);
    CHECK(w[i].self == t[i]);
  }
  /* Joining an already-joined thread. */
  void *r = NULL;
  CHECK_EQ(ito_join(t[0], &r), EINVAL);
  CHECK_EQ(ito_join(t[N - 1], &r), EINVAL);
  /* A NULL result pointer is accepted. */
  work_t one = {5, 0, 0, 0};
  CHECK_EQ(ito_join(spawn(square_fn, &one), NULL), 0);
  CHECK_EQ(one.out, 25);
}

/* ---- plain pthread: not a worker, not an ito thread ---------------------- */
static void *plain_fn(void *p) {
  int *res = p;
  res[0] = ito_worker_id();
  res[1] = ito_self() == 0;
  return NULL;
}

static void test_plain_pthread(void) {
  int res[2] = {99, 0};
  pthread_t pt;
  CHECK_EQ(pthread_create(&pt, NULL, plain_fn, res), 0);
  CHECK_EQ(pthread_join(pt, NULL), 0);
  CHECK_EQ(res[0], -1);
  CHECK_EQ(res[1], 1);
}

/* ---- detach ----------------------------------------------------------- */
static atomic_int detach_go, detach_ran;

static void *detached_fn(void *p) {
  (void)p;
  while (!atomic_load(&detach_go)) relax();
  atomic_store(&detach_ran, 1);
  return NULL;
}

static void test_detach(void) {
  ito_thread_t t = spawn(detached_fn, NULL);
  CHECK_EQ(ito_detach(t), 0);
  CHECK_EQ(ito_join(t, NULL), EINVAL); /* detached, still running */
  atomic_store(&detach_go, 1);
  while (!atomic_load(&detach_ran)) relax();
  CHECK_EQ(ito_join(t, NULL), EINVAL); /* detached, finished (or finishing) */
}

/* ---- exit ------------------------------------------------------------- */
static void exit_helper(int v) { ito_exit(iptr(v)); }

static void *exit_fn(void *p) {
  exit_helper(77);
  *(int *)p = 1; /* never reached */
  return iptr(1);
}

static void test_exit(void) {
  int after = 0;
  CHECK_EQ(join(spawn(exit_fn, &after)), 77);
  CHECK_EQ(after, 0);
}

/* ---- yield ping-pong --------------------------------------------------- */
enum { PP_ROUNDS = 2000 };
static atomic_int pp_counter;

static void *pingpong_fn(void *arg) {
  int parity = (int)(intptr_t)arg;
  long yields = 0;
  for (int round = 0; round < PP_ROUNDS; round++) {
    while ((atomic_load(&pp_counter) & 1) != parity) {
      CHECK_EQ(ito_yield(), 0);
      yields++;
      CHECK(yields < 100000000L);
    }
    atomic_fetch_add(&pp_counter, 1);
  }
  return iptr(yields);
}

static void test_yield(void) {
  atomic_store(&pp_counter, 0);
  ito_thread_t a = spawn(pingpong_fn, iptr(0));
  ito_thread_t b = spawn(pingpong_fn, iptr(1));
  intptr_t ya = join(a), yb = join(b);
  CHECK_EQ(atomic_load(&pp_counter), 2 * PP_ROUNDS);
  /* Each side had to wait for the other at least once per round (except
   * possibly the very first), so yields really happened. */
  CHECK(ya + yb >= PP_ROUNDS);
}

/* A thread yielding in a loop must not starve a thread sleeping on a timer
 * (on one worker the yielder is always ready). */
static atomic_int sleeper_done;
static void *sleeper_fn(void *p) {
  struct timespec d = {0, 10 * 1000 * 1000};
  CHECK_EQ(ito_nanosleep(&d), 0);
  atomic_store(&sleeper_done, 1);
  return p;
}

static void test_yield_sleeper(void) {
  atomic_store(&sleeper_done, 0);
  ito_thread_t t = spawn(sleeper_fn, NULL);
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long yields = 0;
  while (!atomic_load(&sleeper_done)) {
    CHECK_EQ(ito_yield(), 0);
    yields++;
    clock_gettime(CLOCK_MONOTONIC, &now);
    CHECK(now.tv_sec - t0.tv_sec < 60); /* the sleeper never ran: starved (a generous bound) */
  }
  join(t);
  CHECK(yields > 0);
}

/* ---- mutex ------------------------------------------------------------ */
static ito_mutex_t static_mu = ITO_MUTEX_INITIALIZER;
static long static_counter;

static void *inc_static_fn(void *p) {
  (void)p;
  for (int i = 0; i < 10000; i++) {
    CHECK_EQ(ito_mutex_lock(&static_mu), 0);
    long v = static_counter;
    if (i % 500 == 0) CHECK_EQ(ito_yield(), 0); /* hold it across a switch */
    static_counter = v + 1;
    CHECK_EQ(ito_mutex_unlock(&static_mu), 0);
  }
  return NULL;
}

static void *trylock_fn(void *p) {
  ito_mutex_t *m = p;
  int rc = ito_mutex_trylock(m);
  if (rc == 0) CHECK_EQ(ito_mutex_unlock(m), 0);
  return iptr(rc);
}

static void *mutex_main_fn(void *p) {
  (void)p;
  ito_mutex_t m;
  CHECK_EQ(ito_mutex_init(&m), 0);
  CHECK_EQ(ito_mutex_lock(&m), 0);
  CHECK_EQ(join(spawn(trylock_fn, &m)), EBUSY);
  CHECK_EQ(ito_mutex_trylock(&m), EBUSY); /* not recursive */
  CHECK_EQ(ito_mutex_unlock(&m), 0);
  CHECK_EQ(join(spawn(trylock_fn, &m)), 0);
  CHECK_EQ(ito_mutex_trylock(&m), 0);
  CHECK_EQ(ito_mutex_unlock(&m), 0);
  CHECK_EQ(ito_mutex_destroy(&m), 0);
  return NULL;
}

static void test_mutex(void) {
  join(spawn(mutex_main_fn, NULL));
  enum { T = 8 };
  ito_thread_t t[T];
  for (int i = 0; i < T; i++) t[i] = spawn(inc_static_fn, NULL);
  for (int i = 0; i < T; i++) join(t[i]);
  CHECK_EQ(static_counter, T * 10000L);
}

/* ---- condition variables ---------------------------------------------- */
typedef struct {
  ito_mutex_t m;
  ito_cond_t c, all_waiting;
  int flag, waiting, woken;
} cv_t;

static void *cv_waiter_fn(void *p) {
  cv_t *s = p;
  CHECK_EQ(ito_mutex_lock(&s->m), 0);
  s->waiting++;
  CHECK_EQ(ito_cond_signal(&s->all_waiting), 0);
  while (!s->flag) CHECK_EQ(ito_cond_wait(&s->c, &s->m), 0);
  int seen = s->flag;
  s->woken++;
  CHECK_EQ(ito_mutex_unlock(&s->m), 0);
  return iptr(seen);
}

/* Waits for n waiters, then sets flag and signals or broadcasts. */
typedef struct {
  cv_t *s;
  int n, broadcast;
} cv_ctl_t;

static void *cv_signaler_fn(void *p) {
  cv_ctl_t *ctl = p;
  cv_t *s = ctl->s;
  CHECK_EQ(ito_mutex_lock(&s->m), 0);
  while (s->waiting < ctl->n) CHECK_EQ(ito_cond_wait(&s->all_waiting, &s->m), 0);
  s->flag = 42;
  if (ctl->broadcast)
    CHECK_EQ(ito_cond_broadcast(&s->c), 0);
  else /* each signal wakes one of the n blocked waiters */
    for (int i = 0; i < ctl->n; i++) CHECK_EQ(ito_cond_signal(&s->c), 0);
  CHECK_EQ(ito_mutex_unlock(&s->m), 0);
  return NULL;
}

static void cv_init(cv_t *s) {
  memset(s, 0, sizeof *s);
  CHECK_EQ(ito_mutex_init(&s->m), 0);
  CHECK_EQ(ito_cond_init(&s->c), 0);
  CHECK_EQ(ito_cond_init(&s->all_waiting), 0);
}

static void cv_destroy(cv_t *s) {
  CHECK_EQ(ito_cond_destroy(&s->c), 0);
  CHECK_EQ(ito_cond_destroy(&s->all_waiting), 0);
  CHECK_EQ(ito_mutex_destroy(&s->m), 0);
}

static void run_cv(int n, int broadcast) {
  cv_t s;
  cv_init(&s);
  cv_ctl_t ctl = {&s, n, broadcast};
  ito_thread_t w[8];
  for (int i = 0; i < n; i++) w[i] = spawn(cv_waiter_fn, &s);
  ito_thread_t sig = spawn(cv_signaler_fn, &ctl);
  for (int i = 0; i < n; i++) CHECK_EQ(join(w[i]), 42);
  join(sig);
  CHECK_EQ(s.woken, n);
  cv_destroy(&s);
}

static struct timespec now_rt(void) {
  struct timespec ts;
  CHECK_EQ(clock_gettime(CLOCK_REALTIME, &ts), 0);
  return ts;
}

static struct timespec ts_add_ms(struct timespec t, long ms) {
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

static int ts_ge(struct timespec a, struct timespec b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

static void *timedwait_timeout_fn(void *p) {
  (void)p;
  ito_mutex_t m = ITO_MUTEX_INITIALIZER;
  ito_cond_t c = ITO_COND_INITIALIZER;
  CHECK_EQ(ito_mutex_lock(&m), 0);
  struct timespec deadline = ts_add_ms(now_rt(), 200);
  int rc;
  do rc = ito_cond_timedwait(&c, &m, &deadline);
  while (rc == 0); /* spurious wakeups are allowed */
  CHECK_EQ(rc, ETIMEDOUT);
  CHECK(ts_ge(now_rt(), deadline));
  CHECK_EQ(ito_mutex_trylock(&m), EBUSY); /* reacquired on return */
  /* A deadline in the past times out at once. */
  struct timespec past = ts_add_ms(now_rt(), -1000);
  past.tv_sec -= 1;
  CHECK_EQ(ito_cond_timedwait(&c, &m, &past), ETIMEDOUT);
  CHECK_EQ(ito_mutex_unlock(&m), 0);
  return NULL;
}

static void *timedwait_signaled_fn(void *p) {
  cv_t *s = p;
  CHECK_EQ(ito_mutex_lock(&s->m), 0);
  s->waiting++;
  CHECK_EQ(ito_cond_signal(&s->all_waiting), 0);
  struct timespec deadline = ts_add_ms(now_rt(), 30000);
  int rc = 0;
  while (!s->flag && rc == 0) rc = ito_cond_timedwait(&s->c, &s->m, &deadline);
  CHECK_EQ(rc, 0);
  int seen = s->flag;
  CHECK_EQ(ito_mutex_unlock(&s->m), 0);
  return iptr(seen);
}

static void test_cond(void) {
  run_cv(1, 0);
  run_cv(3, 0);
  run_cv(6, 1);
  join(spawn(timedwait_timeout_fn, NULL));

  cv_t s;
  cv_init(&s);
  cv_ctl_t ctl = {&s, 1, 0};
  ito_thread_t w = spawn(timedwait_signaled_fn, &s);
  join(spawn(cv_signaler_fn, &ctl));
  CHECK_EQ(join(w), 42);
  cv_destroy(&s);
}

/* ---- clock waits and sleeping ----------------------------------------- */
static struct timespec now_mono(void) {
  struct timespec ts;
  CHECK_EQ(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
  return ts;
}

/* Timed waits on both clocks time out no earlier than their deadlines; other
 * clocks and a missing deadline are EINVAL. Run on an ito thread and on a
 * plain pthread (which waits in the kernel instead of on a timer). */
static void *clockwait_fn(void *p) {
  (void)p;
  ito_mutex_t m = ITO_MUTEX_INITIALIZER;
  ito_cond_t c = ITO_COND_INITIALIZER;
  CHECK_EQ(ito_mutex_lock(&m), 0);
  struct timespec dm = ts_add_ms(now_mono(), 100);
  int rc;
  do rc = ito_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &dm);
  while (rc == 0);
  CHECK_EQ(rc, ETIMEDOUT);
  CHECK(ts_ge(now_mono(), dm));
  CHECK_EQ(ito_mutex_trylock(&m), EBUSY);
  struct timespec dr = ts_add_ms(now_rt(), 50);
  do rc = ito_cond_clockwait(&c, &m, CLOCK_REALTIME, &dr);
  while (rc == 0);
  CHECK_EQ(rc, ETIMEDOUT);
  CHECK(ts_ge(now_rt(), dr));
  CHECK_EQ(ito_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &dm), EINVAL);
  CHECK_EQ(ito_cond_clockwait(&c, &m, CLOCK_MONOTONIC, NULL), EINVAL);
  CHECK_EQ(ito_mutex_unlock(&m), 0);
  return NULL;
}

static void *nanosleep_fn(void *p) {
  (void)p;
  struct timespec bad = {0, 1000000000L}, neg = {-1, 0};
  CHECK_EQ(ito_nanosleep(NULL), EINVAL);
  CHECK_EQ(ito_nanosleep(&bad), EINVAL);
  CHECK_EQ(ito_nanosleep(&neg), EINVAL);
  struct timespec t0 = now_mono(), d = {0, 30 * 1000000L};
  CHECK_EQ(ito_nanosleep(&d), 0);
  CHECK(ts_ge(now_mono(), ts_add_ms(t0, 30)));
  struct timespec zero = {0, 0};
  CHECK_EQ(ito_nanosleep(&zero), 0);
  return NULL;
}

static void test_clock_and_sleep(void) {
  join(spawn(clockwait_fn, NULL));
  join(spawn(nanosleep_fn, NULL));
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, clockwait_fn, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(pthread_create(&t, NULL, nanosleep_fn, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
}

/* With ONE worker: a thread in ito_nanosleep leaves the worker to others.
 * The sleeper checks on waking that a thread created after it went to
 * sleep has already run to the end; that needs the worker, so it shows the
 * worker did not sleep with the thread. */
static atomic_int ran_while_asleep, sleeper_asleep;
static void *long_sleeper_fn(void *p) {
  (void)p;
  atomic_store(&sleeper_asleep, 1);
  struct timespec d = {0, 300 * 1000000L};
  CHECK_EQ(ito_nanosleep(&d), 0);
  CHECK_EQ(atomic_load(&ran_while_asleep), 1);
  return NULL;
}
static void *while_asleep_fn(void *p) {
  (void)p;
  while (!atomic_load(&sleeper_asleep)) CHECK_EQ(ito_yield(), 0); /* let the sleeper go */
  atomic_store(&ran_while_asleep, 1);
  return NULL;
}
static void test_sleep_frees_worker(void) {
  ito_thread_t s = spawn(long_sleeper_fn, NULL); /* runs first, then sleeps */
  CHECK_EQ(atomic_load(&sleeper_asleep), 1);
  join(spawn(while_asleep_fn, NULL));
  join(s);
  /* the root (the program's main thread) sleeps the same way */
  atomic_store(&ran_while_asleep, 0);
  atomic_store(&sleeper_asleep, 0);
  ito_thread_t b = spawn(while_asleep_fn, NULL); /* yields until we sleep */
  atomic_store(&sleeper_asleep, 1);
  struct timespec d = {0, 300 * 1000000L};
  CHECK_EQ(ito_nanosleep(&d), 0);
  CHECK_EQ(atomic_load(&ran_while_asleep), 1);
  join(b);
}

/* ---- barrier ---------------------------------------------------------- */
enum { B_THREADS = 5, B_PHASES = 8 };
static ito_barrier_t bar;
static atomic_int arrived[B_PHASES], serials[B_PHASES];

static void *barrier_fn(void *p) {
  (void)p;
  for (int ph = 0; ph < B_PHASES; ph++) {
    atomic_fetch_add(&arrived[ph], 1);
    int rc = ito_barrier_wait(&bar);
    if (rc == ITO_BARRIER_SERIAL_THREAD)
      atomic_fetch_add(&serials[ph], 1);
    else
      CHECK_EQ(rc, 0);
    /* Nobody leaves a phase before everybody has arrived. */
    CHECK_EQ(atomic_load(&arrived[ph]), B_THREADS);
  }
  return NULL;
}

static void test_barrier(void) {
  CHECK_EQ(ito_barrier_init(&bar, B_THREADS), 0);
  ito_thread_t t[B_THREADS];
  for (int i = 0; i < B_THREADS; i++) t[i] = spawn(barrier_fn, NULL);
  for (int i = 0; i < B_THREADS; i++) join(t[i]);
  for (int ph = 0; ph < B_PHASES; ph++) {
    CHECK_EQ(atomic_load(&arrived[ph]), B_THREADS);
    CHECK_EQ(atomic_load(&serials[ph]), 1);
  }
  CHECK_EQ(ito_barrier_destroy(&bar), 0);
}

/* ---- keys ------------------------------------------------------------- */
enum { K_THREADS = 12 };
static ito_key_t key_a, key_b;
static int slots_a[K_THREADS], slots_b[K_THREADS];
static atomic_int dtor_a_calls, dtor_a_sum, dtor_b_calls;

static void dtor_a(void *v) {
  CHECK(v != NULL);
  atomic_fetch_add(&dtor_a_calls, 1);
  atomic_fetch_add(&dtor_a_sum, *(int *)v);
}
static void dtor_b(void *v) {
  CHECK(v != NULL);
  atomic_fetch_add(&dtor_b_calls, 1);
}

static void *key_fn(void *p) {
  int i = (int)(intptr_t)p;
  CHECK(ito_getspecific(key_a) == NULL);
  CHECK(ito_key_getspecific(key_b) == NULL);
  slots_a[i] = i + 1;
  CHECK_EQ(ito_setspecific(key_a, &slots_a[i]), 0);
  if (i % 2 == 0) CHECK_EQ(ito_key_setspecific(key_b, &slots_b[i]), 0);
  for (int k = 0; k < 5; k++) {
    CHECK_EQ(ito_yield(), 0); /* other threads set their own values meanwhile */
    CHECK(ito_getspecific(key_a) == &slots_a[i]);
    CHECK(ito_getspecific(key_b) == (i % 2 == 0 ? (void *)&slots_b[i] : NULL));
  }
  if (i == 0) ito_exit(NULL); /* destructors also run on ito_exit */
  return NULL;
}

static void test_keys(void) {
  CHECK_EQ(ito_key_create(&key_a, dtor_a), 0);
  CHECK_EQ(ito_key_create(&key_b, dtor_b), 0);
  CHECK(key_a != key_b);
  ito_thread_t t[K_THREADS];
  for (int i = 0; i < K_THREADS; i++) t[i] = spawn(key_fn, iptr(i));
  for (int i = 0; i < K_THREADS; i++) join(t[i]);
  CHECK_EQ(atomic_load(&dtor_a_calls), K_THREADS);
  CHECK_EQ(atomic_load(&dtor_a_sum), K_THREADS * (K_THREADS + 1) / 2);
  CHECK_EQ(atomic_load(&dtor_b_calls), (K_THREADS + 1) / 2);
  CHECK_EQ(ito_key_delete(key_a), 0);
  CHECK_EQ(ito_key_delete(key_b), 0);
}

static void *key_exhaust_fn(void *p) {
  (void)p;
  static ito_key_t keys[ITO_KEYS_MAX + 8];
  int n = 0, rc = 0;
  while (n < ITO_KEYS_MAX + 8 && (rc = ito_key_create(&keys[n], NULL)) == 0) n++;
  CHECK_EQ(rc, EAGAIN);
  /* Deleted keys are reusable, so all ITO_KEYS_MAX are available again
   * (the two deleted in test_keys included). */
  CHECK_EQ(n, ITO_KEYS_MAX);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) CHECK(keys[i] != keys[j]);
  /* The keys work: set and get the last one. */
  CHECK_EQ(ito_setspecific(keys[n - 1], &n), 0);
  CHECK(ito_getspecific(keys[n - 1]) == &n);
  CHECK_EQ(ito_setspecific(keys[n - 1], NULL), 0);
  CHECK_EQ(ito_key_delete(keys[0]), 0);
  ito_key_t again;
  CHECK_EQ(ito_key_create(&again, NULL), 0);
  CHECK_EQ(ito_key_create(&keys[0], NULL), EAGAIN);
  CHECK_EQ(ito_key_delete(again), 0);
  for (int i = 1; i < n; i++) CHECK_EQ(ito_key_delete(keys[i]), 0);
  return NULL;
}

/* "finalize": ito_finalize waits for every thread, even while threads
 * that create threads end on other workers as it counts (the count is
 * exact, docs/scheduler.md "Counting threads"). Each round: a detached
 * chain of threads, each creating the next and ending at once, the last
 * one marking the round done; the root finalizes right away. */
static int chain_done;

static void *chain_link(void *p) {
  long left = (long)(intptr_t)p;
  if (left == 0) {
    for (volatile int i = 0; i < 2000; i++) {
    }
    __atomic_store_n(&chain_done, 1, __ATOMIC_RELEASE);
    return NULL;
  }
  ito_thread_t t;
  CHECK_EQ(ito_create(chain_link, (void *)(intptr_t)(left - 1), &t), 0);
  CHECK_EQ(ito_detach(t), 0);
  if (left % 2) ito_yield(); /* move now and then */
  return NULL;
}

static void test_finalize_waits(int rounds) {
  for (int r = 0; r < rounds; r++) {
    CHECK_EQ(ito_init(), 0);
    __atomic_store_n(&chain_done, 0, __ATOMIC_RELAXED);
    ito_thread_t t;
    CHECK_EQ(ito_create(chain_link, (void *)(intptr_t)(1 + r % 16), &t), 0);
    CHECK_EQ(ito_detach(t), 0);
    CHECK_EQ(ito_finalize(), 0);
    CHECK_EQ(__atomic_load_n(&chain_done, __ATOMIC_ACQUIRE), 1);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "finalize") == 0) {
    test_finalize_waits(argc > 2 ? atoi(argv[2]) : 500);
    puts("test_api_c finalize: OK");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "yield") == 0) {
    test_init(1);
    test_yield();
    test_yield_sleeper();
    CHECK_EQ(ito_finalize(), 0);
    puts("test_api_c yield: OK");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
    test_init(1);
    test_sleep_frees_worker();
    CHECK_EQ(ito_finalize(), 0);
    puts("test_api_c sleep: OK");
    return 0;
  }
  test_init(NW);
  test_create_join();
  test_plain_pthread();
  test_detach();
  test_exit();
  test_yield();
  test_yield_sleeper();
  test_mutex();
  test_cond();
  test_clock_and_sleep();
  test_barrier();
  test_keys();
  join(spawn(key_exhaust_fn, NULL));
  CHECK_EQ(ito_finalize(), 0);
  puts("test_api_c: OK");
  return 0;
}
