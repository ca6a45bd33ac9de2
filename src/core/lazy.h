/* Lazy task creation: a fork runs its child at once on the forking stack
 * and publishes only a record of the parent's continuation; a stack and a
 * context switch are paid when somebody takes that record. Design:
 * docs/lazy-tasks.md.
 *
 * Invariants:
 *  1. Records of one task group are taken in program order, and at most
 *     one of them is in deques at a time (the continuation is one strand).
 *  2. A record is in the deque of the worker its fiber is running on, or
 *     it has been taken (sched.h, invariant 3 keeps it).
 *  3. tg->pending is 1 + the children whose continuation was taken + the
 *     children started as threads of their own (+ TG_TRACED while a
 *     recorder traces the group: set by a fork, possibly after the join
 *     began to wait, removed by the join after its wait); whoever brings
 *     the count without TG_TRACED to 0 resumes the joiner. A taker counts
 *     the split before the record's slot is cleared (deque.h, invariant
 *     2). */
#ifndef ITO_CORE_LAZY_H
#define ITO_CORE_LAZY_H

#include <ito/ito.h>

#include "base.h"
#include "fiber.h"
#include "record.h"

/* The taker of fork record rec (a thief holding the victim's lock, or the
 * owner with the forking fiber not running): counts the split and makes
 * nf the fiber its continuation starts on. */
HIDDEN void ito__claim_record(const struct ito_rec *rec, fiber *nf);
/* A child of tg whose continuation was taken is done. */
HIDDEN void ito__tg_child_done(ito_tg_t *tg);
/* The joiner of tg parks as f (on the scheduler): true if the children
 * are already done, and f must run on. */
HIDDEN bool ito__tg_park(ito_tg_t *tg, fiber *f);

#endif
