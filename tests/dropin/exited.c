/* A thread whose function has returned but that is not yet joined still
 * has its identity: as glibc (2.34 on) answers, pthread_cancel and
 * pthread_kill on it succeed and do nothing (glibc's own signals are still
 * refused), and pthread_join then returns its result. The answers are the
 * same whether or not the thread has got to its end by then, which the
 * program waits for (its last step, then a while) only to make the ended
 * case the likely one. both.sh compares the output with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "exited"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "dropin.h"

static int last_step;

static void *quick(void *arg) {
  __atomic_store_n(&last_step, 1, __ATOMIC_RELEASE);
  return arg;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGUSR1, SIG_IGN); /* (a signal that reached a live thread does nothing) */
  for (int round = 0; round < 20; round++) {
    pthread_t t;
    __atomic_store_n(&last_step, 0, __ATOMIC_RELAXED);
    if (pthread_create(&t, NULL, quick, (void *)(long)(round + 1))) FAIL("pthread_create");
    while (!__atomic_load_n(&last_step, __ATOMIC_ACQUIRE)) usleep(1000);
    usleep(5000);
    int c = pthread_cancel(t), k0 = pthread_kill(t, 0), k = pthread_kill(t, SIGUSR1);
    int own = pthread_kill(t, 32); /* glibc's SIGCANCEL */
    void *res;
    int j = pthread_join(t, &res);
    if (c || k0 || k || own != EINVAL || j || res != (void *)(long)(round + 1))
      FAIL("round %d: pthread_cancel %s, pthread_kill 0 %s, SIGUSR1 %s, 32 %s; join %s", round,
           code_name(c), code_name(k0), code_name(k), code_name(own), code_name(j));
  }
  printf(
      "a returned thread, not yet joined: pthread_cancel 0, pthread_kill 0 (its own signals "
      "EINVAL), then joined with its result: 20 rounds\n");
  return 0;
}
