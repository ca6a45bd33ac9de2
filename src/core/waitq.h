/* Wait queues in the caller's memory: a spinlock word, a head and a tail
 * anywhere (an ito_mutex_t, a pthread object, an fd record). Waiters are
 * lightweight threads (parked: their worker runs other work) and plain OS
 * threads (blocked on a futex) side by side, in FIFO order. Design:
 * docs/sync.md.
 *
 * Invariants:
 *  1. A waiter is on at most one queue; `queued` changes only under that
 *     queue's lock.
 *  2. A waiter is taken off its queue exactly once: by a waker (under the
 *     lock), by its timer (under the lock), or by itself after a timeout.
 *     Whoever takes it decides its result.
 *  3. A parked thread's context is saved before the queue lock is released
 *     (the scheduler releases it), so no wake can reach a thread that has
 *     not finished parking. */
#ifndef ITO_CORE_WAITQ_H
#define ITO_CORE_WAITQ_H

#include "base.h"

struct fiber;

typedef struct waiter {
  struct waiter *next;      /* first: wake lists chain through it */
  struct fiber *fiber;      /* NULL: an OS thread sleeping on futex */
  int futex;                /* OS thread: becomes 1 when woken */
  int result;               /* value handed to the woken (e.g. ETIMEDOUT) */
  int queued;               /* on a queue (invariant 1) */
  int parking;              /* a join's park may still read the thread (thread.c) */
  int tag;                  /* the waiter's kind, for queues that mix kinds (rwlocks) */
} waiter;

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
/* Under *qlock: takes up to n waiters (n < 0: all) off the queue, as a
 * list for ito__wq_wake. */
HIDDEN waiter *ito__wq_take(void **head, void **tail, int n);
/* Under *qlock: takes the leading waiters whose tag is tag; *n gets their
 * number. */
HIDDEN waiter *ito__wq_take_tag(void **head, void **tail, int tag, int *n);
/* Under *qlock: the first waiter's tag, or -1. */
static inline int wq_head_tag(void *const *head) {
  const waiter *wt = *head;
  return wt ? wt->tag : -1;
}
/* Without the lock: wakes a list from ito__wq_take (threads go to the
 * ready queues in one batch). */
HIDDEN void ito__wq_wake(waiter *list);
/* A signal's interruption (signal.c): takes wt off its queue with EINTR
 * and wakes it, unless a wake or the timer took it first. */
HIDDEN void ito__wq_interrupt(int *qlock, void **head, void **tail, waiter *wt);
/* Wakes one waiter taken off its queue. */
HIDDEN void ito__wake_waiter(waiter *wt);
/* A list's last element (lists end in NULL). */
HIDDEN waiter *ito__wq_last(waiter *list);

/* A plain OS thread's wait for ito__wake_waiter; gives ETIMEDOUT in
 * wt->result if abstime (on clock) passed first. The caller resolves the
 * race with a waker. */
HIDDEN void ito__block_os(waiter *wt, clockid_t clock, const struct timespec *abstime);

#endif
