/* The parts the runtime's modules play in fork(): each module registers
 * its own (ITO_FORK_PART) where its state is, and atfork.c runs them all
 * through this registry, which includes no module. Design: docs/dropin.md,
 * "fork"; the locks' ranks: docs/locks.md.
 *
 * Invariants:
 *  1. Before the fork every part's lock(1) runs in ascending lock_rank,
 *     after it lock(0) in descending lock_rank, in the parent and in the
 *     child alike: what the child keeps is not half changed by another OS
 *     thread of the parent.
 *  2. In the child, once the locks are let go, every part's child()
 *     runs in ascending child_order, on the forking thread (pinned, on its
 *     worker, renumbered 0 by the part of runtime.c).
 *  3. Two parts never share a lock_rank or a child_order. */
#ifndef ITO_CORE_FORKPART_H
#define ITO_CORE_FORKPART_H

#include "base.h"

struct worker;
struct ithread;

struct ito_fork_part {
  int lock_rank;          /* the rank (docs/locks.md) of what lock takes */
  void (*lock)(int take); /* NULL: no lock */
  int child_order;
  void (*child)(struct worker *w, struct ithread *self); /* NULL: nothing */
};

/* Registers a part (in the ito_fork registry, base.h). */
#define ITO_FORK_PART(id, ...) ITO_REGISTER(ito_fork, struct ito_fork_part, id, {__VA_ARGS__})

/* The child parts' order (invariant 2), one place for all of them. */
enum {
  FORK_THREADS = 10, /* thread.c: other threads' descriptors become ghosts */
  FORK_RUNTIME = 20, /* runtime.c: the caller's worker alone, worker 0 */
  FORK_NODEQ = 25,   /* nodeq.c: empty node queues for one worker */
  FORK_TIMERS = 30,  /* timer.c: every armed timer was another thread's */
  FORK_SIGNALS = 40, /* signal.c: waiters and late lists were the parent's */
  FORK_IO = 45,      /* io/poller.c: the I/O layer's own epoll instance, new */
  FORK_POLL = 50,    /* poll.c: the poll sleeper's set, the sources added again */
  FORK_TLS = 60,     /* tls.c: the caller's own block, and glibc's thread list */
  FORK_MONITOR = 70, /* monitor.c: a new monitor at the first thread creation */
  FORK_PREEMPT = 80, /* preempt.c: its table's locks */
};

/* Nonzero in a child of a fork taken while the runtime ran. */
extern int ito__forked HIDDEN;

/* Runs every part's lock(take) (invariant 1). */
HIDDEN void ito__fork_parts_lock(int take);
/* The part whose lock has rank `rank`, or NULL. */
HIDDEN const struct ito_fork_part *ito__fork_part_ranked(int rank);
/* Runs every part's child() (invariant 2). */
HIDDEN void ito__fork_parts_child(struct worker *w, struct ithread *self);

#endif
