/* fork() with lightweight threads (atfork.c). The child of a fork has one
 * OS thread, the one that called fork, running the lightweight thread that
 * called it; POSIX has the child go on with that thread alone. Design:
 * docs/dropin.md, "fork".
 *
 * Invariants:
 *  1. Between ito__atfork_prepare and ito__atfork_parent/child the calling
 *     thread is pinned to its OS thread, runs on the TLS block glibc made
 *     for that OS thread (glibc's fork acts on THREAD_SELF; never worker
 *     0's, which is main's, while main may run elsewhere), and holds the runtime's
 *     locks that guard what the child keeps (keys, actions, fiber pools,
 *     handles, TLS slabs): no other OS thread is inside them at the fork.
 *  2. In the child, everything that belonged to the other threads is
 *     dropped, not run: queues, deques, timers, fd waiters, sigwait
 *     registrations; a descriptor of another thread is a ghost (TH_GHOST),
 *     and a wake of a ghost is dropped (sched.c).
 *  3. The child's runtime is one worker (the caller's, renumbered 0) and a
 *     new monitor, started at its first thread creation; when its last
 *     thread ends and it has no root, the
 *     process exits with status 0, as a process whose last thread ends. */
#ifndef ITO_CORE_ATFORK_H
#define ITO_CORE_ATFORK_H

#include "base.h"

struct worker;
struct ithread;

/* Nonzero in a child of a fork taken while the runtime ran. */
extern int ito__forked HIDDEN;

HIDDEN void ito__atfork_prepare(void);
HIDDEN void ito__atfork_parent(void);
HIDDEN void ito__atfork_child(void);
/* Between a prepare that acted and its parent or child part. */
HIDDEN int ito__atfork_active(void);

/* ---- each module's part ---------------------------------------------------------------- */
HIDDEN void ito__keys_fork_lock(int take);
HIDDEN void ito__sig_fork_lock(int take);
HIDDEN void ito__fibers_fork_lock(int take);
HIDDEN void ito__handles_fork_lock(int take);
HIDDEN void ito__tls_fork_lock(int take);
HIDDEN void ito__timers_after_fork(void);
HIDDEN void ito__sig_after_fork(struct ithread *self);
HIDDEN void ito__poll_after_fork(void);
HIDDEN void ito__monitor_after_fork(void);
/* The child's monitor, at its first thread creation (monitor.c). */
HIDDEN void ito__monitor_restart(void);
HIDDEN void ito__runtime_after_fork(struct worker *w);
HIDDEN void ito__threads_after_fork(struct ithread *self);
/* A thread ended in a child without a root: the last one ends the process. */
HIDDEN void ito__atfork_thread_ended(void);

#endif
