/* The one wait and the wakes (invariants at the top of wait.h). */
#define _GNU_SOURCE
#include "wait.h"

#include "sched.h"
#include "timer.h"
#include "posix_hooks.h"

#include <errno.h>
#include <string.h>

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
  ito__block_os_intr(wt, clock, abstime, 0);
}

void ito__block_os_intr(waiter *wt, clockid_t clock, const struct timespec *abstime, int intr) {
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
    if (ito__futex_wait(&wt->futex, 0, relp) == -1 && errno == EINTR && intr) {
      wt->result = EINTR; /* a handler ran (the kernel did not restart the wait) */
      return;
    }
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
  spin_lock(qlock, LR_QUEUE);
  bool mine = wt->queued;
  if (mine) {
    ito__wq_remove(head, tail, wt);
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
  int tag_in = tag;
  tag &= ~WQ_INTR;
  memset(wt, 0, sizeof *wt);
  wt->fiber = f;
  wt->tag = tag;
  ito__wq_push(head, tail, wt);
  if (locked) {
    int rc = locked(arg);
    if (rc) {
      ito__wq_remove(head, tail, wt);
      spin_unlock(qlock);
      return rc;
    }
  }
  if (!f) { /* an OS thread: the futex wait times out by itself */
    spin_unlock(qlock);
    /* one of the program's own OS threads takes its signals from the
     * kernel: an interruptible wait ends when a handler ran there */
    ito__block_os_intr(wt, clock, abstime, (tag_in & WQ_INTR) && !cur_worker());
    if (wt->result == ETIMEDOUT || wt->result == EINTR) {
      /* leave the queue unless a wake took us (invariant 2) */
      spin_lock(qlock, LR_QUEUE);
      if (wt->queued) {
        ito__wq_remove(head, tail, wt);
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
    ito__wq_remove(head, tail, wt);
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
  /* signals are delivered below, once the timer is off and the result read:
   * a wait in a handler uses the fiber's waiter again */
  if (t) t->sig_self = 1;
  ito__suspend(ACT_BLOCK, NULL, unlock_post, qlock);
  if (abstime) ito__timer_cancel(&tm.t);
  int rc = wt->result;
  if (t) {
    t->sig_self = 0;
    if (intr) ito__sig_park_end(t);
    if (UNLIKELY(ito__sig_on) && (LOAD_ACQ(&t->sigpend) & ~t->sigmask)) ito__sig_deliver();
  }
  return rc;
}
