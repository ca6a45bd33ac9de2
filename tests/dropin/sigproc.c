/* A signal sent to the process (kill) while every thread blocks it stays
 * pending for the process, and the first thread to stop blocking it, or to
 * wait for it, takes it, however close the send and the unblocking come:
 *  - pthread_sigmask that unblocks it runs the handler before it returns
 *    (POSIX: at least one pending unblocked signal is delivered then);
 *  - sigsuspend with a mask that lets it through returns after its
 *    handler ran;
 *  - sigwait in another thread takes it;
 *  - a new thread whose attribute mask lets it through takes it (the
 *    kernel hands it to the thread on its way to its first instruction).
 * Each is repeated many times with the send and the unblocking at varying
 * distances: a signal of the process seen by ito's monitor while a thread
 * changes its mask must reach that thread. A lost one hangs sigsuspend or
 * sigwait: a watchdog ends the run with the round it stopped in, after a
 * bound no loaded machine reaches. Output is deterministic; both.sh
 * compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "sigproc"
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dropin.h"

enum { ROUNDS = 400 };

static volatile sig_atomic_t hits;
static pthread_t handled_on;
static volatile int round_no, stage;

static void handler(int sig) {
  (void)sig;
  handled_on = pthread_self();
  hits++;
}

/* A short, varying distance between the send and the unblocking: none,
 * a few hundred loop turns, or a yield. */
static void apart(int i) {
  if (i % 3 == 1)
    for (volatile int k = 0; k < (i % 7) * 200; k++) {
    }
  else if (i % 3 == 2)
    sched_yield();
}

/* Ends the run if a stage stops making progress for a long time (a lost
 * signal would leave it waiting for ever). */
static void *watchdog(void *p) {
  (void)p;
  int last = -1, last_stage = -1, still = 0;
  for (;;) {
    sleep(1);
    if (stage == 5) return NULL;
    if (round_no == last && stage == last_stage) {
      if (++still == 30)
        FAIL("stage %d stopped at round %d for 30 s: a signal sent to the process was lost", stage,
             round_no);
    } else {
      still = 0;
      last = round_no;
      last_stage = stage;
    }
  }
}

static volatile int taken;

static void *sigwaiter(void *p) {
  (void)p;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR2);
  for (int i = 0; i < ROUNDS; i++) {
    int sig = 0;
    if (sigwait(&s, &sig)) FAIL("sigwait");
    if (sig != SIGUSR2) FAIL("sigwait: signal %d", sig);
    __atomic_add_fetch(&taken, 1, __ATOMIC_SEQ_CST);
  }
  return NULL;
}

static volatile int ran_before;
static pthread_t me_new;

static void *fresh(void *p) {
  (void)p;
  me_new = pthread_self();
  ran_before = hits;
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  catch_signal(SIGUSR1, handler, 0);
  /* every thread made from here on blocks both */
  mask_signal(SIG_BLOCK, SIGUSR1);
  mask_signal(SIG_BLOCK, SIGUSR2);
  pthread_t dog;
  if (pthread_create(&dog, NULL, watchdog, NULL)) FAIL("pthread_create");

  /* 1. pthread_sigmask that unblocks it */
  stage = 1;
  int late = 0;
  for (int i = 0; i < ROUNDS; i++) {
    round_no = i;
    int before = hits;
    kill(getpid(), SIGUSR1);
    apart(i);
    mask_signal(SIG_UNBLOCK, SIGUSR1);
    if (hits != before + 1) late++;
    while (hits == before) usleep(1000); /* (the watchdog ends a lost one) */
    mask_signal(SIG_BLOCK, SIGUSR1);
    if (hits != before + 1)
      FAIL("stage %d, round %d: the handler ran %d times", stage, i, hits - before);
  }
  printf("pthread_sigmask: %d signals handled once each\n", ROUNDS);
  if (late)
    fprintf(stderr, "sigproc: %d of %d unblockings returned before the handler ran\n", late,
            ROUNDS);

  /* 2. sigsuspend */
  stage = 2;
  sigset_t none;
  sigemptyset(&none);
  int wrong = 0;
  for (int i = 0; i < ROUNDS; i++) {
    round_no = i;
    int before = hits;
    kill(getpid(), SIGUSR1);
    apart(i);
    int rc = sigsuspend(&none);
    if (rc != -1 || errno != EINTR || hits != before + 1) wrong++;
  }
  printf("sigsuspend: %d of %d returned EINTR after the handler ran once\n", ROUNDS - wrong,
         ROUNDS);

  /* 3. sigwait in another thread */
  stage = 3;
  pthread_t w;
  if (pthread_create(&w, NULL, sigwaiter, NULL)) FAIL("pthread_create");
  for (int i = 0; i < ROUNDS; i++) {
    round_no = i;
    kill(getpid(), SIGUSR2);
    /* the next once this one is taken (two pending would be one) */
    while (__atomic_load_n(&taken, __ATOMIC_SEQ_CST) != i + 1) {
      apart(i);
      sched_yield(); /* (one worker: the waiter runs) */
    }
  }
  pthread_join(w, NULL);
  printf("sigwait: took %d of %d\n", taken, ROUNDS);

  /* 4. a new thread whose mask lets it through */
  stage = 4;
  pthread_attr_t at;
  pthread_attr_init(&at);
  if (pthread_attr_setsigmask_np(&at, &none)) FAIL("pthread_attr_setsigmask_np");
  int on_new = 0, first = 0;
  for (int i = 0; i < ROUNDS / 4; i++) {
    round_no = i;
    int before = hits;
    kill(getpid(), SIGUSR1);
    apart(i);
    pthread_t t;
    if (pthread_create(&t, &at, fresh, NULL)) FAIL("pthread_create");
    pthread_join(t, NULL);
    on_new += hits == before + 1 && pthread_equal(handled_on, me_new);
    first += ran_before == before + 1;
    if (hits == before) { /* not the new thread's: main's, once it unblocks it */
      mask_signal(SIG_UNBLOCK, SIGUSR1);
      while (hits == before) usleep(1000);
      mask_signal(SIG_BLOCK, SIGUSR1);
    }
    if (hits != before + 1)
      FAIL("stage %d, round %d: the handler ran %d times", stage, i, hits - before);
  }
  pthread_attr_destroy(&at);
  printf("new thread: %d signals handled once each\n", ROUNDS / 4);
  if (on_new != ROUNDS / 4 || first != ROUNDS / 4)
    fprintf(stderr, "sigproc: %d of %d on the new thread, %d before its function ran\n", on_new,
            ROUNDS / 4, first);
  stage = 5;
  pthread_join(dog, NULL);
  return 0;
}
