/* A signal's handler that itself waits (nanosleep), run during a thread's
 * wait, leaves that wait's outcome as it was:
 *  - pthread_join returns only once the thread has ended;
 *  - pthread_mutex_timedlock returns 0 with the mutex held, not the
 *    handler's sleep's timeout;
 *  - sem_timedwait, called again after its EINTR, returns 0 when posted,
 *    ETIMEDOUT at its deadline;
 *  - pthread_barrier_wait returns once the round ends (each waiter once).
 * Each wait gets the signal until its handler has run, then ends. Output
 * is deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "handlerwaits"
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"

enum { ROUNDS = 10 };

static volatile int handled;

static void nap(long ns) {
  struct timespec t = {0, ns};
  nanosleep(&t, NULL);
}

static void handler(int sig) {
  (void)sig;
  nap(3000000); /* a wait of the handler's own */
  handled++;
}

/* Signals t until its handler has run once more than before. */
static void poke(pthread_t t, int before) {
  while (handled == before) {
    if (pthread_kill(t, SIGUSR1)) FAIL("pthread_kill");
    nap(5000000);
  }
}

static struct timespec in_s(int s) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += s;
  return t;
}

/* ---- join ---------------------------------------------------------------------------------- */

static volatile int go, finished;
static pthread_t main_t;

static void *joined(void *p) {
  (void)p;
  while (!go) nap(1000000);
  nap(10000000);
  finished = 1;
  return NULL;
}

static void *poker(void *p) {
  (void)p;
  nap(20000000); /* (main in its join, most likely) */
  poke(main_t, handled);
  go = 1;
  return NULL;
}

/* ---- timed lock and semaphore --------------------------------------------------------------- */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static sem_t sem;
static volatile int entered, lock_rc = -1, sem_rc = -1, sem_err;

static void *locker(void *p) {
  (void)p;
  struct timespec dl = in_s(60);
  entered = 1;
  lock_rc = pthread_mutex_timedlock(&m, &dl);
  if (lock_rc == 0) pthread_mutex_unlock(&m);
  return NULL;
}

static void *sem_waiter(void *p) {
  int secs = (int)(long)p;
  struct timespec dl = in_s(secs);
  entered = 1;
  /* (a handler ends sem_timedwait with EINTR, SA_RESTART or not) */
  while ((sem_rc = sem_timedwait(&sem, &dl)) == -1 && errno == EINTR) {
  }
  sem_err = sem_rc ? errno : 0;
  return NULL;
}

/* ---- barrier --------------------------------------------------------------------------------- */

static pthread_barrier_t bar;
static volatile int passed;

static void *at_barrier(void *p) {
  (void)p;
  entered = 1;
  int rc = pthread_barrier_wait(&bar);
  if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) FAIL("pthread_barrier_wait: %d", rc);
  __atomic_add_fetch(&passed, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  catch_signal(SIGUSR1, handler, 0);
  main_t = pthread_self();
  int ok_join = 0, ok_lock = 0, ok_post = 0, ok_tmo = 0, ok_bar = 0;
  for (int r = 0; r < ROUNDS; r++) {
    /* join */
    go = finished = 0;
    pthread_t t, p;
    if (pthread_create(&t, NULL, joined, NULL) || pthread_create(&p, NULL, poker, NULL))
      FAIL("pthread_create");
    if (pthread_join(t, NULL)) FAIL("pthread_join");
    ok_join += finished;
    pthread_join(p, NULL);

    /* timed lock: held by main while the handler runs on the waiter */
    pthread_mutex_lock(&m);
    entered = 0;
    lock_rc = -1;
    if (pthread_create(&t, NULL, locker, NULL)) FAIL("pthread_create");
    while (!entered) nap(1000000);
    nap(10000000);
    poke(t, handled);
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    ok_lock += lock_rc == 0;

    /* semaphore: posted, then its deadline */
    sem_init(&sem, 0, 0);
    entered = 0;
    if (pthread_create(&t, NULL, sem_waiter, (void *)60L)) FAIL("pthread_create");
    while (!entered) nap(1000000);
    nap(10000000);
    poke(t, handled);
    sem_post(&sem);
    pthread_join(t, NULL);
    ok_post += sem_rc == 0;
    entered = 0;
    if (pthread_create(&t, NULL, sem_waiter, (void *)1L)) FAIL("pthread_create");
    while (!entered) nap(1000000);
    nap(10000000);
    poke(t, handled);
    pthread_join(t, NULL);
    ok_tmo += sem_rc == -1 && sem_err == ETIMEDOUT;
    sem_destroy(&sem);

    /* barrier of 2: the other arrives once the handler ran on the first */
    pthread_barrier_init(&bar, NULL, 2);
    entered = passed = 0;
    if (pthread_create(&t, NULL, at_barrier, NULL)) FAIL("pthread_create");
    while (!entered) nap(1000000);
    nap(10000000);
    poke(t, handled);
    if (pthread_create(&p, NULL, at_barrier, NULL)) FAIL("pthread_create");
    pthread_join(t, NULL);
    pthread_join(p, NULL);
    ok_bar += passed == 2;
    if (pthread_barrier_destroy(&bar)) FAIL("pthread_barrier_destroy");
  }
  printf("join: %d of %d returned after the thread ended\n", ok_join, ROUNDS);
  printf("mutex_timedlock: %d of %d returned 0\n", ok_lock, ROUNDS);
  printf("sem_timedwait: posted %d of %d returned 0, %d of %d timed out\n", ok_post, ROUNDS, ok_tmo,
         ROUNDS);
  printf("barrier: %d of %d rounds passed by both\n", ok_bar, ROUNDS);
  return 0;
}
