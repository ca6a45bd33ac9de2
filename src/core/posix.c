/* The switch's one hook for the process semantics the drop-in libraries
 * turn on (per-thread TLS, signal masks, CPU clocks), called behind one
 * flag (switch.h), so that the scheduler's switch names none of them: the
 * thread pointer of what runs next, its signal mask and its CPU clock.
 * The flag's rule is in posix_hooks.h. Design: docs/tls.md,
 * docs/signals.md. */
#include "posix_hooks.h"

#include "cpuclock.h"
#include "signal.h"
#include "switch.h"
#include "tls.h"

int ito__posix_on;

void ito__posix_update(void) { STORE_RLX(&ito__posix_on, ito__tls_mode || ito__sig_on); }

void ito__posix_enter(worker *w, fiber *f) {
  /* the thread pointer: f's block, or w's own for the scheduler (tls.h,
   * invariant 4) */
  if (ito__tls_mode) {
    void *tcb = f ? f->tls : NULL;
    if (tcb != w->tls_cur) ito__tls_switch(w, tcb);
  }
  if (ito__sig_on) {
    /* the signal mask of f's thread (signal.h, invariant 1); the scheduler
     * keeps the last */
    if (f && f->thread && f->thread->osmask != w->os_sigmask) ito__sig_apply(w, f->thread->osmask);
    if (UNLIKELY(LOAD_RLX(&ito__cpuclock_on))) ito__cpu_enter(w, f); /* (cpuclock.h) */
  }
}
