/* Wait queues and the one wait (invariants at the top of waitq.h). */
#define _GNU_SOURCE
#include "waitq.h"

#include "sched.h"
#include "signal.h"
#include "timer.h"

#include <errno.h>
#include <string.h>

/* ---- queue operations (the queue's lock held) ------------------------------------ */

static void q_push(void **head, void **tail, waiter *wt) {
  ITO_ASSERT(!wt->queued);
  wt->next = NULL;
  wt->queued = 1;
  if (*tail)
    ((waiter *)*tail)->next = wt;
  else
    *head = wt;
  *tail = wt;
}

static void q_remove(void **head, void **tail, waiter *wt) {
  waiter *prev = NULL;
  for (waiter *x = *head; x; prev = x, x = x->next) {
    if (x != wt) continue;
    if (prev)
      prev->next = x->next;
    else
      *head = x->next;
    if (*tail == x) *tail = prev;
    x->queued = 0;
    return;
  }
  ITO_ASSERT(!"a queued waiter is on its queue");
}

/* Takes the leading waiters off the queue, at most max of them (max < 0:
 * no limit), and with by_tag only while they carry tag: a list in queue
 * order (the queue's own links, cut after the last one); *n gets their
 * number. */
static waiter *take_prefix(void **head, void **tail, int max, bool by_tag, int tag, int *n) {
  waiter *first = *head, *last = NULL, *w = first;
  int k = 0;
  while (w && k != max && (!by_tag || w->tag == tag)) {
    ITO_ASSERT(w->queued);
    w->queued = 0;
    last = w;
    w = w->next;
    k++;
  }
  *n = k;
  if (!last) return NULL;
  last->next = NULL;
  *head = w;
  if (!w) *tail = NULL;
  return first;
}

waiter *ito__wq_take(void **head, void **tail, int n) {
  int k;
  return take_prefix(head, tail, n, false, 0, &k);
}

waiter *ito__wq_take_tag(void **head, void **tail, int tag, int *n) {
  return take_prefix(head, tail, -1, true, tag, n);
}

waiter *ito__wq_last(waiter *list) {
  while (list && list->next) list = list->next;
  return list;
}

/* ---- waking ------------------------------------------------------------------------ */

void ito__wake_waiter(waiter *wt) {
  ITO_ASSERT(!wt->queued);
  if (wt->fiber) {
    ito__ready(wt->fiber);
  } else {
    __atomic_store_n(&wt->futex, 1, __ATOMIC_RELEASE);
    ito__futex_wake(&wt->futex, 1);
  }
}

void ito__wq_wake(waiter *list) {
  fiber *first = NULL, *last = NULL;
  int n = 0;
  while (list) {
    waiter *next = list->next;
    if (list->fiber) {
      fiber_append(&first, &last, list->fiber);
      n++;
    } else {
      ito__wake_waiter(list);
    }
    list = next;
  }
  if (n) ito__ready_list(first, last, n);
}

void ito__block_os(waiter *wt, clockid_t clock, const struct timespec *abstime) {
  while (!__atomic_load_n(&wt->futex, __ATOMIC_ACQUIRE)) {
    struct timespec rel, *relp = NULL;
    if (abstime) {
      long long ns = ns_until(clock, abstime);
      if (ns <= 0) {
        wt->result = ETIMEDOUT;
        return;
      }
      rel = ns_to_ts(ns);
      relp = &rel;
    }
    ito__futex_wait(&wt->futex, 0, relp);
  }
}

/* ---- the one wait ----------------------------------------------------------------------- */

/* A lightweight thread's timed wait: a timer that takes the waiter off its
 * queue (if a wake did not) and wakes it with ETIMEDOUT. */
struct wait_timer {
  struct ito_timer t; /* first */
  waiter *wt;
  int *qlock;
  void **head, **tail;
};

static void take_with(int *qlock, void **head, void **tail, waiter *wt, int result) {
  spin_lock(qlock);
  bool mine = wt->queued;
  if (mine) {
    q_remove(head, tail, wt);
    wt->result = result;
  }
  spin_unlock(qlock);
  if (mine) ito__wake_waiter(wt);
}

static void wait_timeout(struct ito_timer *t) {
  struct wait_timer *wtm = (struct wait_timer *)t;
  take_with(wtm->qlock, wtm->head, wtm->tail, wtm->wt, ETIMEDOUT);
}

void ito__wq_interrupt(int *qlock, void **head, void **tail, waiter *wt) {
  take_with(qlock, head, tail, wt, EINTR);
}

/* Parks the calling fiber (whose waiter is queued under *qlock); the
 * scheduler releases *qlock once the context is saved (invariant 3). */
static void unlock_post(void *qlock) { spin_unlock(qlock); }

int ito__wq_wait(int *qlock, void **head, void **tail, int tag, clockid_t clock,
                 const struct timespec *abstime, int (*locked)(void *), void *arg) {
  ITO_ASSERT(spin_held(qlock));
  fiber *f = parkable(cur_worker());
  waiter os_wt, *wt = f ? &f->w : &os_wt; /* a fiber's waiter lives in the fiber */
  int intr = (tag & WQ_INTR) && f && f->thread && UNLIKELY(ito__sig_on);
  tag &= ~WQ_INTR;
  memset(wt, 0, sizeof *wt);
  wt->fiber = f;
  wt->tag = tag;
  q_push(head, tail, wt);
  if (locked) {
    int rc = locked(arg);
    if (rc) {
      q_remove(head, tail, wt);
      spin_unlock(qlock);
      return rc;
    }
  }
  if (!f) { /* an OS thread: the futex wait times out by itself */
    spin_unlock(qlock);
    ito__block_os(wt, clock, abstime);
    if (wt->result == ETIMEDOUT) {
      /* leave the queue unless a wake took us (invariant 2) */
      spin_lock(qlock);
      if (wt->queued) {
        q_remove(head, tail, wt);
        spin_unlock(qlock);
      } else {
        spin_unlock(qlock);
        while (!__atomic_load_n(&wt->futex, __ATOMIC_ACQUIRE)) cpu_relax();
        wt->result = 0;
      }
    }
    return wt->result;
  }
  struct sig_intr reg = {qlock, head, tail, wt};
  ithread *t = f->thread;
  if (intr && ito__sig_park_begin(t, &reg)) { /* a signal is already here */
    q_remove(head, tail, wt);
    spin_unlock(qlock);
    ito__sig_park_end(t);
    ito__sig_deliver();
    return EINTR;
  }
  struct wait_timer tm;
  if (abstime) {
    memset(&tm, 0, sizeof tm);
    tm.t.fire = wait_timeout;
    tm.wt = wt;
    tm.qlock = qlock;
    tm.head = head;
    tm.tail = tail;
    ito__timer_add(&tm.t, clock, abstime); /* the timer lock nests inside a queue lock only here */
  }
  ito__suspend(ACT_BLOCK, NULL, unlock_post, qlock);
  if (abstime) ito__timer_cancel(&tm.t);
  if (intr) {
    ito__sig_park_end(t);
    if (LOAD_ACQ(&t->sigpend) & ~t->sigmask) ito__sig_deliver();
  }
  return wt->result;
}
