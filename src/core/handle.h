/* Thread handles (handle.c): a slot in a table of every descriptor ever
 * made, and the slot's generation. Invariants:
 *  1. A descriptor keeps its slot for as long as its memory is the
 *     runtime's (pool and own stacks: for ever; the caller's stack: until
 *     the thread is released).
 *  2. A slot's generation changes exactly when its thread is released
 *     (ito__handle_retire), so handles of earlier threads fail.
 *  3. A handle is checked against the table before its descriptor is
 *     read. */
#ifndef ITO_CORE_HANDLE_H
#define ITO_CORE_HANDLE_H

#include <ito/ito.h>

#include "base.h"
#include "thread.h"

/* Gives t a slot (t->idx); 0 or EAGAIN. */
HIDDEN int ito__handle_register(ithread *t);
/* t's memory goes back to its owner: its handles fail, its slot is reused. */
HIDDEN void ito__handle_unregister(ithread *t);
/* t's thread is over: its handles fail from now on (invariant 2). */
HIDDEN void ito__handle_retire(ithread *t);
/* The handle of t's current thread. */
HIDDEN ito_thread_t ito__handle(ithread *t);
/* The descriptor a handle names, or NULL (a stale or forged handle). */
HIDDEN ithread *ito__thread_of(ito_thread_t h);
/* After reading t's flags or sync through h: does h still name t? */
HIDDEN bool ito__still_current(ithread *t, ito_thread_t h);

#endif
