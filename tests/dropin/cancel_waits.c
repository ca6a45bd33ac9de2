/* Cancellation ends every wait that is a cancellation point, and the
 * asynchronous type ends any wait:
 *   - pthread_cond_wait and pthread_cond_timedwait on a process-shared
 *     condition variable: the thread acts with the mutex held again, and
 *     its cleanup handler sees it held (an error-checking relock says
 *     EDEADLK);
 *   - sem_wait on a process-shared semaphore;
 *   - pthread_join and pthread_timedjoin_np: the joiner ends, the thread
 *     it joined stays joinable and is joined afterwards;
 *   - sigwait;
 *   - asynchronous cancellation of a thread waiting in pthread_mutex_lock
 *     (no cancellation point: the type acts anywhere);
 *   - asynchronous cancellation of a thread waiting for a rwlock (to read,
 *     to write) or at a barrier, or for a process-shared mutex (glibc's
 *     wait in the kernel), also while it holds another process-shared
 *     mutex (which its cleanup handler lets go);
 *   - a barrier wait is no cancellation point: the request waits for the
 *     barrier, and the next pthread_testcancel acts on it.
 * A wait that never ends is caught by a watchdog process after 60 s.
 * Output is deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "cancel_waits"
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"

struct shared {
  pthread_mutex_t m, m2;
  pthread_cond_t c;
  sem_t s;
  int ready;
};
static struct shared *sh;
static int cleanup_ran, cleanup_held;

static void on_cleanup(void *p) {
  cleanup_ran++;
  if (p) { /* the shared mutex: held again by this thread? */
    cleanup_held = pthread_mutex_lock(p) == EDEADLK;
    pthread_mutex_unlock(p);
  }
}

static const char *ended(pthread_t t) {
  void *v = NULL;
  int rc = pthread_join(t, &v);
  if (rc) return code_name(rc);
  return v == PTHREAD_CANCELED ? "canceled" : "returned";
}

/* ---- condition variables ------------------------------------------------------------- */

static void *cond_waiter(void *p) {
  int timed = p != NULL;
  pthread_mutex_lock(&sh->m);
  pthread_cleanup_push(on_cleanup, &sh->m);
  sh->ready = 1;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 120;
  for (;;) {
    int rc =
        timed ? pthread_cond_timedwait(&sh->c, &sh->m, &ts) : pthread_cond_wait(&sh->c, &sh->m);
    if (rc) FAIL("cond wait: %s", code_name(rc));
  }
  pthread_cleanup_pop(0);
  return NULL;
}

static void cancel_cond(int timed) {
  cleanup_ran = cleanup_held = 0;
  sh->ready = 0;
  pthread_t t;
  pthread_create(&t, NULL, cond_waiter, timed ? (void *)1 : NULL);
  for (;;) { /* its lock is free again once it waits */
    pthread_mutex_lock(&sh->m);
    int r = sh->ready;
    pthread_mutex_unlock(&sh->m);
    if (r) break;
    usleep(1000);
  }
  pthread_cancel(t);
  const char *e = ended(t);
  printf("process-shared cond %s: %s, cleanup ran %d, with the mutex held: %s\n",
         timed ? "timedwait" : "wait", e, cleanup_ran, cleanup_held ? "yes" : "no");
}

/* ---- a process-shared semaphore ---------------------------------------------------------- */

static void *sem_waiter(void *p) {
  (void)p;
  pthread_cleanup_push(on_cleanup, NULL);
  sh->ready = 1;
  for (;;)
    if (sem_wait(&sh->s)) FAIL("sem_wait: %s", code_name(errno));
  pthread_cleanup_pop(0);
  return NULL;
}

/* ---- joins ------------------------------------------------------------------------------ */

static pthread_t target;
static sem_t release_target;

static void *target_fn(void *p) {
  (void)p;
  while (sem_wait(&release_target)) {
  }
  return (void *)42;
}

static void *joiner(void *p) {
  pthread_cleanup_push(on_cleanup, NULL);
  void *v;
  int rc;
  if (p) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 120;
    rc = pthread_timedjoin_np(target, &v, &ts);
  } else {
    rc = pthread_join(target, &v);
  }
  FAIL("the join returned %s", code_name(rc));
  pthread_cleanup_pop(0);
  return NULL;
}

static void cancel_join(int timed) {
  cleanup_ran = 0;
  sem_init(&release_target, 0, 0);
  pthread_create(&target, NULL, target_fn, NULL);
  pthread_t j;
  pthread_create(&j, NULL, joiner, timed ? (void *)1 : NULL);
  pthread_cancel(j);
  const char *e = ended(j);
  sem_post(&release_target);
  void *v = NULL;
  int rc = pthread_join(target, &v);
  printf("%s: %s, cleanup ran %d; the thread it joined then joins: %s, value %ld\n",
         timed ? "pthread_timedjoin_np" : "pthread_join", e, cleanup_ran, code_name(rc), (long)v);
}

/* ---- sigwait ------------------------------------------------------------------------------ */

static void *sigwaiter(void *p) {
  (void)p;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  pthread_cleanup_push(on_cleanup, NULL);
  int sig;
  sigwait(&set, &sig);
  FAIL("sigwait returned %d", sig);
  pthread_cleanup_pop(0);
  return NULL;
}

/* ---- asynchronous cancellation in a mutex wait --------------------------------------------- */

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
static int async_ready;

static void *async_locker(void *p) {
  (void)p;
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
  pthread_cleanup_push(on_cleanup, NULL);
  __atomic_store_n(&async_ready, 1, __ATOMIC_RELEASE);
  pthread_mutex_lock(&plain);
  FAIL("the mutex was taken");
  pthread_cleanup_pop(0);
  return NULL;
}

/* ---- asynchronous cancellation in rwlock and barrier waits ---------------------------------- */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t abar;

static void unlock_m2(void *p) {
  if (p != (void *)4L) return;
  cleanup_ran++;
  pthread_mutex_unlock(&sh->m2);
}

static void *async_waiter(void *p) {
  int what = (int)(long)p;
  if (what == 4 && pthread_mutex_lock(&sh->m2)) FAIL("lock m2");
  pthread_cleanup_push(unlock_m2, p); /* (does something in case 4 only) */
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
  pthread_cleanup_push(on_cleanup, NULL);
  __atomic_store_n(&async_ready, 1, __ATOMIC_RELEASE);
  switch (what) {
    case 0:
      pthread_rwlock_rdlock(&rw);
      break;
    case 1:
      pthread_rwlock_wrlock(&rw);
      break;
    case 2:
      pthread_barrier_wait(&abar);
      break;
    case 3:
      pthread_mutex_lock(&sh->m);
      break;
    case 4:
      pthread_mutex_lock(&sh->m);
      break;
  }
  FAIL("an asynchronously cancelled wait returned (%d)", what);
  pthread_cleanup_pop(0);
  pthread_cleanup_pop(0);
  return NULL;
}

static void cancel_async(int what, const char *label) {
  static const struct timespec moment = {0, 20 * 1000000L};
  cleanup_ran = 0;
  __atomic_store_n(&async_ready, 0, __ATOMIC_RELAXED);
  pthread_t t;
  pthread_create(&t, NULL, async_waiter, (void *)(long)what);
  while (!__atomic_load_n(&async_ready, __ATOMIC_ACQUIRE)) usleep(1000);
  nanosleep(&moment, NULL); /* (it acts wherever the request finds it) */
  pthread_cancel(t);
  const char *e = ended(t);
  printf("asynchronous, %s: %s, cleanup ran %d\n", label, e, cleanup_ran);
}

/* ---- a barrier: no cancellation point --------------------------------------------------- */

static pthread_barrier_t bar;
static int barrier_returned;

static void *barrier_waiter(void *p) {
  (void)p;
  pthread_cleanup_push(on_cleanup, NULL);
  int rc = pthread_barrier_wait(&bar);
  barrier_returned = rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD;
  pthread_testcancel();
  FAIL("testcancel returned");
  pthread_cleanup_pop(0);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pid_t dog = dropin_watchdog(60, "a cancelled thread's wait did not end");
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) FAIL("mmap");
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  if (pthread_mutex_init(&sh->m, &ma) || pthread_mutex_init(&sh->m2, &ma) ||
      pthread_cond_init(&sh->c, &ca) || sem_init(&sh->s, 1, 0))
    FAIL("init");

  cancel_cond(0);
  cancel_cond(1);

  cleanup_ran = 0;
  pthread_t t;
  pthread_create(&t, NULL, sem_waiter, NULL);
  pthread_cancel(t);
  const char *e = ended(t);
  printf("process-shared sem_wait: %s, cleanup ran %d\n", e, cleanup_ran);
  int v = -1;
  sem_getvalue(&sh->s, &v);
  printf("  the semaphore's value: %d\n", v);

  cancel_join(0);
  cancel_join(1);

  cleanup_ran = 0;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  pthread_create(&t, NULL, sigwaiter, NULL);
  pthread_cancel(t);
  e = ended(t);
  printf("sigwait: %s, cleanup ran %d\n", e, cleanup_ran);

  cleanup_ran = 0;
  pthread_mutex_lock(&plain);
  pthread_create(&t, NULL, async_locker, NULL);
  while (!__atomic_load_n(&async_ready, __ATOMIC_ACQUIRE)) usleep(1000);
  pthread_cancel(t);
  e = ended(t);
  printf("asynchronous, in pthread_mutex_lock: %s, cleanup ran %d", e, cleanup_ran);
  printf(", the mutex still the caller's: unlock %s\n", code_name(pthread_mutex_unlock(&plain)));

  pthread_rwlock_wrlock(&rw);
  cancel_async(0, "in pthread_rwlock_rdlock");
  cancel_async(1, "in pthread_rwlock_wrlock");
  printf("  the rwlock still the caller's: unlock %s\n", code_name(pthread_rwlock_unlock(&rw)));
  pthread_barrier_init(&abar, NULL, 2);
  cancel_async(2, "in pthread_barrier_wait");
  pthread_mutex_lock(&sh->m);
  cancel_async(3, "in pthread_mutex_lock of a process-shared mutex");
  cancel_async(4, "in pthread_mutex_lock of a process-shared mutex, holding another");
  printf("  the mutex still the caller's: unlock %s\n", code_name(pthread_mutex_unlock(&sh->m)));
  printf("  the other let go by the cleanup: lock %s", code_name(pthread_mutex_lock(&sh->m2)));
  printf(", unlock %s\n", code_name(pthread_mutex_unlock(&sh->m2)));

  cleanup_ran = 0;
  pthread_barrier_init(&bar, NULL, 2);
  pthread_create(&t, NULL, barrier_waiter, NULL);
  pthread_cancel(t);
  pthread_barrier_wait(&bar);
  e = ended(t);
  printf("barrier (no cancellation point): the wait returned %s, then %s, cleanup ran %d\n",
         barrier_returned ? "yes" : "no", e, cleanup_ran);
  dropin_watchdog_end(dog);
  return 0;
}
