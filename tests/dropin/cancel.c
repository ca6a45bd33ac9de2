/* Cancellation, as a plain pthread program sees it natively: a request
 * ends a thread parked at a cancellation point (read of a pipe, a
 * condition variable, sleep, sem_wait, sigwait, poll) and its cleanup
 * handlers run, the condition variable's with the mutex held again; a
 * disabled request waits until the thread enables it and reaches a point;
 * pthread_testcancel in a loop; the asynchronous type acts at once on the
 * thread itself, and on a thread that computes in a loop without any call
 * (under the drop-in, the monitor's signal: docs/monitor.md); join reports
 * PTHREAD_CANCELED. Output is deterministic;
 * both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "cancel"
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dropin.h"

static volatile int cleaned, started;
static int pipefd[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t sem;

static void note(void *what) {
  cleaned++;
  printf("  cleanup: %s\n", (const char *)what);
}

static void unlock_it(void *p) {
  int rc = pthread_mutex_unlock(p); /* held again when a cond wait is cancelled */
  printf("  cleanup: mutex unlocked: %s\n", rc == 0 ? "yes" : "no (was not held)");
}

static void *in_read(void *p) {
  (void)p;
  pthread_cleanup_push(note, "read");
  started = 1;
  char ch;
  read(pipefd[0], &ch, 1);
  pthread_cleanup_pop(0);
  return NULL;
}

static void *in_cond(void *p) {
  (void)p;
  pthread_mutex_lock(&m);
  pthread_cleanup_push(unlock_it, &m);
  started = 1;
  for (;;) pthread_cond_wait(&c, &m);
  pthread_cleanup_pop(1);
  return NULL;
}

static void *in_sleep(void *p) {
  (void)p;
  pthread_cleanup_push(note, "sleep");
  pthread_cleanup_push(note, "sleep, outer");
  started = 1;
  sleep(100);
  pthread_cleanup_pop(0);
  pthread_cleanup_pop(0);
  return NULL;
}

static void *in_sem(void *p) {
  (void)p;
  pthread_cleanup_push(note, "sem_wait");
  started = 1;
  sem_wait(&sem);
  pthread_cleanup_pop(0);
  return NULL;
}

static void *in_sigwait(void *p) {
  (void)p;
  pthread_cleanup_push(note, "sigwait");
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  started = 1;
  int sig;
  sigwait(&s, &sig);
  pthread_cleanup_pop(0);
  return NULL;
}

static void *in_poll(void *p) {
  (void)p;
  pthread_cleanup_push(note, "poll");
  struct pollfd pf = {pipefd[0], POLLIN, 0};
  started = 1;
  poll(&pf, 1, -1);
  pthread_cleanup_pop(0);
  return NULL;
}

static volatile int slept_through, cancel_sent;
static void *disabled(void *p) {
  (void)p;
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  pthread_cleanup_push(note, "after enabling");
  started = 1;
  while (!cancel_sent) usleep(1000);
  usleep(10000); /* a cancellation point with the request pending: not acted on, disabled */
  slept_through = 1;
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
  pthread_testcancel();
  pthread_cleanup_pop(0);
  return NULL;
}

static void *spinning(void *p) {
  (void)p;
  pthread_cleanup_push(note, "testcancel loop");
  started = 1;
  /* (with one worker the canceller runs when this thread is preempted) */
  for (volatile long i = 0;; i++) pthread_testcancel();
  pthread_cleanup_pop(0);
  return NULL;
}

/* (no output: the type is still asynchronous while it runs, and glibc's
 * write is then not safe to call) */
static void count_only(void *p) {
  (void)p;
  cleaned++;
}

static void *async_self(void *p) {
  (void)p;
  pthread_cleanup_push(count_only, NULL);
  started = 1;
  int old;
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
  pthread_cancel(pthread_self());
  printf("  async_self: went on after cancelling itself\n");
  pthread_cleanup_pop(0);
  return NULL;
}

static volatile unsigned long spun;
static void *async_loop(void *p) {
  (void)p;
  pthread_cleanup_push(count_only, NULL);
  int old;
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
  started = 1;
  for (;;) spun++; /* no call at all */
  pthread_cleanup_pop(0);
  return NULL;
}

static void run(const char *what, void *(*fn)(void *), int cancel) {
  pthread_t t;
  started = 0;
  cancel_sent = 0;
  cleaned = 0;
  if (pthread_create(&t, NULL, fn, NULL)) FAIL("pthread_create");
  while (!started) usleep(1000);
  usleep(30000); /* (into its wait) */
  if (cancel) {
    int rc = pthread_cancel(t);
    if (rc) FAIL("pthread_cancel: %s", code_name(rc));
    cancel_sent = 1;
  }
  void *ret;
  pthread_join(t, &ret);
  printf("%s: %s, %d cleanup handler(s)\n", what,
         ret == PTHREAD_CANCELED ? "cancelled" : "returned", (int)cleaned);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (pipe(pipefd)) FAIL("pipe");
  sem_init(&sem, 0, 0);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &s, NULL);
  run("read", in_read, 1);
  run("cond_wait", in_cond, 1);
  printf("mutex free after the cancelled cond_wait: %s\n",
         pthread_mutex_trylock(&m) == 0 ? "yes" : "no");
  pthread_mutex_unlock(&m);
  run("sleep", in_sleep, 1);
  run("sem_wait", in_sem, 1);
  run("sigwait", in_sigwait, 1);
  run("poll", in_poll, 1);
  run("disabled, then enabled", disabled, 1);
  printf("the disabled thread slept through: %s\n", slept_through ? "yes" : "no");
  run("testcancel loop", spinning, 1);
  run("asynchronous, itself", async_self, 0);
  run("asynchronous, computing", async_loop, 1);
  pthread_t t;
  pthread_create(&t, NULL, in_sleep, NULL);
  usleep(20000);
  pthread_cancel(t);
  int twice = pthread_cancel(t);
  pthread_join(t, NULL); /* (its cleanup prints first) */
  printf("cancel twice: %s\n", code_name(twice));
  return 0;
}
