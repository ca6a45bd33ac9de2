/* Handlers run where and when POSIX says (docs/signals.md):
 *  - during a wait for a mutex (plain and timed), a read or write lock, a
 *    barrier or a join, after which the wait goes on as if it had not been
 *    interrupted (a timed lock then gets its lock, not ETIMEDOUT); the
 *    signal sent to the thread (pthread_kill) or to the process while the
 *    waiting thread is the only one that does not block it;
 *  - on a thread that computes and is the only one that does not block a
 *    signal sent to the process, with and without SA_ONSTACK;
 *  - raise with the signal blocked leaves it pending on the caller, not on
 *    a thread created next; unblocking runs the handler before returning;
 *  - sem_wait goes on after a handler with SA_RESTART and fails with EINTR
 *    after one without; sem_timedwait fails with EINTR after either;
 *  - a process with no thread of its own (the runtime not started) gets
 *    EINTR from sem_timedwait when another process signals it.
 * Each wait for a handler is bounded (20 s): a handler that does not run
 * in time prints a failure instead of hanging. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static sem_t ran;           /* posted by the handler */
static pthread_t expect_on; /* the thread the handler must run on */
static volatile int on_expected, handled;

static void handler(int sig) {
  (void)sig;
  on_expected = pthread_equal(pthread_self(), expect_on);
  handled++;
  sem_post(&ran);
}

static void install(int sig, int flags) {
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_handler = handler;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  sigaction(sig, &a, NULL);
}

static void mask(int how, int sig) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  pthread_sigmask(how, &s, NULL);
}

static struct timespec in_secs(int s) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += s;
  return t;
}

/* A handler that ran late (a failure already printed) leaves nothing for
 * the next case. */
static void drain(void) {
  while (sem_trywait(&ran) == 0) {
  }
}

/* Waits (at most 20 s) for the handler; 1 if it ran. */
static int handler_ran(void) {
  struct timespec d = in_secs(20);
  while (sem_timedwait(&ran, &d) == -1)
    if (errno != EINTR) return 0;
  return 1;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile int release_joined;

static void *lock_plain(void *a) {
  (void)a;
  int rc = pthread_mutex_lock(&m);
  if (!rc) pthread_mutex_unlock(&m);
  return (void *)(long)rc;
}
static void *lock_timed(void *a) {
  (void)a;
  struct timespec d = in_secs(60);
  int rc = pthread_mutex_timedlock(&m, &d);
  if (!rc) pthread_mutex_unlock(&m);
  return (void *)(long)rc;
}
static void *lock_read(void *a) {
  (void)a;
  int rc = pthread_rwlock_rdlock(&rw);
  if (!rc) pthread_rwlock_unlock(&rw);
  return (void *)(long)rc;
}
static void *lock_write(void *a) {
  (void)a;
  int rc = pthread_rwlock_wrlock(&rw);
  if (!rc) pthread_rwlock_unlock(&rw);
  return (void *)(long)rc;
}
static void *lock_timedwrite(void *a) {
  (void)a;
  struct timespec d = in_secs(60);
  int rc = pthread_rwlock_timedwrlock(&rw, &d);
  if (!rc) pthread_rwlock_unlock(&rw);
  return (void *)(long)rc;
}
static void *at_barrier(void *a) {
  (void)a;
  int rc = pthread_barrier_wait(&bar);
  return (void *)(long)(rc == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : rc);
}
static void *stays(void *a) {
  pthread_mutex_lock(&m);
  while (!release_joined) pthread_cond_wait(&never, &m);
  pthread_mutex_unlock(&m);
  return a;
}
static pthread_t joined;
static void *joins(void *a) {
  (void)a;
  return (void *)(long)pthread_join(joined, NULL);
}

enum { HOLD_MUTEX, HOLD_WRITE, HOLD_READ, HOLD_BARRIER, HOLD_JOIN };

/* A thread waits (fn) for what main holds; the signal is sent to it
 * (process: to the process, main blocking it); its handler must run on
 * it while main still holds; then main lets go and the wait succeeds. */
static void during(const char *name, void *(*fn)(void *), int hold, int process) {
  install(SIGUSR1, 0);
  if (hold == HOLD_MUTEX) pthread_mutex_lock(&m);
  if (hold == HOLD_WRITE) pthread_rwlock_wrlock(&rw);
  if (hold == HOLD_READ) pthread_rwlock_rdlock(&rw);
  if (hold == HOLD_BARRIER) pthread_barrier_init(&bar, NULL, 2);
  if (hold == HOLD_JOIN) {
    release_joined = 0;
    pthread_create(&joined, NULL, stays, NULL);
  }
  if (process) mask(SIG_BLOCK, SIGUSR1);
  drain();
  handled = on_expected = 0;
  pthread_attr_t at;
  pthread_attr_init(&at);
  sigset_t none;
  sigemptyset(&none);
  pthread_attr_setsigmask_np(&at, &none);
  pthread_t t;
  pthread_create(&t, &at, fn, NULL);
  pthread_attr_destroy(&at);
  expect_on = t;
  if (process)
    kill(getpid(), SIGUSR1);
  else
    pthread_kill(t, SIGUSR1);
  int ok = handler_ran();
  if (hold == HOLD_MUTEX) pthread_mutex_unlock(&m);
  if (hold == HOLD_WRITE || hold == HOLD_READ) pthread_rwlock_unlock(&rw);
  if (hold == HOLD_BARRIER) pthread_barrier_wait(&bar);
  if (hold == HOLD_JOIN) {
    pthread_mutex_lock(&m);
    release_joined = 1;
    pthread_cond_broadcast(&never);
    pthread_mutex_unlock(&m);
  }
  void *rc;
  pthread_join(t, &rc);
  if (hold == HOLD_BARRIER) pthread_barrier_destroy(&bar);
  if (process) mask(SIG_UNBLOCK, SIGUSR1);
  printf("%s (%s): handler %s, on the waiter %d, wait gives %ld\n", name,
         process ? "process" : "thread", ok ? "ran during the wait" : "DID NOT RUN", on_expected,
         (long)rc);
}

static volatile int stop_spin;
static void *spin(void *a) {
  while (!stop_spin) {
  }
  return a;
}

static char alt[1 << 16];

/* The process's signal reaches the one thread that does not block it,
 * while it computes. */
static void to_computing(int onstack) {
  if (onstack) {
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    sigaltstack(&ss, NULL);
  }
  install(SIGUSR2, onstack ? SA_ONSTACK : 0);
  mask(SIG_BLOCK, SIGUSR2);
  pthread_attr_t at;
  pthread_attr_init(&at);
  sigset_t none;
  sigemptyset(&none);
  pthread_attr_setsigmask_np(&at, &none);
  stop_spin = 0;
  drain();
  handled = on_expected = 0;
  pthread_t t;
  pthread_create(&t, &at, spin, NULL);
  pthread_attr_destroy(&at);
  expect_on = t;
  kill(getpid(), SIGUSR2);
  int ok = handler_ran();
  stop_spin = 1;
  pthread_join(t, NULL);
  mask(SIG_UNBLOCK, SIGUSR2);
  printf("process signal to a computing thread%s: handler %s, on it %d\n",
         onstack ? " (SA_ONSTACK)" : "", ok ? "ran" : "DID NOT RUN", on_expected);
}

static void *pending_here(void *a) {
  (void)a;
  sigset_t p;
  sigpending(&p);
  return (void *)(long)sigismember(&p, SIGUSR1);
}

/* raise of a blocked signal: pending on the caller alone. */
static void raise_blocked(void) {
  install(SIGUSR1, 0);
  mask(SIG_BLOCK, SIGUSR1);
  handled = 0;
  expect_on = pthread_self();
  raise(SIGUSR1);
  sigset_t p;
  sigpending(&p);
  int mine = sigismember(&p, SIGUSR1);
  pthread_t t;
  void *theirs;
  pthread_create(&t, NULL, pending_here, NULL);
  pthread_join(t, &theirs);
  int before = handled;
  mask(SIG_UNBLOCK, SIGUSR1);
  int after = handled;
  while (sem_trywait(&ran) == 0) {
  }
  printf(
      "raise blocked: pending here %d, in a new thread %ld, handled before unblocking %d, "
      "after %d, on the caller %d\n",
      mine, (long)theirs, before, after, on_expected);
}

static sem_t never_posted, release;
static volatile int about_to_wait, wait_over;
/* The waiter stays until main is done signalling it (release): a signal
 * sent when main last saw it waiting finds it alive, as it would natively
 * (not one that ended meanwhile, which discards its signals). */
static void *sem_waits(void *a) {
  int timed = (int)(long)a;
  int rc;
  about_to_wait = 1;
  if (timed) {
    struct timespec d = in_secs(60);
    rc = sem_timedwait(&never_posted, &d);
  } else {
    rc = sem_wait(&never_posted);
  }
  rc = rc == 0 ? 0 : errno;
  wait_over = 1;
  while (sem_wait(&release) == -1 && errno == EINTR) {
  }
  return (void *)(long)rc;
}

/* sem_wait and SA_RESTART, as glibc: restarted without a deadline. The
 * waiter is signalled until its wait ends, or (sem_wait with SA_RESTART,
 * the one wait a handler does not end) until its handler ran three times
 * after it said it was about to wait; then the semaphore is posted. (The
 * other waits are signalled until they end: handlers that all ran before
 * the waiter reached its wait would otherwise leave the post to end it.) */
static void sem_restart(int restart, int timed) {
  install(SIGUSR1, restart ? SA_RESTART : 0);
  sem_init(&never_posted, 0, 0);
  sem_init(&release, 0, 0);
  about_to_wait = wait_over = 0;
  handled = 0;
  pthread_t t;
  pthread_create(&t, NULL, sem_waits, (void *)(long)timed);
  expect_on = t;
  while (!about_to_wait) sched_yield();
  int ran_ok = 1, n = 0;
  while (!wait_over && n < (restart && !timed ? 3 : 1000000) && ran_ok) {
    pthread_kill(t, SIGUSR1);
    ran_ok = handler_ran();
    n++;
  }
  sem_post(&never_posted); /* a restarted wait takes it */
  sem_post(&release);
  void *rc;
  pthread_join(t, &rc);
  sem_destroy(&never_posted);
  sem_destroy(&release);
  printf("%s with%s SA_RESTART: handler %s, result %s\n", timed ? "sem_timedwait" : "sem_wait",
         restart ? "" : "out", ran_ok ? "ran" : "DID NOT RUN",
         rc == 0             ? "0"
         : (long)rc == EINTR ? "EINTR"
                             : "other");
}

/* A process without threads of its own: its sem_timedwait ends with EINTR
 * when another process's signal runs a handler. */
static void single_threaded_child(void) {
  int p[2];
  if (pipe(p)) exit(1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    install(SIGUSR1, SA_RESTART);
    sem_t s;
    sem_init(&s, 0, 0);
    close(p[0]);
    if (write(p[1], "x", 1) != 1) _exit(3);
    struct timespec d = in_secs(60);
    int rc = sem_timedwait(&s, &d);
    _exit(rc == -1 && errno == EINTR ? 0 : 1);
  }
  close(p[1]);
  char b;
  if (read(p[0], &b, 1) != 1) exit(1);
  close(p[0]);
  int st = 0;
  /* the child may not be waiting yet: signal it until it ends (a handler
   * that runs before the wait leaves the wait to the next one) */
  for (int i = 0; i < 200 && waitpid(pid, &st, WNOHANG) == 0; i++) {
    kill(pid, SIGUSR1);
    struct timespec d = {0, 100 * 1000 * 1000};
    nanosleep(&d, NULL);
  }
  if (waitpid(pid, &st, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  printf("single-threaded sem_timedwait: %s\n",
         WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "EINTR" : "no EINTR");
}

int main(void) {
  single_threaded_child(); /* before any thread: the runtime does not run yet */
  sem_init(&ran, 0, 0);
  for (int process = 0; process < 2; process++) {
    during("mutex_lock", lock_plain, HOLD_MUTEX, process);
    during("mutex_timedlock", lock_timed, HOLD_MUTEX, process);
    during("rwlock_rdlock", lock_read, HOLD_WRITE, process);
    during("rwlock_wrlock", lock_write, HOLD_READ, process);
    during("rwlock_timedwrlock", lock_timedwrite, HOLD_READ, process);
    during("barrier_wait", at_barrier, HOLD_BARRIER, process);
  }
  during("join", joins, HOLD_JOIN, 0);
  to_computing(0);
  to_computing(1);
  raise_blocked();
  sem_restart(0, 0);
  sem_restart(1, 0);
  sem_restart(0, 1);
  sem_restart(1, 1);
  return 0;
}
