/* The profiler: work, span, parallelism and where the workers' time went,
 * for any program that runs on ito (ITO_PROFILE). A recorder on the event
 * hooks (hooks.h); design, figures and costs: docs/profile.md.
 *
 * Invariants:
 *  1. Recording touches only the recording worker's own state (struct
 *     pworker), the descriptors the event names (a fiber's prof_* fields,
 *     a traced group's recorder word) and, for a fork record, the owner's
 *     shadow of its deque slot. No lock, no allocation, no system call on
 *     the recording path; the trace buffers are bounded, and what does not
 *     fit is counted, never the figures.
 *  2. A span is packed: the critical path's length in ticks above
 *     SPAN_KBITS, the number of forks on that path below (saturating).
 *     Every context (the code a worker runs) carries one; a fork's child
 *     keeps its parent's, the continuation gets it plus one fork; a join,
 *     a thread join and a wake-up take the maximum of both sides.
 *  3. A fork record's shadow slot (struct shadow) is written by the fork's
 *     owner after it published the record and before the child runs, and
 *     read once by whoever takes the record, who then clears it. The owner
 *     reuses the slot only after its child returned and either took the
 *     record back (nobody reads it) or saw it cleared.
 *  4. A worker's time from the profile's start is split, without gaps,
 *     into work (the program's code), the runtime's own code, idle time,
 *     blocked time and time off the CPU; each event closes the interval
 *     its worker was in. A strand's time is its time on the CPU: what the
 *     OS took of an interval moves to time off the CPU, and a worker's
 *     wait for a thief holding its deque's steal lock (ITO_EV_WAIT_THIEF)
 *     is the runtime's, so that neither lies on the path.
 *  5. Collapsing: at most one subtree collapses on a worker at a time,
 *     the child of a reported fork whose place (struct ckey) averaged less
 *     work than ITO_PROFILE_COLLAPSE; its forks are quiet (hooks.h,
 *     invariant 4) up to a budget. Any event of that worker other than
 *     the root's own return, and a region's bound, ends it first; its work
 *     is then its time on the CPU, its spawns the quiet forks it made
 *     (exact), its span that work times its place's span / work (both on
 *     the CPU) of the subtrees recorded whole (the first two, then one in
 *     SAMPLE_EVERY; a subtree measures its place, by the work its worker
 *     did meanwhile, only if nothing of the scheduler happened on its
 *     worker while it ran). Quiet forks it leaves in the deque become
 *     reported ones, with the collapse's end as their span, before the
 *     next collapse begins. */
#ifndef ITO_CORE_PROFILE_H
#define ITO_CORE_PROFILE_H

#include "base.h"

/* The profiler observes the runtime (observe.h), in profile.c: at each
 * start, after the configuration was read, it starts recording if
 * ITO_PROFILE asks for it (the recorder attaches on the first start); once
 * the runtime runs, the main thread, adopted by worker 0, runs the
 * program's code; at ito_finalize, once the workers stopped (and at exit
 * if the runtime still runs), it closes the run and writes what
 * ITO_PROFILE asked for. */

#endif
