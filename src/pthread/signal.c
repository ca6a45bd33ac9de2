/* Signals per thread (docs/signals.md): an ito thread has its own mask and
 * its own pending signals, and its handlers run in its own context; the
 * runtime keeps the program's actions and routes what reaches a worker
 * between threads (src/core/signal.c). Other threads, and the process
 * before the runtime runs, get libc. Results as glibc's. */
#include "shim.h"

#include <string.h>

static int ito_thread(void) { return ito_self() != 0; }

SHIM_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  SHIM_ENTER(pthread_sigmask, how, set, old);
  if (!ito_thread()) return shim_real.pthread_sigmask(how, set, old);
  return ito__dropin_sigmask(how, set, old);
}

SHIM_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  SHIM_ENTER(sigprocmask, how, set, old);
  if (!ito_thread()) return shim_real.sigprocmask(how, set, old);
  int rc = ito__dropin_sigmask(how, set, old);
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

SHIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  SHIM_ENTER(sigaction, sig, act, old);
  int rc = ito__dropin_sigaction(sig, act, old);
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

/* signal(): BSD semantics, as glibc's (SA_RESTART, the handler stays). */
static sighandler_t set_handler(int sig, sighandler_t h, int flags) {
  struct sigaction a, old;
  memset(&a, 0, sizeof a);
  a.sa_handler = h;
  a.sa_flags = flags;
  sigemptyset(&a.sa_mask);
  if (!(flags & SA_NODEFER)) sigaddset(&a.sa_mask, sig);
  int rc = ito__dropin_sigaction(sig, &a, &old);
  if (rc) {
    errno = rc;
    return SIG_ERR;
  }
  return old.sa_handler;
}

SHIM_EXPORT sighandler_t signal(int sig, sighandler_t h) {
  SHIM_ENTER(signal, sig, h);
  return set_handler(sig, h, SA_RESTART);
}

SHIM_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) {
  SHIM_ENTER(bsd_signal, sig, h);
  return set_handler(sig, h, SA_RESTART);
}

SHIM_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) {
  SHIM_ENTER(sysv_signal, sig, h);
  return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

SHIM_EXPORT int sigpending(sigset_t *set) {
  SHIM_ENTER(sigpending, set);
  if (!ito_thread()) return shim_real.sigpending(set);
  ito__dropin_sigpending(set);
  return 0;
}

SHIM_EXPORT int sigsuspend(const sigset_t *mask) {
  SHIM_ENTER(sigsuspend, mask);
  if (!ito__dropin_can_park()) return shim_real.sigsuspend(mask);
  shim_testcancel();
  int rc = ito__dropin_sigsuspend(mask);
  shim_testcancel();
  return rc;
}

SHIM_EXPORT int pause(void) {
  SHIM_ENTER(pause);
  if (!ito__dropin_can_park()) return shim_real.pause();
  sigset_t now;
  ito__dropin_sigmask(SIG_BLOCK, NULL, &now);
  shim_testcancel();
  int rc = ito__dropin_sigsuspend(&now);
  shim_testcancel();
  return rc;
}

/* glibc's siginterrupt changes the action through its internal sigaction */
SHIM_EXPORT int siginterrupt(int sig, int flag) {
  SHIM_ENTER(siginterrupt, sig, flag);
  struct sigaction a;
  int rc = ito__dropin_sigaction(sig, NULL, &a);
  if (!rc) {
    if (flag)
      a.sa_flags &= ~SA_RESTART;
    else
      a.sa_flags |= SA_RESTART;
    rc = ito__dropin_sigaction(sig, &a, NULL);
  }
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}
