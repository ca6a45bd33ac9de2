/* A barrier may be freed as soon as pthread_barrier_destroy returns, even
 * when a waiter of the last round was in a signal's handler as the round
 * ended (glibc's destroy waits for such waiters to leave). Each round:
 * thread A waits at a barrier of 2 in its own page; a handler runs on A
 * during the wait and returns only once main has ended the round; main
 * destroys the barrier and takes the page away (PROT_NONE). A waiter that
 * touched the barrier after destroy returned would die of SIGSEGV.
 * The handler also waits a little after the round ended, so that a
 * destroy that did not wait would have taken the page away by then. The
 * pauses only make it likely that the signal lands inside the wait (a
 * handler that came before it tests less, and passes); nothing checked
 * depends on them. Output is deterministic. */
#define _GNU_SOURCE
#define DROPIN_PROG "barrierfree"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"

enum { ROUNDS = 20 };

static pthread_barrier_t *bar;
static volatile int arrived, in_handler, round_done, handled;

static void nap(long ns) {
  struct timespec t = {0, ns};
  nanosleep(&t, NULL);
}

static void handler(int sig) {
  (void)sig;
  in_handler = 1;
  /* (bounded: a handler that came before A's wait must let A arrive) */
  for (int i = 0; i < 2000 && !round_done; i++) nap(1000000);
  nap(20000000); /* (time for a destroy that does not wait, and the PROT_NONE) */
  handled++;
}

static void *waiter(void *p) {
  (void)p;
  arrived = 1;
  int rc = pthread_barrier_wait(bar);
  if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) FAIL("pthread_barrier_wait: %d", rc);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  catch_signal(SIGUSR1, handler, 0);
  long page = sysconf(_SC_PAGESIZE);
  for (int r = 0; r < ROUNDS; r++) {
    void *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) FAIL("mmap");
    bar = m;
    if (pthread_barrier_init(bar, NULL, 2)) FAIL("pthread_barrier_init");
    arrived = in_handler = round_done = 0;
    int before = handled;
    pthread_t t;
    if (pthread_create(&t, NULL, waiter, NULL)) FAIL("pthread_create");
    while (!arrived) nap(1000000);
    nap(20000000); /* (into its wait, most likely: a handler before it only tests less) */
    if (pthread_kill(t, SIGUSR1)) FAIL("pthread_kill");
    while (!in_handler) nap(1000000);
    int rc = pthread_barrier_wait(bar); /* ends the round (A arrived, most likely) */
    round_done = 1;
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) FAIL("pthread_barrier_wait: %d", rc);
    rc = pthread_barrier_destroy(bar);
    if (rc) FAIL("pthread_barrier_destroy: %d", rc);
    if (mprotect(m, (size_t)page, PROT_NONE)) FAIL("mprotect");
    pthread_join(t, NULL);
    if (handled != before + 1) FAIL("round %d: the handler ran %d times", r, handled - before);
    munmap(m, (size_t)page);
  }
  printf("barrierfree: %d rounds, each barrier freed at destroy, its waiter in a handler\n",
         ROUNDS);
  return 0;
}
