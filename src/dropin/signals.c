/* Signals per lightweight thread for the drop-in libraries
 * (src/core/signal.h, docs/signals.md). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/handle.h"
#include "../core/runtime.h"
#include "../core/signal.h"
#include "../core/thread.h"
#include "../core/worker.h"

#include <errno.h>

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
  if (!t || !ito__still_current(t, h) ||
      __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) >= TS_DONE)
    return ESRCH;
  return ito__sig_send(t, sig, value);
}

int ito__dropin_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return ito__sig_action(sig, act, old);
}

void ito__dropin_sigpending(sigset_t *out) { ito__sig_pending(out); }

int ito__dropin_sigsuspend(const sigset_t *mask) { return ito__sig_suspend(mask); }

int ito__dropin_sig_restart(void) { return ito__sig_restartable(); }

/* ---- cancellation ------------------------------------------------------------------------- */

int ito__dropin_cancels;

int ito__dropin_cancel(ito_thread_t h) {
  ithread *t;
  if (!h) {
    t = ito__root_thread();
  } else {
    t = ito__thread_of(h);
    if (t && (!ito__still_current(t, h) || __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) >= TS_DONE))
      t = NULL;
  }
  if (!t) return ESRCH;
  if (!__atomic_load_n(&ito__dropin_cancels, __ATOMIC_RELAXED))
    __atomic_store_n(&ito__dropin_cancels, 1, __ATOMIC_RELEASE);
  int c = __atomic_fetch_or(&t->cancel, CANCEL_PENDING, __ATOMIC_ACQ_REL);
  if (!(c & CANCEL_DISABLED)) ito__sig_alert(t); /* its interruptible wait ends */
  return 0;
}

int *ito__dropin_cancel_word(void) {
  worker *w = cur_worker();
  ithread *t = w && w->cur ? w->cur->thread : NULL;
  return t ? &t->cancel : NULL;
}
