/* What a switch carries for the process semantics the drop-in libraries
 * turn on (per-thread TLS, signal masks, CPU clocks): one hook the switch
 * calls behind one flag (switch.h), so that the scheduler's switch names
 * none of them. Design: docs/tls.md, docs/signals.md.
 *
 * Invariants:
 *  1. ito__posix_on is nonzero exactly when ITO_TLS=thread is in force
 *     (ito__tls_mode) or signals per thread are on (ito__sig_on); it is
 *     recomputed (ito__posix_update) wherever either changes, before any
 *     worker runs a thread under the new setting. */
#ifndef ITO_CORE_POSIX_H
#define ITO_CORE_POSIX_H

#include "base.h"

/* Invariant 1: after ito__tls_mode or ito__sig_on changed. */
HIDDEN void ito__posix_update(void);

#endif
