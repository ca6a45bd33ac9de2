/* Signals per thread, as a plain pthread program sees them natively:
 *  - pthread_kill to a thread waiting in sigwait for a blocked signal
 *    (a program's signal thread), to 32 such threads at once;
 *  - a handler runs on the thread it was sent to, and ends its sleep
 *    (nanosleep: EINTR with the time left), its sem_wait (EINTR) and its
 *    read of a pipe (EINTR without SA_RESTART; with it the read goes on);
 *  - pthread_sigqueue's value and code reach an SA_SIGINFO handler;
 *  - masks are per thread: inherited at pthread_create, set by
 *    pthread_attr_setsigmask_np, a blocked signal stays pending (sigpending)
 *    and runs when the thread unblocks it;
 *  - raise runs the handler at once on the caller;
 *  - a signal to the process (kill) while every other thread blocks it
 *    ends main's sigsuspend, and pause; its handler runs on main.
 * Output is deterministic; both.sh compares it with the native run.
 * A signal meant to end a wait is sent again and again until the wait has
 * ended: a thread that said it is ready may not be in its wait yet on a
 * loaded machine, and a signal that came before the wait would leave it
 * waiting for ever. An early one only runs the handler. */
#define _GNU_SOURCE
#define DROPIN_PROG "signals"
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dropin.h"

static pthread_t on_thread[65];
static volatile sig_atomic_t hits[65];
static volatile int got_value, got_code;

static void handler(int sig) {
  on_thread[sig] = pthread_self();
  hits[sig]++;
}

static void info_handler(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  on_thread[sig] = pthread_self();
  hits[sig]++;
  got_value = si->si_value.sival_int;
  got_code = si->si_code;
}

static int blocked_here(int sig) {
  sigset_t s;
  pthread_sigmask(SIG_BLOCK, NULL, &s);
  return sigismember(&s, sig);
}

/* ---- sigwait threads -------------------------------------------------------------------- */

static volatile int waited[32];

static void *sigwaiter(void *p) {
  long i = (long)p;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  sigaddset(&s, SIGQUIT);
  int sig = 0;
  if (sigwait(&s, &sig)) FAIL("sigwait");
  waited[i] = sig;
  return NULL;
}

/* ---- a handler ends waits ----------------------------------------------------------------- */

static sem_t sem;
static int pipefd[2];
static volatile int ready, done;

static void *sleeper(void *p) {
  (void)p;
  ready = 1;
  struct timespec t = {20, 0}, rem = {0, 0};
  int rc = nanosleep(&t, &rem);
  int e = errno;
  done = 1;
  printf("sleeper: nanosleep %d %s, time left %s, handler on it: %s\n", rc,
         rc ? (e == EINTR ? "EINTR" : "other") : "", rem.tv_sec > 10 ? "most" : "little",
         pthread_equal(on_thread[SIGUSR2], pthread_self()) ? "yes" : "no");
  return NULL;
}

static void *sem_waiter(void *p) {
  (void)p;
  ready = 1;
  int rc = sem_wait(&sem);
  done = 1;
  printf("sem_waiter: sem_wait %d %s\n", rc, rc && errno == EINTR ? "EINTR" : "");
  return NULL;
}

static void *reader(void *p) {
  (void)p;
  ready = 1;
  char c = 0;
  ssize_t n = read(pipefd[0], &c, 1);
  int e = errno;
  done = 1;
  printf("reader: read %zd %s%c\n", n, n < 0 && e == EINTR ? "EINTR" : "", n == 1 ? c : ' ');
  return NULL;
}

static void wait_ready(void) {
  while (!ready) usleep(1000);
  usleep(50000); /* (into its wait, most likely) */
  ready = 0;
}

/* Sends sig to t until its wait has ended (done). */
static void interrupt(pthread_t t, int sig) {
  while (!done) {
    int rc = pthread_kill(t, sig);
    if (rc) FAIL("pthread_kill: %s", code_name(rc));
    usleep(10000);
  }
  done = 0;
}

/* ---- masks per thread ------------------------------------------------------------------------ */

static volatile int phase;

static void *masker(void *p) {
  (void)p;
  printf("masker: SIGUSR1 inherited blocked: %s\n", blocked_here(SIGUSR1) ? "yes" : "no");
  mask_signal(SIG_UNBLOCK, SIGUSR1);
  mask_signal(SIG_BLOCK, SIGUSR2);
  phase = 1;
  while (phase != 2) usleep(1000);
  sigset_t pend;
  sigpending(&pend);
  printf("masker: SIGUSR2 pending: %s, handled yet: %s\n",
         sigismember(&pend, SIGUSR2) ? "yes" : "no", hits[SIGUSR2] ? "yes" : "no");
  mask_signal(SIG_UNBLOCK, SIGUSR2);
  printf("masker: after unblocking: handled %d time(s), on this thread: %s\n", (int)hits[SIGUSR2],
         pthread_equal(on_thread[SIGUSR2], pthread_self()) ? "yes" : "no");
  return NULL;
}

static void *attr_child(void *p) {
  (void)p;
  printf("attr child: SIGTERM blocked: %s, SIGUSR1 blocked: %s\n",
         blocked_here(SIGTERM) ? "yes" : "no", blocked_here(SIGUSR1) ? "yes" : "no");
  return NULL;
}

static void *blocker(void *p) {
  (void)p;
  /* blocks SIGUSR1 (inherited) and waits: the process's SIGUSR1 is main's */
  while (phase != 3) usleep(1000);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_t t[32];

  /* 1. sigwait threads: the signals blocked before they start */
  mask_signal(SIG_BLOCK, SIGUSR1);
  mask_signal(SIG_BLOCK, SIGQUIT);
  for (long i = 0; i < 32; i++)
    if (pthread_create(&t[i], NULL, sigwaiter, (void *)i)) FAIL("pthread_create");
  usleep(50000);
  for (int i = 0; i < 32; i++) {
    int rc = pthread_kill(t[i], i % 2 ? SIGQUIT : SIGUSR1);
    if (rc) FAIL("pthread_kill: %s", code_name(rc));
  }
  for (int i = 0; i < 32; i++) pthread_join(t[i], NULL);
  int right = 0;
  for (int i = 0; i < 32; i++) right += waited[i] == (i % 2 ? SIGQUIT : SIGUSR1);
  printf("sigwait: %d of 32 threads took the signal sent to them\n", right);
  mask_signal(SIG_UNBLOCK, SIGQUIT);

  /* 2. a handler on the thread it was sent to, ending its waits */
  catch_signal(SIGUSR2, handler, 0);
  pthread_t s;
  pthread_create(&s, NULL, sleeper, NULL);
  wait_ready();
  interrupt(s, SIGUSR2);
  pthread_join(s, NULL);

  sem_init(&sem, 0, 0);
  pthread_create(&s, NULL, sem_waiter, NULL);
  wait_ready();
  interrupt(s, SIGUSR2);
  pthread_join(s, NULL);

  if (pipe(pipefd)) FAIL("pipe");
  pthread_create(&s, NULL, reader, NULL);
  wait_ready();
  interrupt(s, SIGUSR2);
  pthread_join(s, NULL);
  /* (the read goes on whether the signal comes before or in it) */
  catch_signal(SIGUSR2, handler, SA_RESTART);
  pthread_create(&s, NULL, reader, NULL);
  wait_ready();
  pthread_kill(s, SIGUSR2);
  usleep(50000);
  if (write(pipefd[1], "x", 1) != 1) FAIL("write");
  pthread_join(s, NULL);
  done = 0;

  /* 3. pthread_sigqueue: value and code */
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_sigaction = info_handler;
  a.sa_flags = SA_SIGINFO;
  sigaction(SIGRTMIN + 1, &a, NULL);
  pthread_create(&s, NULL, sleeper, NULL);
  wait_ready();
  pthread_sigqueue(s, SIGRTMIN + 1, (union sigval){.sival_int = 4242});
  interrupt(s, SIGUSR2);
  pthread_join(s, NULL);
  printf("sigqueue: value %d, code %s, ran on the thread: %s\n", got_value,
         got_code == SI_QUEUE ? "SI_QUEUE" : "other",
         pthread_equal(on_thread[SIGRTMIN + 1], s) ? "yes" : "no");

  /* 4. masks per thread: inherited (SIGUSR1 is still blocked in main) */
  hits[SIGUSR2] = 0;
  phase = 0;
  pthread_t m;
  pthread_create(&m, NULL, masker, NULL);
  while (phase != 1) usleep(1000);
  pthread_kill(m, SIGUSR2);
  usleep(50000);
  phase = 2;
  pthread_join(m, NULL);

  pthread_attr_t at;
  pthread_attr_init(&at);
  sigset_t only_term;
  sigemptyset(&only_term);
  sigaddset(&only_term, SIGTERM);
  if (pthread_attr_setsigmask_np(&at, &only_term)) FAIL("pthread_attr_setsigmask_np");
  pthread_create(&s, &at, attr_child, NULL);
  pthread_join(s, NULL);
  pthread_attr_destroy(&at);

  /* 5. raise: at once, on the caller */
  hits[SIGUSR2] = 0;
  raise(SIGUSR2);
  printf("raise: handled %d time(s) before it returned, on main: %s\n", (int)hits[SIGUSR2],
         pthread_equal(on_thread[SIGUSR2], pthread_self()) ? "yes" : "no");

  /* 6. to the process, while the other threads block it: main's
   * sigsuspend, then pause */
  catch_signal(SIGUSR1, handler, 0);
  phase = 0;
  pthread_t b[4];
  for (int i = 0; i < 4; i++) pthread_create(&b[i], NULL, blocker, NULL); /* (SIGUSR1 blocked) */
  sigset_t none;
  sigemptyset(&none);
  hits[SIGUSR1] = 0;
  kill(getpid(), SIGUSR1); /* blocked in main too: pending */
  sigset_t pend;
  sigpending(&pend);
  printf("kill while blocked everywhere: pending %s, handled %d\n",
         sigismember(&pend, SIGUSR1) ? "yes" : "no", (int)hits[SIGUSR1]);
  int rc = sigsuspend(&none);
  printf("sigsuspend: %d %s, handled %d, on main: %s\n", rc, errno == EINTR ? "EINTR" : "other",
         (int)hits[SIGUSR1], pthread_equal(on_thread[SIGUSR1], pthread_self()) ? "yes" : "no");
  mask_signal(SIG_UNBLOCK, SIGUSR1);
  pid_t pid = getpid();
  int before = hits[SIGUSR1];
  pid_t kid = fork();
  if (kid == 0) { /* until pause has returned and main ends it */
    for (;;) {
      kill(pid, SIGUSR1);
      usleep(10000);
    }
  }
  rc = pause();
  int e = errno;
  kill(kid, SIGKILL);
  waitpid(kid, NULL, 0);
  printf("pause: %d %s, handled: %s\n", rc, e == EINTR ? "EINTR" : "other",
         hits[SIGUSR1] > before ? "yes" : "no");
  phase = 3;
  for (int i = 0; i < 4; i++) pthread_join(b[i], NULL);
  return 0;
}
