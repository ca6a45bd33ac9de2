/* The one wait: a lightweight thread parks on a wait queue (its worker
 * runs other work), a plain OS thread blocks on a futex, side by side on
 * the same queue; and the wakes that end those waits. Above the queue
 * (waitq.h), the scheduler (sched.h), timers and signals. Design:
 * docs/sync.md.
 *
 * Invariants:
 *  1. A waiter is taken off its queue by a waker (under the lock), by its
 *     timer (under the lock), by a signal's interruption (under the lock)
 *     or by itself after a timeout (an OS thread, under the lock).
 *  2. A parked thread's context is saved before the queue lock is released
 *     (the scheduler releases it), so no wake can reach a thread that has
 *     not finished parking.
 *  3. A waiter is woken only once it is off its queue. */
#ifndef ITO_CORE_WAIT_H
#define ITO_CORE_WAIT_H

#include "base.h"
#include "waitq.h"

#include <time.h>

/* Or'ed into tag: a signal for the waiting thread (signal.h) ends the wait
 * with EINTR (its handler runs before the wait returns). */
#define WQ_INTR (1 << 30)
/* The one wait. Called with *qlock held: queues the caller with tag, calls
 * locked(arg) if given (still under *qlock; a nonzero return takes the
 * caller off the queue, releases *qlock and is returned), then releases
 * *qlock and waits until a wake takes it or the deadline (abstime on clock,
 * CLOCK_REALTIME or CLOCK_MONOTONIC; NULL: none) passes. Returns 0 when
 * woken, ETIMEDOUT at the deadline, EINTR (WQ_INTR) for a signal; off the
 * queue in every case. */
HIDDEN int ito__wq_wait(int *qlock, void **head, void **tail, int tag, clockid_t clock,
                        const struct timespec *abstime, int (*locked)(void *), void *arg);
/* Without the lock: wakes a list from ito__wq_take (threads go to the
 * ready queues in one batch). */
HIDDEN void ito__wq_wake(waiter *list);
/* A signal's interruption (signal.c): takes wt off its queue with EINTR
 * and wakes it, unless a wake or the timer took it first. */
HIDDEN void ito__wq_interrupt(int *qlock, void **head, void **tail, waiter *wt);
/* Wakes one waiter taken off its queue. */
HIDDEN void ito__wake_waiter(waiter *wt);

/* A plain OS thread's wait for ito__wake_waiter; gives ETIMEDOUT in
 * wt->result if abstime (on clock) passed first. The caller resolves the
 * race with a waker. */
HIDDEN void ito__block_os(waiter *wt, clockid_t clock, const struct timespec *abstime);
/* The same; with intr, a handler that ran on this OS thread during the
 * wait (the futex wait ended with EINTR) gives EINTR in wt->result. */
HIDDEN void ito__block_os_intr(waiter *wt, clockid_t clock, const struct timespec *abstime,
                               int intr);

#endif
