/* Many threads waiting on one process-shared object at once: N threads
 * (default 1000) wait on a process-shared condition variable until a
 * broadcast, then on a process-shared barrier of N + 1, then on a
 * process-shared semaphore that main posts N times. Natively each waiter
 * is an OS thread blocked in the kernel; preloaded each blocks a worker,
 * and extra workers start for them past ITO_EXTRA_WORKERS (docs/monitor.md,
 * "Extra workers"). A wait that never ends is caught by a watchdog process.
 * Output is deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "pshared_many"
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dropin.h"

struct shared {
  pthread_mutex_t m;
  pthread_cond_t c;
  pthread_barrier_t b;
  sem_t s;
  int waiting, go, woken, serial, taken;
};
static struct shared *sh;

static void *waiter(void *p) {
  (void)p;
  pthread_mutex_lock(&sh->m);
  sh->waiting++;
  while (!sh->go)
    if (pthread_cond_wait(&sh->c, &sh->m)) FAIL("cond_wait");
  sh->woken++;
  pthread_mutex_unlock(&sh->m);
  int rc = pthread_barrier_wait(&sh->b);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
    __atomic_add_fetch(&sh->serial, 1, __ATOMIC_RELAXED);
  else if (rc)
    FAIL("barrier: %s", code_name(rc));
  if (sem_wait(&sh->s)) FAIL("sem_wait");
  __atomic_add_fetch(&sh->taken, 1, __ATOMIC_RELAXED);
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  setvbuf(stdout, NULL, _IOLBF, 0);
  pid_t dog = dropin_watchdog(150, "waiters on process-shared objects did not all end");
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) FAIL("mmap");
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  if (pthread_mutex_init(&sh->m, &ma) || pthread_cond_init(&sh->c, &ca) ||
      pthread_barrier_init(&sh->b, &ba, n + 1) || sem_init(&sh->s, 1, 0))
    FAIL("init");
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN > 65536 ? PTHREAD_STACK_MIN : 65536);
  pthread_t *t = calloc(n, sizeof *t);
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], &a, waiter, NULL)) FAIL("pthread_create %d", i);
  for (;;) { /* every waiter waits (each let the mutex go inside its wait) */
    pthread_mutex_lock(&sh->m);
    int w = sh->waiting;
    if (w == n) {
      sh->go = 1;
      pthread_cond_broadcast(&sh->c);
    }
    pthread_mutex_unlock(&sh->m);
    if (w == n) break;
    usleep(1000);
  }
  int rc = pthread_barrier_wait(&sh->b);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD) __atomic_add_fetch(&sh->serial, 1, __ATOMIC_RELAXED);
  for (int i = 0; i < n; i++) sem_post(&sh->s);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf(
      "%d waiters: woken by the broadcast %d, one serial thread at the barrier: %s, "
      "semaphore counts taken %d\n",
      n, sh->woken, sh->serial == 1 ? "yes" : "no", sh->taken);
  dropin_watchdog_end(dog);
  return 0;
}
