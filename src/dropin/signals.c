/* Signals per lightweight thread for the drop-in libraries
 * (src/core/signal.h, docs/signals.md). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/cpuclock.h"
#include "../core/handle.h"
#include "../core/monitor.h"
#include "../core/preempt.h"
#include "../core/runtime.h"
#include "../core/signal.h"
#include "../core/thread.h"
#include "../core/worker.h"

#include <errno.h>
#include <limits.h>

_Static_assert(ITO_DROPIN_CANCEL_PENDING == CANCEL_PENDING &&
                   ITO_DROPIN_CANCEL_DISABLED == CANCEL_DISABLED &&
                   ITO_DROPIN_CANCEL_ASYNC == CANCEL_ASYNC &&
                   ITO_DROPIN_CANCEL_ACTING == CANCEL_ACTING,
               "the drop-in's cancellation bits");

void ito__dropin_sig_enable(void) { ito__sig_enable(); }

int ito__dropin_sigmask(int how, const sigset_t *set, sigset_t *old) {
  return ito__sig_mask(how, set, old);
}

int ito__dropin_sigsend(ito_thread_t h, int sig, const union sigval *value) {
  if (!h) { /* the root (the program's main thread) */
    ithread *r = ito__root_thread();
    return r ? ito__sig_send(r, sig, value) : ESRCH;
  }
  ithread *t = ito__thread_of(h);
  if (!t || !ito__still_current(t, h)) return ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  if (s == TS_CLAIMED) return ESRCH;
  if (s >= TS_DONE) /* over, not yet joined: as glibc (2.34 on), pthread_kill succeeds sending
                       nothing (its own signals refused), pthread_sigqueue finds no thread */
    return value ? ESRCH : SIG_GLIBC_OWN(sig) ? EINVAL : 0;
  return ito__sig_send(t, sig, value);
}

int ito__dropin_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return ito__sig_action(sig, act, old);
}

void ito__dropin_sigpending(sigset_t *out) { ito__sig_pending(out); }

int ito__dropin_sigsuspend(const sigset_t *mask) { return ito__sig_suspend(mask); }

int ito__dropin_sig_restartable(void) { return ito__sig_restartable(); }

void ito__dropin_jumped(void) {
  worker *w = cur_worker();
  if (w && w->cur) w->cur->in_handler = 0;
}

/* ---- cancellation ------------------------------------------------------------------------- */

int ito__dropin_cancels;

int ito__dropin_cancel(ito_thread_t h) {
  ithread *t;
  if (!h) {
    t = ito__root_thread();
  } else {
    t = ito__thread_of(h);
    if (t && !ito__still_current(t, h)) t = NULL;
    int s = t ? __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) : TS_CLAIMED;
    if (s == TS_CLAIMED) return ESRCH;
    if (s >= TS_DONE) return 0; /* over, not yet joined: nothing to cancel (glibc 2.34 on) */
  }
  if (!t) return ESRCH;
  if (!__atomic_load_n(&ito__dropin_cancels, __ATOMIC_RELAXED))
    __atomic_store_n(&ito__dropin_cancels, 1, __ATOMIC_RELEASE);
  int c = __atomic_fetch_or(&t->cancel, CANCEL_PENDING, __ATOMIC_ACQ_REL);
  if (!(c & CANCEL_DISABLED)) {
    ito__sig_alert(t);         /* its interruptible wait ends */
    ito__join_cancel(t);       /* and its join */
    ito__monitor_kwait_poke(); /* and its wait in the kernel (docs/monitor.md) */
    ito__preempt_cancel(t);    /* running with the asynchronous type: now */
  }
  return 0;
}

int *ito__dropin_cancel_word(void) {
  worker *w = cur_worker();
  ithread *t = running_thread(w);
  return t ? &t->cancel : NULL;
}

/* ---- CPU clocks of threads ---------------------------------------------------------------
 * A thread's clock id: negative with the low three bits 7, which the
 * kernel never makes (CPUCLOCK_PERTHREAD with clock 3, past CPUCLOCK_MAX),
 * and the descriptor's slot above them. */
#define CLOCK_MARK 7
static clockid_t clock_of(const ithread *t) {
  return (clockid_t)(INT_MIN | (int)(t->idx << 3) | CLOCK_MARK);
}

int ito__dropin_cpuclock(ito_thread_t h, clockid_t *out) {
  ithread *t = h ? ito__thread_of(h) : ito__root_thread();
  if (!t || (h && !ito__still_current(t, h))) return ESRCH;
  if (t->idx >= (1u << 28)) return ENOTSUP; /* (2^28 descriptors: never seen) */
  ito__cpuclock_enable();
  *out = clock_of(t);
  return 0;
}

int ito__dropin_cpuclock_read(clockid_t c, struct timespec *ts) {
  ithread *t;
  if (c == CLOCK_THREAD_CPUTIME_ID) {
    worker *w = cur_worker();
    t = running_thread(w);
    if (!t) return ENOENT;
    ito__cpuclock_enable();
  } else if (c < 0 && (c & 7) == CLOCK_MARK) {
    uint32_t idx = (uint32_t)(c & INT_MAX) >> 3;
    struct handle_slot *s = idx && idx < LOAD_ACQ(&ito__handle_nslots) ? handle_slot_at(idx) : NULL;
    t = s ? LOAD_ACQ(&s->t) : NULL;
    if (!t || !LOAD_ACQ(&t->sig_live)) return EINVAL; /* its thread is gone */
  } else {
    return ENOENT; /* not a clock of ito's */
  }
  long long ns = ito__thread_cpu_ns(t);
  if (ns < 0) ns = 0;
  ts->tv_sec = ns / 1000000000LL;
  ts->tv_nsec = ns % 1000000000LL;
  return 0;
}
