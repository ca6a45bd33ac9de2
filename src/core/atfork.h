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

HIDDEN void ito__atfork_prepare(void);
HIDDEN void ito__atfork_parent(void);
HIDDEN void ito__atfork_child(void);
/* Between a prepare that acted and its parent or child part. */
HIDDEN int ito__atfork_active(void);

/* Each module's part is its own, registered with ITO_FORK_PART
 * (forkpart.h). */

#endif
