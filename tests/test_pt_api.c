/* White-box tests of the runtime's private interface to libito-pthread.so
 * (src/dropin/ito_dropin.h): handles, creation with stack attributes, pinning, errno
 * kept across a park, tagged wait queues, sleeps on both clocks, the
 * context word read without a call. */
#define _GNU_SOURCE
#include "check.h"
#include "../src/dropin/ito_dropin.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static ito_mutex_t mu = ITO_MUTEX_INITIALIZER;
static ito_cond_t cv = ITO_COND_INITIALIZER;
static int flag;

static void *ret_arg(void *p) { return p; }

static void test_handles(void) {
  ito_thread_t t;
  CHECK_EQ(ito__dropin_create(&t, NULL, ret_arg, (void *)7), 0);
  CHECK((t >> 63) == 1); /* glibc's pthread_t never has bit 63 */
  CHECK_EQ(ito__dropin_check(t), 0);
  void *r = NULL;
  CHECK_EQ(ito_join(t, &r), 0);
  CHECK(r == (void *)7);
  CHECK_EQ(ito__dropin_check(t), ESRCH);                 /* stale */
  CHECK_EQ(ito__dropin_check(ito_self()), EINVAL);       /* the root cannot be joined */
  CHECK_EQ(ito__dropin_check(0x7f0000001000ULL), ESRCH); /* bit 63 clear: not ours */
  CHECK(ito__dropin_is_root());
}

static void *big_frame(void *p) {
  volatile char a[512 << 10];
  memset((char *)a, 1, sizeof a);
  (void)p;
  return (void *)(uintptr_t)a[sizeof a - 1];
}

static void *where(void *p) {
  int local;
  char *lo = p;
  void *slo;
  size_t ssz;
  CHECK_EQ(ito__dropin_stack(&slo, &ssz), 0);
  CHECK((char *)&local >= (char *)slo && (char *)&local < (char *)slo + ssz);
  return (void *)(uintptr_t)((char *)&local >= lo && (char *)&local < lo + (256 << 10));
}

static void *tryjoin_target(void *p) {
  (void)p;
  ito_mutex_lock(&mu);
  while (!flag) ito_cond_wait(&cv, &mu);
  ito_mutex_unlock(&mu);
  return (void *)3;
}

static void test_create_attrs(void) {
  /* a stack larger than the pool's */
  struct ito_dropin_attr a = {1u << 20, NULL, 0};
  ito_thread_t t;
  for (int round = 0; round < 3; round++) { /* the stack is reused after the first */
    CHECK_EQ(ito__dropin_create(&t, &a, big_frame, NULL), 0);
    void *r;
    CHECK_EQ(ito_join(t, &r), 0);
    CHECK(r == (void *)1);
  }
  /* the caller's memory */
  char *buf = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED);
  struct ito_dropin_attr u = {256 << 10, buf, 0};
  CHECK_EQ(ito__dropin_create(&t, &u, where, buf), 0);
  void *inside;
  CHECK_EQ(ito_join(t, &inside), 0);
  CHECK(inside == (void *)1);
  struct ito_dropin_attr tiny = {4096, buf, 0};
  CHECK_EQ(ito__dropin_create(&t, &tiny, where, buf), EINVAL);
  munmap(buf, 256 << 10);
  /* detached: a join is refused */
  struct ito_dropin_attr d = {0, NULL, 1};
  CHECK_EQ(ito__dropin_create(&t, &d, ret_arg, NULL), 0);
  CHECK(ito_join(t, NULL) != 0);
  /* tryjoin: EBUSY while it runs, then its result */
  flag = 0;
  CHECK_EQ(ito__dropin_create(&t, NULL, tryjoin_target, NULL), 0);
  CHECK_EQ(ito__dropin_tryjoin(t, NULL), EBUSY);
  ito_mutex_lock(&mu);
  flag = 1;
  ito_cond_signal(&cv);
  ito_mutex_unlock(&mu);
  void *r = NULL;
  while (ito__dropin_tryjoin(t, &r) == EBUSY) ito_yield();
  CHECK(r == (void *)3);
}

/* errno and pinning across waits */
static ito_mutex_t held = ITO_MUTEX_INITIALIZER;
static int pinned_worker_before, pinned_worker_after, pinned_tid_before, pinned_tid_after;

static void *pinned_waiter(void *p) {
  (void)p;
  ito__dropin_pin();
  ito__dropin_pin(); /* nests */
  CHECK(!ito__dropin_can_park());
  pinned_worker_before = ito_worker_id();
  pinned_tid_before = gettid();
  ito_mutex_lock(&held); /* blocks the worker, stays on this OS thread */
  ito_yield();           /* does nothing while pinned */
  pinned_worker_after = ito_worker_id();
  pinned_tid_after = gettid();
  ito_mutex_unlock(&held);
  ito__dropin_unpin();
  CHECK(!ito__dropin_can_park());
  ito__dropin_unpin();
  CHECK(ito__dropin_can_park());
  return NULL;
}

static void *hold_then_release(void *p) {
  ito_mutex_lock(&held);
  __atomic_store_n((int *)p, 1, __ATOMIC_RELEASE);
  struct timespec ms = {0, 30 * 1000000};
  nanosleep(&ms, NULL);
  ito_mutex_unlock(&held);
  return NULL;
}

/* errno is read and written through functions of their own: in one
 * function, gcc keeps errno's address (__errno_location is const) across
 * a call, and after the thread moved to another worker that address is the
 * old OS thread's errno (docs/dropin.md section 5, hazard (b)). */
__attribute__((noinline, noipa)) static int get_errno(void) { return errno; }
__attribute__((noinline, noipa)) static void set_errno(int e) { errno = e; }

static void *errno_waiter(void *p) {
  (void)p;
  set_errno(4321);
  ito_mutex_lock(&mu);
  __atomic_store_n(&flag, 1, __ATOMIC_RELEASE); /* also read without the mutex */
  while (flag != 2) ito_cond_wait(&cv, &mu);    /* parks; others set errno meanwhile */
  ito_mutex_unlock(&mu);
  return (void *)(intptr_t)get_errno();
}

static void *errno_clobber(void *p) {
  (void)p;
  set_errno(7);
  ito_mutex_lock(&mu);
  flag = 2;
  ito_cond_signal(&cv);
  ito_mutex_unlock(&mu);
  set_errno(8);
  return NULL;
}

static void test_errno_and_pin(void) {
  flag = 0;
  ito_thread_t a, b;
  CHECK_EQ(ito__dropin_create(&a, NULL, errno_waiter, NULL), 0);
  while (!__atomic_load_n(&flag, __ATOMIC_ACQUIRE)) ito_yield();
  set_errno(99);
  CHECK_EQ(ito__dropin_create(&b, NULL, errno_clobber, NULL), 0);
  void *r;
  CHECK_EQ(ito_join(a, &r), 0);
  CHECK_EQ((intptr_t)r, 4321);
  CHECK_EQ(ito_join(b, NULL), 0);

  /* the pinned thread blocks its worker, so the holder is a plain OS
   * thread (with one worker an ito thread could never run to unlock) */
  pthread_t holder;
  int holding = 0;
  CHECK_EQ(pthread_create(&holder, NULL, hold_then_release, &holding), 0);
  while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE)) ito_yield();
  CHECK_EQ(ito__dropin_create(&a, NULL, pinned_waiter, NULL), 0);
  CHECK_EQ(ito_join(a, NULL), 0);
  CHECK_EQ(pthread_join(holder, NULL), 0);
  CHECK_EQ(pinned_worker_before, pinned_worker_after);
  CHECK_EQ(pinned_tid_before, pinned_tid_after);
}

/* tagged wait queues: take_tag takes only the leading run of one tag */
static int qlock;
static void *qhead, *qtail;
static int woke[4];

static void *tagged(void *p) {
  intptr_t i = (intptr_t)p;
  ito__dropin_lock(&qlock, ITO_DROPIN_LR_QUEUE);
  CHECK_EQ(ito__dropin_wq_wait(&qlock, &qhead, &qtail, i == 2 ? 2 : 1, CLOCK_MONOTONIC, NULL, NULL,
                               NULL),
           0);
  __atomic_store_n(&woke[i], 1, __ATOMIC_RELEASE);
  return NULL;
}

static int queued(void) {
  int n = 0;
  ito__dropin_lock(&qlock, ITO_DROPIN_LR_QUEUE);
  for (void *w = qhead; w; w = *(void **)w) n++; /* a waiter starts with its link */
  ito__dropin_unlock(&qlock);
  return n;
}

static void test_tags(void) {
  ito_thread_t t[4];
  for (intptr_t i = 0; i < 4; i++) { /* tags 1 1 2 1 in this order */
    CHECK_EQ(ito__dropin_create(&t[i], NULL, tagged, (void *)i), 0);
    while (queued() != i + 1) ito_yield();
  }
  ito__dropin_lock(&qlock, ITO_DROPIN_LR_QUEUE);
  CHECK_EQ(ito__dropin_wq_head_tag(&qhead), 1);
  int n = 0;
  void *list = ito__dropin_wq_take_tag(&qhead, &qtail, 1, &n);
  CHECK_EQ(n, 2);
  CHECK_EQ(ito__dropin_wq_head_tag(&qhead), 2);
  ito__dropin_unlock(&qlock);
  ito__dropin_wq_wake(list);
  CHECK_EQ(ito_join(t[0], NULL), 0);
  CHECK_EQ(ito_join(t[1], NULL), 0);
  CHECK(!__atomic_load_n(&woke[2], __ATOMIC_ACQUIRE));
  ito__dropin_lock(&qlock, ITO_DROPIN_LR_QUEUE);
  list = ito__dropin_wq_take(&qhead, &qtail, -1);
  CHECK_EQ(ito__dropin_wq_head_tag(&qhead), -1);
  ito__dropin_unlock(&qlock);
  ito__dropin_wq_wake(list);
  CHECK_EQ(ito_join(t[2], NULL), 0);
  CHECK_EQ(ito_join(t[3], NULL), 0);
}

/* timeouts on both clocks, parked and on a plain OS thread: never early */
static void *timed(void *p) {
  clockid_t clk = (clockid_t)(intptr_t)p;
  struct timespec now, until;
  clock_gettime(clk, &until);
  until.tv_nsec += 30 * 1000000;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  int lock = 0;
  void *h = NULL, *tl = NULL;
  ito__dropin_lock(&lock, ITO_DROPIN_LR_QUEUE);
  CHECK_EQ(ito__dropin_wq_wait(&lock, &h, &tl, 0, clk, &until, NULL, NULL), ETIMEDOUT);
  clock_gettime(clk, &now);
  CHECK(now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec));
  CHECK(h == NULL && tl == NULL);
  clock_gettime(clk, &until);
  until.tv_nsec += 20 * 1000000;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  CHECK_EQ(ito__dropin_sleep_until(clk, &until), 0);
  clock_gettime(clk, &now);
  CHECK(now.tv_sec > until.tv_sec || (now.tv_sec == until.tv_sec && now.tv_nsec >= until.tv_nsec));
  return NULL;
}

static void *os_timed(void *p) { return timed(p); }

static void test_timeouts(void) {
  ito_thread_t a, b;
  CHECK_EQ(ito__dropin_create(&a, NULL, timed, (void *)(intptr_t)CLOCK_REALTIME), 0);
  CHECK_EQ(ito__dropin_create(&b, NULL, timed, (void *)(intptr_t)CLOCK_MONOTONIC), 0);
  CHECK_EQ(ito_join(a, NULL), 0);
  CHECK_EQ(ito_join(b, NULL), 0);
  pthread_t os;
  CHECK_EQ(pthread_create(&os, NULL, os_timed, (void *)(intptr_t)CLOCK_MONOTONIC), 0);
  CHECK_EQ(pthread_join(os, NULL), 0);
  struct timespec t = {0, 0};
  CHECK_EQ(ito__dropin_sleep_until(CLOCK_PROCESS_CPUTIME_ID, &t), EINVAL);
  t.tv_nsec = 1000000000L;
  CHECK_EQ(ito__dropin_sleep_until(CLOCK_MONOTONIC, &t), EINVAL);
}

/* ito_dropin_ctx_at agrees with ito__dropin_ctx: before the runtime
 * starts (NULL), on ito threads that move between workers (the word of the
 * stack running now, read afresh after each yield), and on a plain OS
 * thread (NULL). */
static struct ito_dropin_where ctx_where;
static void *ctx_mover(void *arg) {
  for (int i = 0; i < 200; i++) {
    void **a = ito__dropin_ctx(), **b = ito_dropin_ctx_at(&ctx_where);
    CHECK(a != NULL && a == b);
    *a = arg; /* this stack's word is this thread's own */
    ito_yield();
    CHECK(*ito_dropin_ctx_at(&ctx_where) == arg);
  }
  return NULL;
}
static void *ctx_os(void *arg) {
  (void)arg;
  return ito_dropin_ctx_at(&ctx_where) == NULL && ito__dropin_ctx() == NULL ? (void *)1 : NULL;
}
static void test_ctx_where(void) {
  ito_thread_t t[8];
  for (long i = 0; i < 8; i++) CHECK_EQ(ito_create(ctx_mover, (void *)(i + 1), &t[i]), 0);
  for (int i = 0; i < 8; i++) CHECK_EQ(ito_join(t[i], NULL), 0);
  pthread_t p;
  void *r = NULL;
  CHECK_EQ(pthread_create(&p, NULL, ctx_os, NULL), 0);
  CHECK_EQ(pthread_join(p, &r), 0);
  CHECK(r == (void *)1);
}

int main(void) {
  ito__dropin_ctx_where(&ctx_where);
  CHECK(ito_dropin_ctx_at(&ctx_where) == NULL); /* the runtime has not started */
  CHECK_EQ(ito_init(), 0);
  test_handles();
  test_create_attrs();
  test_errno_and_pin();
  test_tags();
  test_timeouts();
  test_ctx_where();
  CHECK_EQ(ito__dropin_live(), 0);
  printf("pt_api: all passed (%lu threads made through ito__dropin_create)\n",
         ito__dropin_created());
  return 0;
}
