/* Drop-in test: a thread pool with a task queue, then the mutex kinds and
 * their error codes.
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DROPIN_PROG "pool"
#include "dropin.h"

/* This test unlocks mutexes it does not hold, on purpose (EPERM). */
#if defined(__SANITIZE_THREAD__)
#define POOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POOL_TSAN 1
#endif
#endif
#ifdef POOL_TSAN
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "report_mutex_bugs=0"; }
#endif

#define WORKERS 8
#define TASKS 100000L

/* Checks that `rc` is `want` and prints "label: NAME". */
static void expect(const char *label, int rc, int want) {
  if (rc != want) FAIL("%s gave %s, expected %s", label, code_name(rc), code_name(want));
  printf("%s: %s\n", label, code_name(rc));
}

/* ---- the pool. The three statically initialised kinds are used under
 * contention here: the queue's mutex is a normal one, the sum's an
 * error-checking one, and every task takes a recursive one twice. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static long queue[TASKS];
static long queue_head, queue_tail;
static int shutting_down;

static pthread_mutex_t sum_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static long long task_sum;

static pthread_mutex_t nest_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static long nest_count;

static void run_task(long index) {
  must("task: lock the error-checking sum mutex", pthread_mutex_lock(&sum_lock));
  task_sum += index;
  must("task: unlock the error-checking sum mutex", pthread_mutex_unlock(&sum_lock));

  must("task: lock the recursive mutex", pthread_mutex_lock(&nest_lock));
  must("task: lock the recursive mutex again", pthread_mutex_lock(&nest_lock));
  nest_count++;
  must("task: unlock the recursive mutex", pthread_mutex_unlock(&nest_lock));
  must("task: unlock the recursive mutex again", pthread_mutex_unlock(&nest_lock));
}

static void *worker(void *arg) {
  long *ran = arg;
  for (;;) {
    pthread_mutex_lock(&queue_lock);
    while (queue_head == queue_tail && !shutting_down) pthread_cond_wait(&queue_cond, &queue_lock);
    if (queue_head == queue_tail) {
      pthread_mutex_unlock(&queue_lock);
      return NULL;
    }
    long index = queue[queue_head++];
    pthread_mutex_unlock(&queue_lock);
    run_task(index);
    ++*ran;
  }
}

static void run_pool(void) {
  pthread_t threads[WORKERS];
  long ran[WORKERS] = {0};
  for (int i = 0; i < WORKERS; i++)
    must("pthread_create", pthread_create(&threads[i], NULL, worker, &ran[i]));
  for (long i = 0; i < TASKS; i++) {
    pthread_mutex_lock(&queue_lock);
    queue[queue_tail++] = i;
    pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
  }
  pthread_mutex_lock(&queue_lock);
  shutting_down = 1;
  pthread_cond_broadcast(&queue_cond);
  pthread_mutex_unlock(&queue_lock);
  long total = 0;
  for (int i = 0; i < WORKERS; i++) {
    must("pthread_join", pthread_join(threads[i], NULL));
    total += ran[i];
  }
  long long expect_sum = (long long)TASKS * (TASKS - 1) / 2;
  if (total != TASKS) FAIL("the workers ran %ld tasks, expected %ld", total, TASKS);
  if (task_sum != expect_sum) FAIL("task sum %lld, expected %lld", task_sum, expect_sum);
  if (nest_count != TASKS) FAIL("recursive-mutex count %ld, expected %ld", nest_count, TASKS);
  printf("pool: %d workers ran %ld tasks, sum %lld, recursive count %ld\n", WORKERS, total,
         task_sum, nest_count);
}

/* ---- one call made by another thread, on a mutex the caller may hold */
enum op { OP_TRYLOCK, OP_UNLOCK, OP_TIMEDLOCK, OP_CLOCKLOCK };

struct call {
  pthread_mutex_t *m;
  enum op op;
  int rc;
};

static void *do_call(void *arg) {
  struct call *c = arg;
  struct timespec deadline, now;
  switch (c->op) {
    case OP_TRYLOCK:
      c->rc = pthread_mutex_trylock(c->m);
      if (c->rc == 0) pthread_mutex_unlock(c->m);
      break;
    case OP_UNLOCK:
      c->rc = pthread_mutex_unlock(c->m);
      break;
    case OP_TIMEDLOCK:
      deadline_in(CLOCK_REALTIME, 50, &deadline);
      c->rc = pthread_mutex_timedlock(c->m, &deadline);
      clock_gettime(CLOCK_REALTIME, &now);
      if (c->rc == 0) pthread_mutex_unlock(c->m);
      if (c->rc == ETIMEDOUT && ts_before(&now, &deadline))
        FAIL("pthread_mutex_timedlock returned ETIMEDOUT before its deadline");
      break;
    case OP_CLOCKLOCK:
      deadline_in(CLOCK_MONOTONIC, 50, &deadline);
      c->rc = pthread_mutex_clocklock(c->m, CLOCK_MONOTONIC, &deadline);
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (c->rc == 0) pthread_mutex_unlock(c->m);
      if (c->rc == ETIMEDOUT && ts_before(&now, &deadline))
        FAIL("pthread_mutex_clocklock returned ETIMEDOUT before its deadline");
      break;
  }
  return NULL;
}

static int in_other_thread(pthread_mutex_t *m, enum op op) {
  struct call c = {m, op, -1};
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, do_call, &c));
  must("pthread_join", pthread_join(t, NULL));
  return c.rc;
}

static void init_kind(pthread_mutex_t *m, int kind) {
  pthread_mutexattr_t a;
  must("pthread_mutexattr_init", pthread_mutexattr_init(&a));
  must("pthread_mutexattr_settype", pthread_mutexattr_settype(&a, kind));
  int got = -1;
  must("pthread_mutexattr_gettype", pthread_mutexattr_gettype(&a, &got));
  if (got != kind) FAIL("pthread_mutexattr_gettype gave %d, expected %d", got, kind);
  must("pthread_mutex_init", pthread_mutex_init(m, &a));
  must("pthread_mutexattr_destroy", pthread_mutexattr_destroy(&a));
}

static void mutex_kinds(void) {
  pthread_mutex_t m;

  /* Normal (default attributes). */
  must("pthread_mutex_init", pthread_mutex_init(&m, NULL));
  must("normal: lock", pthread_mutex_lock(&m));
  expect("normal: trylock from another thread", in_other_thread(&m, OP_TRYLOCK), EBUSY);
  expect("normal: timedlock from another thread", in_other_thread(&m, OP_TIMEDLOCK), ETIMEDOUT);
  expect("normal: clocklock (CLOCK_MONOTONIC) from another thread",
         in_other_thread(&m, OP_CLOCKLOCK), ETIMEDOUT);
  expect("normal: trylock by the owner", pthread_mutex_trylock(&m), EBUSY);
  must("normal: unlock", pthread_mutex_unlock(&m));
  expect("normal: trylock from another thread after unlock", in_other_thread(&m, OP_TRYLOCK), 0);
  must("pthread_mutex_destroy", pthread_mutex_destroy(&m));

  /* Recursive. */
  init_kind(&m, PTHREAD_MUTEX_RECURSIVE);
  for (int i = 1; i <= 3; i++) {
    char label[64];
    snprintf(label, sizeof label, "recursive: lock %d", i);
    expect(label, pthread_mutex_lock(&m), 0);
  }
  expect("recursive: trylock by the owner", pthread_mutex_trylock(&m), 0);
  must("recursive: unlock the trylock", pthread_mutex_unlock(&m));
  expect("recursive: trylock from another thread", in_other_thread(&m, OP_TRYLOCK), EBUSY);
  expect("recursive: unlock from another thread", in_other_thread(&m, OP_UNLOCK), EPERM);
  expect("recursive: timedlock from another thread", in_other_thread(&m, OP_TIMEDLOCK), ETIMEDOUT);
  for (int i = 1; i <= 3; i++) {
    char label[64];
    snprintf(label, sizeof label, "recursive: unlock %d", i);
    expect(label, pthread_mutex_unlock(&m), 0);
    if (i < 3)
      expect("recursive: trylock from another thread", in_other_thread(&m, OP_TRYLOCK), EBUSY);
  }
  expect("recursive: trylock from another thread after 3 unlocks", in_other_thread(&m, OP_TRYLOCK),
         0);
  expect("recursive: unlock when unlocked", pthread_mutex_unlock(&m), EPERM);
  must("pthread_mutex_destroy", pthread_mutex_destroy(&m));

  /* Error-checking. */
  init_kind(&m, PTHREAD_MUTEX_ERRORCHECK);
  expect("errorcheck: lock", pthread_mutex_lock(&m), 0);
  expect("errorcheck: relock by the owner", pthread_mutex_lock(&m), EDEADLK);
  expect("errorcheck: trylock by the owner", pthread_mutex_trylock(&m), EBUSY);
  expect("errorcheck: unlock from another thread", in_other_thread(&m, OP_UNLOCK), EPERM);
  expect("errorcheck: trylock from another thread", in_other_thread(&m, OP_TRYLOCK), EBUSY);
  expect("errorcheck: timedlock from another thread", in_other_thread(&m, OP_TIMEDLOCK), ETIMEDOUT);
  expect("errorcheck: unlock", pthread_mutex_unlock(&m), 0);
  expect("errorcheck: unlock when unlocked", pthread_mutex_unlock(&m), EPERM);
  expect("errorcheck: trylock from another thread after unlock", in_other_thread(&m, OP_TRYLOCK),
         0);
  must("pthread_mutex_destroy", pthread_mutex_destroy(&m));
}

/* The static initialisers, on fresh objects. */
static pthread_mutex_t s_normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t s_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t s_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

static void static_initialisers(void) {
  expect("PTHREAD_MUTEX_INITIALIZER: lock", pthread_mutex_lock(&s_normal), 0);
  expect("PTHREAD_MUTEX_INITIALIZER: trylock from another thread",
         in_other_thread(&s_normal, OP_TRYLOCK), EBUSY);
  expect("PTHREAD_MUTEX_INITIALIZER: unlock", pthread_mutex_unlock(&s_normal), 0);

  expect("PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: lock", pthread_mutex_lock(&s_recursive), 0);
  expect("PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: lock again", pthread_mutex_lock(&s_recursive), 0);
  expect("PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: trylock from another thread",
         in_other_thread(&s_recursive, OP_TRYLOCK), EBUSY);
  expect("PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: unlock", pthread_mutex_unlock(&s_recursive), 0);
  expect("PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: unlock again", pthread_mutex_unlock(&s_recursive),
         0);
  expect("PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: unlock when unlocked",
         pthread_mutex_unlock(&s_recursive), EPERM);

  expect("PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP: lock", pthread_mutex_lock(&s_errorcheck), 0);
  expect("PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP: relock by the owner",
         pthread_mutex_lock(&s_errorcheck), EDEADLK);
  expect("PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP: unlock from another thread",
         in_other_thread(&s_errorcheck, OP_UNLOCK), EPERM);
  expect("PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP: unlock", pthread_mutex_unlock(&s_errorcheck), 0);
}

int main(void) {
  run_pool();
  mutex_kinds();
  static_initialisers();
  return 0;
}
