/* The monitor: an OS thread beside the workers, like Go's sysmon, that
 * keeps the program going when a worker's OS thread blocks in the kernel
 * where ito cannot park the thread (the program's own epoll_wait, a raw
 * system call, a futex, a pinned wait), and says so when it cannot.
 * Design: docs/monitor.md.
 *
 * Invariants:
 *  1. A worker counts as blocked when, over STILL_TICKS ticks, it ran the
 *     same fiber, its OS thread used no CPU, and the kernel reports that
 *     thread asleep (state S or D). An idle worker (no fiber) never does.
 *  2. Extra workers run while blocked workers would leave ready work
 *     waiting: the monitor starts one when more workers are blocked than
 *     extras run, no worker is idle (S = Z = 0) and work waits. So the
 *     workers that can run are never more than ITO_NUM_WORKERS, plus the
 *     extras invariant 6 asks for.
 *  3. An extra worker retires only when it found nothing to do (after
 *     leaving S and scanning again: docs/monitor.md) and more extras run
 *     than workers are blocked. A retired extra owns no work.
 *  4. Only the monitor starts extras and joins retired ones; an extra
 *     slot is reused only after its OS thread was joined.
 *  5. A worker whose thread announced a wait in the kernel (a drop-in
 *     library's wait on a process-shared object, an I/O call the I/O
 *     layer cannot park: ito__monitor_kwait_begin)
 *     counts as blocked at once, and extras start for such workers past
 *     the cap ITO_EXTRA_WORKERS (said once on stderr), up to the slots
 *     (ITO_MAX_WORKERS in all): each such wait is an OS thread natively.
 *     While its thread has a deferred cancellation due, the monitor calls
 *     the wait's wake function at every tick, under kwait_lock, which the
 *     end of the wait takes too (the object may go away after it).
 *  6. A thread due for preemption that would resume only on its worker
 *     (worker TLS, no home, nothing in that worker's mail) is left running
 *     while extras are below the cap, and its worker counts as blocked for
 *     invariant 2: an extra runs the waiting threads beside it. So no
 *     thread waits for a worker whose OS thread may block in the kernel
 *     for it; past the cap such threads are preempted. */
#ifndef ITO_CORE_MONITOR_H
#define ITO_CORE_MONITOR_H

#include "base.h"
#include "worker.h"

/* At each start of the runtime, after the workers (init lock held). */
HIDDEN void ito__monitor_start(void);
/* At shut-down, before the workers stop: the monitor ends and every
 * retired extra is joined; running extras stop with the workers. */
HIDDEN void ito__monitor_stop(void);
/* In a child of a fork: starts the child's monitor, once, at its first
 * thread creation or sleep (the monitor's fork part only marks it due). */
HIDDEN void ito__monitor_restart(void);
/* From a signal handler: the monitor routes the signals ito's handler
 * left (signal.c) at once. */
HIDDEN void ito__monitor_poke(void);
/* Waits (up to about a second, for a preempted monitor) for the monitor
 * to route what signals it has taken by now: a signal sent to the process
 * before the call is then where ito keeps it (sigpending). */
HIDDEN void ito__monitor_sync(void);

/* The calling thread is about to wait in the kernel where ito cannot park
 * it (invariant 5); wake (may be NULL) ends that wait for a cancellation,
 * called with obj from the monitor. kind: KWAIT_ON, or KWAIT_ASYNC where an
 * asynchronous cancellation may act inside the wait (a lock or barrier
 * wait of glibc's, which keeps no cleanup of its own; preempt.h,
 * invariant 2). A no-op off a worker. */
enum { KWAIT_NONE = 0, KWAIT_ON = 1, KWAIT_ASYNC = 2 };
HIDDEN void ito__monitor_kwait_begin(void (*wake)(void *), void *obj, int kind);
HIDDEN void ito__monitor_kwait_end(void);
/* A cancellation was requested: the monitor looks at announced waits now. */
HIDDEN void ito__monitor_kwait_poke(void);

/* An extra worker w found nothing to do: may it retire (invariant 3)? If
 * yes it is no longer counted; ito__monitor_stay undoes that when its
 * last scan found work after all. */
HIDDEN bool ito__monitor_may_retire(worker *w);
HIDDEN void ito__monitor_stay(worker *w);
/* w retires: its OS thread leaves the scheduler and ends; the monitor
 * joins it. */
HIDDEN void ito__monitor_retired(worker *w);

/* Extra workers whose OS thread has not been joined yet; *started (if
 * not NULL): extras started since the runtime started. For tests. */
HIDDEN int ito__monitor_extras(unsigned long *started);

/* Slots in use: the configured workers and every extra slot used since
 * the start (runtime.c); the scheduler scans them all. */
extern int ito__nslots HIDDEN;
/* Every slot ever in use, also in an earlier start of the runtime: the
 * thread counts (thread.h, invariant 4) sum them all, since a thread made
 * on one slot may have ended on an extra that a later start no longer
 * scans (it would count as alive for ever, and ito_finalize wait). */
extern int ito__slots_counted HIDDEN;
/* A worker in slot id, made or reset, its idler ready (runtime.c); NULL
 * when out of memory. */
HIDDEN worker *ito__worker_slot(int id);
/* Starts w's OS thread (counting its slot in ito__nslots first); 0 or
 * pthread_create's error. */
HIDDEN int ito__worker_launch(worker *w);
/* Joins w's OS thread if it was started. */
HIDDEN void ito__worker_join(worker *w);

#endif
