/* Signals whose action is the default one act on the whole process at
 * once, whatever its threads are doing (docs/signals.md, "Default
 * actions"): a child that made a thread and then waits (in a read, a
 * sleep, a condition variable, a mutex, a join, a semaphore, a barrier,
 * or while every thread computes) ends by SIGTERM, SIGINT, SIGHUP,
 * SIGUSR1, SIGALRM and SIGQUIT; SIGTSTP stops it and SIGCONT continues
 * it. A signal every thread blocks stays pending for the process: a
 * sigwait or a signalfd takes it, and a thread that unblocks it later
 * ends the process. The parent prints how each child ended; a child that
 * does not end within 60 s is a failure ("HANG"), killed. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int ready_fd; /* the child says it is about to wait */
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static volatile int spin_on = 1;

static void *noop(void *a) { return a; }
static void ready(void) {
  char b = 1;
  if (write(ready_fd, &b, 1) != 1) _exit(20);
}
static void *waits(void *a) {
  (void)a;
  pthread_mutex_lock(&m);
  for (;;) pthread_cond_wait(&c, &m);
  return NULL;
}
static void *spins(void *a) {
  while (spin_on) {
  }
  return a;
}
static int the_sig;
static void *reads(void *a) {
  char b;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, the_sig);
  pthread_sigmask(SIG_UNBLOCK, &s, NULL);
  ready();
  if (read(*(int *)a, &b, 1) < 0) _exit(21);
  _exit(22);
}

static void block(int sig) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  pthread_sigmask(SIG_BLOCK, &s, NULL);
}

/* The child: a thread made and joined, then the wait of `how`. */
static void child(const char *how, int sig) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  setpgid(0, 0); /* a process group of its own, not orphaned: stops are not discarded */
  pthread_t t;
  pthread_create(&t, NULL, noop, NULL);
  pthread_join(t, NULL);
  int p[2];
  if (pipe(p)) _exit(23);
  if (!strcmp(how, "read")) {
    char b;
    ready();
    if (read(p[0], &b, 1) == 1) _exit(7); /* (nobody writes) */
  } else if (!strcmp(how, "sleep")) {
    ready();
    sleep(100);
  } else if (!strcmp(how, "cond")) {
    pthread_mutex_lock(&m);
    ready();
    pthread_cond_wait(&c, &m);
  } else if (!strcmp(how, "mutex")) {
    pthread_mutex_lock(&m);
    ready();
    pthread_mutex_lock(&m); /* a normal mutex relocked: waits for ever */
  } else if (!strcmp(how, "join")) {
    pthread_create(&t, NULL, waits, NULL);
    ready();
    pthread_join(t, NULL);
  } else if (!strcmp(how, "sem")) {
    sem_t s;
    sem_init(&s, 0, 0);
    ready();
    while (sem_wait(&s) == -1 && errno == EINTR) {
    }
  } else if (!strcmp(how, "barrier")) {
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2);
    ready();
    pthread_barrier_wait(&b);
  } else if (!strcmp(how, "compute")) {
    pthread_create(&t, NULL, spins, NULL);
    ready();
    spins(NULL);
  } else if (!strcmp(how, "mainblocks")) {
    /* only a thread waiting in a read takes it */
    block(sig);
    the_sig = sig;
    pthread_create(&t, NULL, reads, &p[0]);
    pthread_join(t, NULL);
  } else if (!strcmp(how, "sigwait")) {
    /* every thread blocks it: a thread in sigwait takes it */
    block(sig);
    pthread_create(&t, NULL, waits, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    int got = 0;
    ready();
    sigwait(&s, &got);
    _exit(got == sig ? 9 : 24);
  } else if (!strcmp(how, "signalfd")) {
    block(sig);
    pthread_create(&t, NULL, waits, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    int fd = signalfd(-1, &s, SFD_CLOEXEC);
    struct signalfd_siginfo si;
    ready();
    if (fd < 0 || read(fd, &si, sizeof si) != sizeof si) _exit(25);
    _exit((int)si.ssi_signo == sig ? 10 : 26);
  } else if (!strcmp(how, "later")) {
    /* every thread blocks it until main, once it sees it pending,
     * unblocks it: the signal was pending for the process, and now ends it */
    block(sig);
    pthread_create(&t, NULL, waits, NULL);
    ready();
    sigset_t pend;
    for (int i = 0;; i++) {
      sigpending(&pend);
      if (sigismember(&pend, sig)) break;
      if (i == 6000) _exit(27);
      struct timespec d = {0, 10 * 1000 * 1000};
      nanosleep(&d, NULL);
    }
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
    _exit(28);
  }
  _exit(3);
}

/* Waits up to 60 s for a change of the child's state. */
static int wait_state(pid_t pid, int *st, int flags) {
  for (int i = 0; i < 6000; i++) {
    pid_t r = waitpid(pid, st, WNOHANG | flags);
    if (r == pid) return 1;
    struct timespec d = {0, 10 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  return 0;
}

static void describe(int st, char *out, size_t n) {
  if (WIFSIGNALED(st))
    snprintf(out, n, "ended by signal %d", WTERMSIG(st));
  else if (WIFEXITED(st))
    snprintf(out, n, "exit %d", WEXITSTATUS(st));
  else if (WIFSTOPPED(st))
    snprintf(out, n, "stopped by %d", WSTOPSIG(st));
  else if (WIFCONTINUED(st))
    snprintf(out, n, "continued");
  else
    snprintf(out, n, "status %#x", st);
}

static pid_t start(const char *how, int sig) {
  int r[2];
  if (pipe(r)) exit(1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(r[0]);
    ready_fd = r[1];
    child(how, sig);
  }
  close(r[1]);
  char b;
  if (read(r[0], &b, 1) != 1) printf("%s: the child did not start\n", how);
  close(r[0]);
  return pid;
}

static int failures;

static void one(const char *how, int sig, const char *expect) {
  pid_t pid = start(how, sig);
  kill(pid, sig);
  int st = 0;
  char got[64];
  if (!wait_state(pid, &st, 0)) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    snprintf(got, sizeof got, "HANG");
  } else {
    describe(st, got, sizeof got);
  }
  if (strcmp(got, expect)) failures++;
  printf("%s %d: %s\n", how, sig, got);
}

int main(void) {
  const char *hows[] = {"read", "sleep",   "cond",    "mutex",     "join",
                        "sem",  "barrier", "compute", "mainblocks"};
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGALRM, SIGQUIT};
  for (unsigned i = 0; i < sizeof hows / sizeof hows[0]; i++)
    for (unsigned j = 0; j < sizeof sigs / sizeof sigs[0]; j++) {
      char e[64];
      snprintf(e, sizeof e, "ended by signal %d", sigs[j]);
      one(hows[i], sigs[j], e);
    }
  one("sigwait", SIGTERM, "exit 9");
  one("sigwait", SIGUSR1, "exit 9");
  one("signalfd", SIGTERM, "exit 10");
  one("later", SIGTERM, "ended by signal 15");

  /* SIGTSTP stops the child, SIGCONT continues it, and it waits on until
   * SIGTERM ends it */
  const char *stop_hows[] = {"read", "cond", "compute"};
  for (unsigned i = 0; i < 3; i++) {
    pid_t pid = start(stop_hows[i], SIGTSTP);
    int st = 0;
    char got[64] = "HANG";
    kill(pid, SIGTSTP);
    if (wait_state(pid, &st, WUNTRACED)) describe(st, got, sizeof got);
    printf("%s tstp: %s\n", stop_hows[i], got);
    if (strcmp(got, "stopped by 20")) failures++;
    snprintf(got, sizeof got, "HANG");
    kill(pid, SIGCONT);
    if (wait_state(pid, &st, WCONTINUED)) describe(st, got, sizeof got);
    printf("%s cont: %s\n", stop_hows[i], got);
    if (strcmp(got, "continued")) failures++;
    snprintf(got, sizeof got, "HANG");
    kill(pid, SIGTERM);
    if (wait_state(pid, &st, 0))
      describe(st, got, sizeof got);
    else {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
    }
    printf("%s term: %s\n", stop_hows[i], got);
    if (strcmp(got, "ended by signal 15")) failures++;
  }
  /* (the parent's own thread, for the preloaded runs' count) */
  pthread_t t;
  pthread_create(&t, NULL, noop, NULL);
  pthread_join(t, NULL);
  printf("failures: %d\n", failures);
  return failures != 0;
}
