/* Signals per thread (docs/signals.md): an ito thread has its own mask and
 * its own pending signals, and its handlers run in its own context; the
 * runtime keeps the program's actions and routes what reaches a worker
 * between threads (src/core/signal.c). Other threads, and the process
 * before the runtime runs, get libc. Results as glibc's. */
#include "shim.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

static int ito_thread(void) { return ito_self() != 0; }

ITO_PT_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) {
  ITO_PT_ENTER(pthread_sigmask, how, set, old);
  if (!ito_thread()) return ito__pt_real.pthread_sigmask(how, set, old);
  return ito__dropin_sigmask(how, set, old);
}

ITO_PT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old) {
  ITO_PT_ENTER(sigprocmask, how, set, old);
  if (!ito_thread()) return ito__pt_real.sigprocmask(how, set, old);
  int rc = ito__dropin_sigmask(how, set, old);
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

ITO_PT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  ITO_PT_ENTER(sigaction, sig, act, old);
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

ITO_PT_EXPORT sighandler_t signal(int sig, sighandler_t h) {
  ITO_PT_ENTER(signal, sig, h);
  return set_handler(sig, h, SA_RESTART);
}

ITO_PT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) {
  ITO_PT_ENTER(bsd_signal, sig, h);
  return set_handler(sig, h, SA_RESTART);
}

ITO_PT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h) {
  ITO_PT_ENTER(sysv_signal, sig, h);
  return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

ITO_PT_EXPORT int sigpending(sigset_t *set) {
  ITO_PT_ENTER(sigpending, set);
  if (!ito_thread()) return ito__pt_real.sigpending(set);
  ito__dropin_sigpending(set);
  return 0;
}

/* raise: the signal is the calling thread's own (glibc sends it to the OS
 * thread, where a blocked one would stay pending for whichever thread runs
 * there next); unblocked, its handler has run when raise returns. */
ITO_PT_EXPORT int raise(int sig) {
  ITO_PT_ENTER(raise, sig);
  if (!ito_thread()) return ito__pt_real.raise(sig);
  int rc = ito__dropin_sigsend(ito_self(), sig, NULL);
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

ITO_PT_EXPORT int sigsuspend(const sigset_t *mask) {
  ITO_PT_ENTER(sigsuspend, mask);
  if (!ito__dropin_can_park()) return ito__pt_real.sigsuspend(mask);
  ito__pt_testcancel();
  int rc = ito__dropin_sigsuspend(mask);
  ito__pt_testcancel();
  return rc;
}

ITO_PT_EXPORT int pause(void) {
  ITO_PT_ENTER(pause);
  if (!ito__dropin_can_park()) return ito__pt_real.pause();
  sigset_t now;
  ito__dropin_sigmask(SIG_BLOCK, NULL, &now);
  ito__pt_testcancel();
  int rc = ito__dropin_sigsuspend(&now);
  ito__pt_testcancel();
  return rc;
}

/* glibc's siginterrupt changes the action through its internal sigaction */
ITO_PT_EXPORT int siginterrupt(int sig, int flag) {
  ITO_PT_ENTER(siginterrupt, sig, flag);
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

/* ---- System V and BSD calls on masks and actions ---------------------------------------------
 * glibc's change the mask and the action through its internal sigprocmask
 * and sigaction, which the shim does not see: here they go through the
 * thread's own mask and ito's actions, with glibc's results. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* (they are, and programs call them) \
                                                            */
static int mask_one(int how, int sig) {
  sigset_t s;
  sigemptyset(&s);
  if (sigaddset(&s, sig) < 0) return -1; /* (EINVAL, as glibc's) */
  return sigprocmask(how, &s, NULL);
}

ITO_PT_EXPORT int sighold(int sig) {
  ITO_PT_ENTER(sighold, sig);
  return mask_one(SIG_BLOCK, sig);
}

ITO_PT_EXPORT int sigrelse(int sig) {
  ITO_PT_ENTER(sigrelse, sig);
  return mask_one(SIG_UNBLOCK, sig);
}

ITO_PT_EXPORT int sigignore(int sig) {
  ITO_PT_ENTER(sigignore, sig);
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_handler = SIG_IGN;
  sigemptyset(&a.sa_mask);
  return sigaction(sig, &a, NULL);
}

/* System V: SIG_HOLD blocks the signal; any other disposition becomes the
 * action (empty mask, no flags) and unblocks it. Returns SIG_HOLD if it
 * was blocked, else the previous handler. */
ITO_PT_EXPORT sighandler_t sigset(int sig, sighandler_t disp) {
  ITO_PT_ENTER(sigset, sig, disp);
  sigset_t s, old;
  sigemptyset(&s);
  if (sigaddset(&s, sig) < 0) return SIG_ERR;
  struct sigaction a, oa;
  if (disp == SIG_HOLD) {
    if (sigprocmask(SIG_BLOCK, &s, &old) < 0) return SIG_ERR;
    if (sigismember(&old, sig)) return SIG_HOLD;
    if (sigaction(sig, NULL, &oa) < 0) return SIG_ERR;
    return oa.sa_handler;
  }
  memset(&a, 0, sizeof a);
  a.sa_handler = disp;
  sigemptyset(&a.sa_mask);
  if (sigaction(sig, &a, &oa) < 0) return SIG_ERR;
  if (sigprocmask(SIG_UNBLOCK, &s, &old) < 0) return SIG_ERR;
  return sigismember(&old, sig) ? SIG_HOLD : oa.sa_handler;
}

/* The old BSD masks: an int of the first 31 signals' bits. */
static int bsd_mask(const sigset_t *s) {
  int m = 0;
  for (int i = 1; i < 32; i++)
    if (sigismember(s, i) == 1) m |= 1 << (i - 1);
  return m;
}
static void bsd_set(sigset_t *s, int m) {
  sigemptyset(s);
  for (int i = 1; i < 32; i++)
    if (m & (1 << (i - 1))) sigaddset(s, i);
}

ITO_PT_EXPORT int __sigpause(int sig_or_mask, int is_sig) {
  ITO_PT_ENTER(__sigpause, sig_or_mask, is_sig);
  sigset_t s;
  if (is_sig) {
    sigprocmask(SIG_BLOCK, NULL, &s);
    if (sigdelset(&s, sig_or_mask) < 0) return -1;
  } else {
    bsd_set(&s, sig_or_mask);
  }
  return sigsuspend(&s);
}

ITO_PT_EXPORT int __xpg_sigpause(int sig) {
  ITO_PT_ENTER(__xpg_sigpause, sig);
  return __sigpause(sig, 1);
}

/* (glibc's sigpause symbol is the BSD one, a mask; <signal.h> names the
 * POSIX one sigpause too, as __xpg_sigpause) */
ITO_PT_EXPORT int ito__pt_bsd_sigpause(int mask) __asm__("sigpause");
ITO_PT_EXPORT int ito__pt_bsd_sigpause(int mask) {
  if (UNLIKELY(ito__pt_to_libc())) return ito__pt_real.sigpause(mask);
  return __sigpause(mask, 0);
}

ITO_PT_EXPORT int sigblock(int mask) {
  ITO_PT_ENTER(sigblock, mask);
  sigset_t s, old;
  bsd_set(&s, mask);
  if (sigprocmask(SIG_BLOCK, &s, &old) < 0) return -1;
  return bsd_mask(&old);
}

ITO_PT_EXPORT int sigsetmask(int mask) {
  ITO_PT_ENTER(sigsetmask, mask);
  sigset_t s, old;
  bsd_set(&s, mask);
  if (sigprocmask(SIG_SETMASK, &s, &old) < 0) return -1;
  return bsd_mask(&old);
}

ITO_PT_EXPORT int siggetmask(void) {
  ITO_PT_ENTER(siggetmask);
  return sigblock(0);
}

/* ---- sigaltstack: per thread --------------------------------------------------------------------
 * The kernel keeps one alternate stack per OS thread, and ito's workers
 * keep their own there (the overflow handler runs on it). An ito thread's
 * sigaltstack is its own record, read back as set; a handler with
 * SA_ONSTACK runs on the worker's alternate stack, which is always there
 * (64 KiB). */
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31) /* (Linux 4.7; not in glibc 2.36's headers) */
#endif
static ito_key_t altstack_key;
static pthread_once_t altstack_once = PTHREAD_ONCE_INIT;
static void altstack_key_make(void) {
  if (ito__dropin_key_create(&altstack_key, free)) altstack_key = (ito_key_t)-1;
}

ITO_PT_EXPORT int sigaltstack(const stack_t *ss, stack_t *old) {
  ITO_PT_ENTER(sigaltstack, ss, old);
  if (!ito_thread()) return ito__pt_real.sigaltstack(ss, old);
  pthread_once(&altstack_once, altstack_key_make);
  if (altstack_key == (ito_key_t)-1) return ito__pt_real.sigaltstack(ss, old);
  stack_t *mine = ito__dropin_key_get(altstack_key);
  char *sp = (char *)__builtin_frame_address(0);
  int on = mine && !(mine->ss_flags & SS_DISABLE) && sp >= (char *)mine->ss_sp &&
           sp < (char *)mine->ss_sp + mine->ss_size;
  if (ss) {
    int flags = (int)((unsigned)ss->ss_flags & ~SS_AUTODISARM);
    if (flags != 0 && flags != SS_DISABLE) {
      errno = EINVAL;
      return -1;
    }
    if (on) {
      errno = EPERM;
      return -1;
    }
    if (!(ss->ss_flags & SS_DISABLE) && ss->ss_size < (size_t)MINSIGSTKSZ) {
      errno = ENOMEM;
      return -1;
    }
  }
  stack_t prev = mine ? *mine : (stack_t){.ss_sp = NULL, .ss_flags = SS_DISABLE, .ss_size = 0};
  if (on) prev.ss_flags |= SS_ONSTACK;
  if (ss) {
    if (!mine) {
      mine = malloc(sizeof *mine);
      if (!mine || ito__dropin_key_set(altstack_key, mine)) {
        free(mine);
        errno = ENOMEM;
        return -1;
      }
    }
    *mine = *ss;
    if (ss->ss_flags & SS_DISABLE) *mine = (stack_t){.ss_sp = NULL, .ss_flags = SS_DISABLE};
  }
  if (old) *old = prev;
  return 0;
}

/* ---- longjmp out of a handler ---------------------------------------------------------------
 * glibc's siglongjmp (and longjmp, _longjmp: the same code) restores a
 * saved mask through its internal sigprocmask: here it becomes the
 * thread's mask first. A jump may also leave a handler's frame: the
 * thread is then no longer inside one (ito__dropin_jumped). */
static void before_jump(void *env) {
  if (!ito_thread()) return;
  struct __jmp_buf_tag *b = env;
  if (b->__mask_was_saved) ito__dropin_sigmask(SIG_SETMASK, &b->__saved_mask, NULL);
  ito__dropin_jumped();
}

ITO_PT_EXPORT void ito__pt_longjmp_(void *env, int val) __asm__("longjmp")
    __attribute__((noreturn));
ITO_PT_EXPORT void ito__pt_longjmp_(void *env, int val) {
  if (!ito__pt_to_libc()) before_jump(env);
  ito__pt_real.longjmp(env, val);
  __builtin_unreachable();
}

ITO_PT_EXPORT void ito__pt__longjmp_(void *env, int val) __asm__("_longjmp")
    __attribute__((noreturn));
ITO_PT_EXPORT void ito__pt__longjmp_(void *env, int val) {
  if (!ito__pt_to_libc()) before_jump(env);
  ito__pt_real._longjmp(env, val);
  __builtin_unreachable();
}

ITO_PT_EXPORT void ito__pt_siglongjmp_(void *env, int val) __asm__("siglongjmp")
    __attribute__((noreturn));
ITO_PT_EXPORT void ito__pt_siglongjmp_(void *env, int val) {
  if (!ito__pt_to_libc()) before_jump(env);
  ito__pt_real.siglongjmp(env, val);
  __builtin_unreachable();
}

ITO_PT_EXPORT void ito__pt_longjmp_chk_(void *env, int val) __asm__("__longjmp_chk")
    __attribute__((noreturn));
ITO_PT_EXPORT void ito__pt_longjmp_chk_(void *env, int val) {
  if (!ito__pt_to_libc()) before_jump(env);
  ito__pt_real.__longjmp_chk(env, val);
  __builtin_unreachable();
}
