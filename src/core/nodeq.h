/* Placement by data: one ready queue per NUMA node, the node a task's data
 * lives on, and the order in which an idle worker looks at other nodes.
 * The scheduler (sched.c) calls it where ready work is placed and where an
 * idle worker looks for work; with one node in use it is off and costs
 * one predictable branch on those paths. Design: docs/numa.md.
 *
 * Invariants:
 *  1. A fiber is in at most one queue: a node queue, a worker's ready
 *     queue, mail, or a deque; a node queue holds only ready fibers, each
 *     with fiber->node equal to the queue's node.
 *  2. ito__nodeq_on and the tables (worker nodes, node order) are set at
 *     start, before any worker runs, and not changed while the runtime
 *     runs; with ito__nodeq_on 0 no fiber is ever put on a node queue.
 *  3. A fiber's node is -1 (no data: work-first, as without NUMA) or a
 *     node in use; it is set when its thread starts (its data's node, else
 *     its creator's) and kept across parks and wake-ups; always -1 while
 *     placement is off.
 *  4. Each fiber started with data (PLACED_KNOWN, PLACED_UNKNOWN) is
 *     counted once: when a worker takes it from a node queue, or when it
 *     starts if it never goes to one: on its data's node, on another node,
 *     or with unknown data. */
#ifndef ITO_CORE_NODEQ_H
#define ITO_CORE_NODEQ_H

#include <ito/ito.h>

#include "base.h"
#include "worker.h"

/* fiber->placed: not started with data, started with data on a known
 * node or on none known, counted. */
enum { PLACED_NONE = 0, PLACED_KNOWN, PLACED_UNKNOWN, PLACED_COUNTED };

/* A fiber's node (invariant 3), -1 for none. */
static inline int fiber_node(const fiber *f) { return (int)f->node1 - 1; }
static inline void fiber_set_node(fiber *f, int node) { f->node1 = (uint16_t)(node + 1); }
/* What the placement counts (invariant 4). */
enum { NQ_LOCAL = 0, NQ_REMOTE, NQ_UNKNOWN, NQ_KINDS };

/* Placement by node is on (invariant 2): more than one node in use. */
extern int ito__nodeq_on HIDDEN;

/* The worker whose node worker id counts as on: itself, or for an extra
 * worker (id past the nworkers configured: the monitor's, standing in
 * for blocked workers, bound to no CPU) worker id mod nworkers, which has
 * a node with workers. */
static inline int ito__nodeq_counted_as(int id, int nworkers) {
  return id < nworkers || nworkers <= 0 ? id : id % nworkers;
}

/* At each start, once the workers exist and the places are set up. */
HIDDEN void ito__nodeq_setup(int nworkers);
/* The node of worker id (0 when off). */
HIDDEN int ito__nodeq_worker_node(int id);
/* The node holding most of the bytes of acc (out and inout counted
 * double); ties go to tie_node when it is among them, else to the lowest
 * node. -1 when no address's node is known. */
HIDDEN int ito__nodeq_score(const struct ito_access *acc, int n, int tie_node);
/* Puts ready fiber f (f->node >= 0, no home) on its node's queue and wakes
 * a worker for it (docs/idle.md's P2 and P3, and a sleeper of that node
 * first). Only while ito__nodeq_on. */
HIDDEN void ito__nodeq_push(fiber *f);
/* For worker w with nothing of its own: its node's queue, then the other
 * nodes' nearest first, each only above its threshold unless w has looked
 * for work for long enough: since *idle_t0 (CLOCK_MONOTONIC ns), which it
 * sets when 0 and it first passes over a queue. NULL if none. */
HIDDEN fiber *ito__nodeq_take(worker *w, long long *idle_t0);

/* A victim for a steal by w: a random worker of w's node when `near`, else
 * of the nearest other node that has workers (NULL: none). */
HIDDEN worker *ito__nodeq_victim(worker *w, uint64_t r, bool near);
/* Any node queue not empty (the idle protocol's scan). */
HIDDEN bool ito__nodeq_any(void);
/* Counts f, about to run on w (NULL: a thread that is not a worker), if it
 * was started with data and not yet counted (invariant 4). */
HIDDEN void ito__nodeq_count_run(worker *w, fiber *f);
/* Counts a piece of work with data on node (-1: none known) run by w
 * (NULL: not a worker), which is not a fiber of its own (a task run as a
 * call: ito__dropin_run_on_node). */
HIDDEN void ito__nodeq_count(worker *w, int node);
/* Worker r (modulo their number) of node, NULL if none or placement is off. */
HIDDEN worker *ito__nodeq_worker_on(int node, unsigned r);
/* The counts since the process started, summed over the workers. */
HIDDEN void ito__nodeq_counts(uint64_t out[NQ_KINDS]);

#endif
