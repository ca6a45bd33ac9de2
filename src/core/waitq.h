/* Wait queues in the caller's memory: a spinlock word, a head and a tail
 * anywhere (an ito_mutex_t, a pthread object, an fd record), holding
 * waiters in FIFO order. This is the queue alone, a building block that
 * knows nothing of fibers or the scheduler; waiting on a queue and waking
 * its waiters is wait.h. Design: docs/sync.md.
 *
 * Invariants:
 *  1. A waiter is on at most one queue; `queued` changes only under that
 *     queue's lock.
 *  2. A waiter is taken off its queue exactly once (wait.h says by whom);
 *     whoever takes it decides its result. */
#ifndef ITO_CORE_WAITQ_H
#define ITO_CORE_WAITQ_H

#include "base.h"

struct fiber;

typedef struct waiter {
  struct waiter *next; /* first: wake lists chain through it */
  struct fiber *fiber; /* NULL: an OS thread sleeping on futex */
  int futex;           /* OS thread: becomes 1 when woken */
  int result;          /* value handed to the woken (e.g. ETIMEDOUT) */
  int queued;          /* on a queue (invariant 1) */
  int parking;         /* a join's park may still read the thread (thread.c) */
  int tag;             /* the waiter's kind, for queues that mix kinds (rwlocks) */
} waiter;

/* Under *qlock: appends wt (not queued) to the queue. */
HIDDEN void ito__wq_push(void **head, void **tail, waiter *wt);
/* Under *qlock: takes wt, which is queued, off the queue. */
HIDDEN void ito__wq_remove(void **head, void **tail, waiter *wt);
/* Under *qlock: takes up to n waiters (n < 0: all) off the queue, as a
 * list (for ito__wq_wake, wait.h). */
HIDDEN waiter *ito__wq_take(void **head, void **tail, int n);
/* Under *qlock: takes the leading waiters whose tag is tag; *n gets their
 * number. */
HIDDEN waiter *ito__wq_take_tag(void **head, void **tail, int tag, int *n);
/* Under *qlock: the first waiter's tag, or -1. */
static inline int wq_head_tag(void *const *head) {
  const waiter *wt = *head;
  return wt ? wt->tag : -1;
}
/* A list's last element (lists end in NULL). */
HIDDEN waiter *ito__wq_last(waiter *list);

#endif
