/* What the drop-in test programs share: a failure report naming the
 * program (DROPIN_PROG, defined before this header), errno values by name
 * for the deterministic output both.sh compares, and a check of a pthread
 * return code. Plain C, no ito header: the programs must stay ordinary
 * pthread programs. */
#ifndef ITO_DROPIN_H
#define ITO_DROPIN_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#ifndef DROPIN_PROG
#error "define DROPIN_PROG (the program's name) before including dropin.h"
#endif

#define FAIL(...)                                          \
  do {                                                     \
    fprintf(stderr, DROPIN_PROG ": FAILED: " __VA_ARGS__); \
    fputc('\n', stderr);                                   \
    exit(1);                                               \
  } while (0)

static inline const char *code_name(int rc) {
  switch (rc) {
    case 0:
      return "0";
    case EAGAIN:
      return "EAGAIN";
    case EBUSY:
      return "EBUSY";
    case EDEADLK:
      return "EDEADLK";
    case EINVAL:
      return "EINVAL";
    case ENOMEM:
      return "ENOMEM";
    case ENOTSUP:
      return "ENOTSUP";
    case EPERM:
      return "EPERM";
    case ESRCH:
      return "ESRCH";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EPIPE:
      return "EPIPE";
    case ECONNRESET:
      return "ECONNRESET";
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case ENOTCONN:
      return "ENOTCONN";
    case EINPROGRESS:
      return "EINPROGRESS";
    case EINTR:
      return "EINTR";
    case EBADF:
      return "EBADF";
    default: {
      static char buf[32];
      snprintf(buf, sizeof buf, "error %d", rc);
      return buf;
    }
  }
}

/* "N bytes" or the errno's name: what a read or write gave, for a failure
 * message (the program ends after it). */
static inline const char *io_result(ssize_t k, int e) {
  static char buf[48];
  if (k >= 0) {
    snprintf(buf, sizeof buf, "%zd bytes", k);
    return buf;
  }
  return code_name(e);
}

/* errno as set by the call just made. Under libito-pthread.so a call that
 * parks may resume the thread on another OS thread, and since
 * __errno_location is a const function the compiler may read errno through
 * an address it computed before the call, in the old thread's TLS
 * (docs/dropin.md section 5, hazard (b)); a function of its own computes it
 * afresh. */
__attribute__((noinline, unused)) static int errno_now(void) { return errno; }

/* A pthread call that must succeed. */
/* Installs fn as sig's handler (flags: sa_flags), or fails the program. */
static inline void catch_signal(int sig, void (*fn)(int), int flags) {
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_handler = fn;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  if (sigaction(sig, &a, NULL)) FAIL("sigaction %d", sig);
}

/* pthread_sigmask(how) of the one signal sig, or fails the program. */
static inline void mask_signal(int how, int sig) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  int rc = pthread_sigmask(how, &s, NULL);
  if (rc) FAIL("pthread_sigmask: %s", code_name(rc));
}

static inline void must(const char *label, int rc) {
  if (rc != 0) FAIL("%s gave %s", label, code_name(rc));
}

/* *t = now on clock plus ms milliseconds. */
static inline void deadline_in(clockid_t clock, long ms, struct timespec *t) {
  clock_gettime(clock, t);
  t->tv_sec += ms / 1000;
  t->tv_nsec += (ms % 1000) * 1000000L;
  if (t->tv_nsec >= 1000000000L) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000L;
  }
}

/* Is a earlier than b? */
static inline int ts_before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* A bound on a whole run that no state of the program can stop: a process
 * forked before the program makes its first thread, which sleeps `secs`
 * seconds, then prints "PROG: FAILED: <what> (no end after N s)" and kills
 * the program. A program whose every thread waits (in the kernel, or parked)
 * cannot take a signal of its own, so alarm() alone may never fire.
 * dropin_watchdog_end stops it. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static inline pid_t dropin_watchdog(int secs, const char *what) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) FAIL("fork (watchdog)");
  if (pid > 0) return pid;
  unsigned left = (unsigned)secs;
  while (left) left = sleep(left);
  if (getppid() == parent) {
    fprintf(stderr, DROPIN_PROG ": FAILED: %s (no end after %d s)\n", what, secs);
    kill(parent, SIGKILL);
  }
  _exit(0);
}
static inline void dropin_watchdog_end(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

#endif
