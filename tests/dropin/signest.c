/* A handler run on a thread that computes, sent the next signal the moment
 * it has run, thousands of times, as a program that signals a worker in a
 * loop does:
 *  - its frames do not nest: each handler runs at the depth of the first
 *    (natively the signal stays blocked until the handler's frame has
 *    returned; a frame left open per signal would overflow the stack);
 *  - the signal is blocked while its handler runs (pthread_sigmask says
 *    so inside it).
 * Each wait for a handler is bounded (20 s). Output is deterministic;
 * both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "signest"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"

enum { ROUNDS = 3000, DEEPER = 32 * 1024 };

static volatile int handled, stop, unblocked_inside;
static volatile uintptr_t first, lowest;

static void handler(int sig) {
  char here;
  uintptr_t a = (uintptr_t)&here;
  if (!first) first = a;
  if (!lowest || a < lowest) lowest = a;
  sigset_t cur;
  pthread_sigmask(SIG_BLOCK, NULL, &cur);
  if (!sigismember(&cur, sig)) unblocked_inside++;
  handled++;
}

static void *computes(void *arg) {
  (void)arg;
  volatile unsigned long x = 0;
  /* (a yield now and then: with one worker the signaller runs only when
   * this thread leaves it) */
  while (!stop)
    if ((++x & 0xffff) == 0) sched_yield();
  return NULL;
}

/* Signals t, then waits (20 s at most) for its handler: 1 if it ran. */
static int signal_and_wait(pthread_t t) {
  int before = handled;
  if (pthread_kill(t, SIGUSR1)) FAIL("pthread_kill");
  struct timespec end, now;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += 20;
  for (long i = 1; handled == before; i++) {
    sched_yield();
    if (i % 1024) continue;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec > end.tv_nsec))
      return 0;
  }
  return 1;
}

int main(void) {
  catch_signal(SIGUSR1, handler, 0);
  pthread_t t;
  if (pthread_create(&t, NULL, computes, NULL)) FAIL("pthread_create");
  int ran = 0;
  for (int i = 0; i < ROUNDS; i++) ran += signal_and_wait(t);
  stop = 1;
  pthread_join(t, NULL);
  printf("handler ran %d of %d times on the computing thread\n", ran, ROUNDS);
  printf("handler frames nested: %s\n", first - lowest > DEEPER ? "yes" : "no");
  printf("signal unblocked inside its handler: %s\n", unblocked_inside ? "yes" : "no");
  return 0;
}
