/* Mutexes, condition variables, barriers and sleeps, all on the one wait of
 * waitq.h. A blocked lightweight thread parks and its worker runs other
 * work; a plain OS thread sleeps on a futex. Design: docs/sync.md. */
#define _GNU_SOURCE
#include "sync.h"

#include "os.h"
#include "thread.h"
#include "wait.h"
#include "worker.h"

#include <errno.h>
#include <string.h>

bool ito__clock_ok(clockid_t c) { return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC; }

static bool bad_time(const struct timespec *ts) { return ts && !ts_valid(ts); }

/* ---- the lock word ------------------------------------------------------------------------
 * 0 free, 1 locked, 2 locked and maybe waited on, with a wait queue: the
 * contended half of ito_mutex_t and of libito-pthread.so's mutexes, which
 * keep the same word and queue in glibc's layout. Spin briefly; then,
 * under the queue lock, exchange the word to 2: a previous 0 means
 * acquired, otherwise queue and retry when woken (or after a signal's
 * handler ran: the wait goes on). A deadline gives ETIMEDOUT, after one
 * last try. */
/* The running thread, if its cancellation type is asynchronous. */
static ithread *async_cancel_type(void) {
  worker *w = cur_worker();
  ithread *t = w && w->cur ? w->cur->thread : NULL;
  return t && (LOAD_ACQ(&t->cancel) & CANCEL_ASYNC) ? t : NULL;
}

int ito__lock_slow(int *state, int *qlock, void **head, void **tail, clockid_t clock,
                   const struct timespec *abs) {
  for (int i = 0; i < 64; i++) {
    int c = 0;
    if (LOAD_RLX(state) == 0 &&
        __atomic_compare_exchange_n(state, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return 0;
    cpu_relax();
  }
  if (bad_time(abs)) return EINVAL;
  for (;;) {
    spin_lock(qlock, LR_QUEUE);
    /* 2: locked and maybe waited on; the unlocker then wakes one waiter */
    if (__atomic_exchange_n(state, 2, __ATOMIC_ACQUIRE) == 0) {
      spin_unlock(qlock);
      return 0;
    }
    /* a signal's handler runs during the wait (WQ_INTR), which then goes
     * on as if it was not interrupted: the loop tries again; a thread with
     * asynchronous cancellation enabled: a request ends the wait
     * (ECANCELED; the drop-in acts on it), as it ends glibc's */
    ithread *t = async_cancel_type();
    int r = ito__wq_wait(qlock, head, tail, WQ_INTR, clock, abs, NULL, NULL);
    if (r == ETIMEDOUT) {
      int c = 0;
      return __atomic_compare_exchange_n(state, &c, 2, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
                 ? 0
                 : ETIMEDOUT;
    }
    if (r == EINTR && t &&
        (LOAD_ACQ(&t->cancel) & (CANCEL_PENDING | CANCEL_ASYNC | CANCEL_DISABLED |
                                 CANCEL_ACTING)) == (CANCEL_PENDING | CANCEL_ASYNC))
      return ECANCELED;
  }
}

/* The unlocker found the word at 2: under the queue lock it takes the
 * oldest waiter (which retries once woken) and frees the word; the queue
 * lock's release is its last touch of the mutex. A thread may take the
 * freed mutex at once, unlock it and free its memory: its unlock first
 * waits for the queue lock to be free (ito__unlock_settle). */
void ito__unlock_slow(int *state, int *qlock, void **head, void **tail) {
  spin_lock(qlock, LR_QUEUE);
  waiter *wt = ito__wq_take(head, tail, 1);
  __atomic_store_n(state, 0, __ATOMIC_RELEASE);
  spin_unlock(qlock);
  if (wt) ito__wake_waiter(wt);
}

/* ---- mutex -------------------------------------------------------------------------------- */

int ito_mutex_init(ito_mutex_t *m) {
  if (!m) return EINVAL;
  memset(m, 0, sizeof *m);
  return 0;
}

int ito_mutex_destroy(ito_mutex_t *m) {
  if (!m) return EINVAL;
  return LOAD_RLX(&m->state) ? EBUSY : 0;
}

int ito_mutex_trylock(ito_mutex_t *m) {
  int c = 0;
  return __atomic_compare_exchange_n(&m->state, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
             ? 0
             : EBUSY;
}

int ito_mutex_lock(ito_mutex_t *m) {
  int c = 0;
  if (LIKELY(__atomic_compare_exchange_n(&m->state, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
    return 0;
  return ito__lock_slow(&m->state, &m->qlock, &m->head, &m->tail, CLOCK_MONOTONIC, NULL);
}

int ito_mutex_unlock(ito_mutex_t *m) {
  int c = 1;
  if (LIKELY(
          __atomic_compare_exchange_n(&m->state, &c, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))) {
    ito__unlock_settle(&m->qlock);
    return 0;
  }
  if (UNLIKELY(c == 0)) return EPERM;
  ito__unlock_slow(&m->state, &m->qlock, &m->head, &m->tail);
  return 0;
}

/* ---- condition variable ---------------------------------------------------------------------- */

int ito_cond_init(ito_cond_t *c) {
  if (!c) return EINVAL;
  memset(c, 0, sizeof *c);
  return 0;
}

int ito_cond_destroy(ito_cond_t *c) {
  if (!c) return EINVAL;
  return LOAD_RLX(&c->head) ? EBUSY : 0;
}

static int unlock_for_wait(void *m) { return ito_mutex_unlock(m) == EPERM ? EPERM : 0; }

static int cond_wait(ito_cond_t *c, ito_mutex_t *m, clockid_t clock,
                     const struct timespec *abstime) {
  if (!c || !m || bad_time(abstime) || !ito__clock_ok(clock)) return EINVAL;
  spin_lock(&c->qlock, LR_QUEUE_OUTER);
  int r = ito__wq_wait(&c->qlock, &c->head, &c->tail, 0, clock, abstime, unlock_for_wait, m);
  if (r == EPERM) return EPERM;
  ito_mutex_lock(m);
  return r;
}

int ito_cond_wait(ito_cond_t *c, ito_mutex_t *m) { return cond_wait(c, m, CLOCK_REALTIME, NULL); }

int ito_cond_timedwait(ito_cond_t *c, ito_mutex_t *m, const struct timespec *abstime) {
  if (!abstime) return EINVAL;
  return cond_wait(c, m, CLOCK_REALTIME, abstime);
}

int ito_cond_clockwait(ito_cond_t *c, ito_mutex_t *m, clockid_t clock,
                       const struct timespec *abstime) {
  if (!abstime) return EINVAL;
  return cond_wait(c, m, clock, abstime);
}

int ito_cond_signal(ito_cond_t *c) {
  if (!c) return EINVAL;
  if (!LOAD_RLX(&c->head)) return 0;
  spin_lock(&c->qlock, LR_QUEUE_OUTER);
  waiter *wt = ito__wq_take(&c->head, &c->tail, 1);
  spin_unlock(&c->qlock);
  if (wt) ito__wake_waiter(wt);
  return 0;
}

int ito_cond_broadcast(ito_cond_t *c) {
  if (!c) return EINVAL;
  if (!LOAD_RLX(&c->head)) return 0;
  spin_lock(&c->qlock, LR_QUEUE_OUTER);
  waiter *list = ito__wq_take(&c->head, &c->tail, -1);
  spin_unlock(&c->qlock);
  ito__wq_wake(list);
  return 0;
}

/* ---- sleeping -------------------------------------------------------------------------------- */

/* An ito thread sleeps as a timed wait on a queue nobody wakes: the timer
 * wakes it, and its worker runs other work meanwhile. Any other thread
 * (and a pinned one) sleeps in the kernel. */
int ito__sleep_until(clockid_t clock, const struct timespec *abstime) {
  if (!abstime || bad_time(abstime) || !ito__clock_ok(clock)) return EINVAL;
  if (!parkable(cur_worker())) {
    while (ito__os.clock_nanosleep(clock, TIMER_ABSTIME, abstime, NULL) == EINTR) {
    }
    return 0;
  }
  int qlock = 0;
  void *head = NULL, *tail = NULL;
  for (;;) {
    spin_lock(&qlock, LR_QUEUE);
    int rc = ito__wq_wait(&qlock, &head, &tail, WQ_INTR, clock, abstime, NULL, NULL);
    if (rc == ETIMEDOUT) return 0;
    if (rc == EINTR) return EINTR; /* a signal's handler ran (signal.h) */
  }
}

int ito_nanosleep(const struct timespec *req) {
  if (!req || req->tv_sec < 0 || !ts_valid(req)) return EINVAL;
  struct timespec until = deadline_in(CLOCK_MONOTONIC, ts_to_ns(req));
  int rc;
  while ((rc = ito__sleep_until(CLOCK_MONOTONIC, &until)) == EINTR) {
  }
  return rc;
}

/* ---- barrier --------------------------------------------------------------------------------- */

int ito_barrier_init(ito_barrier_t *b, unsigned count) {
  if (!b || count == 0) return EINVAL;
  memset(b, 0, sizeof *b);
  b->total = count;
  return 0;
}

/* phase: the round, mod 256, in its low byte; above it, the waiters whose
 * round ended while they were out of the queue for a handler and that
 * have not yet looked (GONE_ONE each). destroy waits until each has
 * looked, so that the program may free the barrier when it returns. */
#define ROUND_MASK 0xffu
#define GONE_ONE 0x100u

int ito_barrier_destroy(ito_barrier_t *b) {
  if (!b) return EINVAL;
  for (;;) {
    /* (under the lock: a waiter's last touch is its unlock) */
    spin_lock(&b->qlock, LR_QUEUE);
    unsigned busy = b->count, gone = b->phase / GONE_ONE;
    spin_unlock(&b->qlock);
    if (busy) return EBUSY;
    if (!gone) return 0;
    struct timespec nap = {0, 100000}; /* (a sleep: the waiter's handler may sleep on a timer) */
    ito_nanosleep(&nap);
  }
}

int ito_barrier_wait(ito_barrier_t *b) {
  if (!b || !b->total) return EINVAL;
  spin_lock(&b->qlock, LR_QUEUE);
  if (++b->count == b->total) {
    waiter *list = ito__wq_take(&b->head, &b->tail, -1);
    unsigned queued = 0;
    for (waiter *w = list; w; w = w->next) queued++;
    b->count = 0;
    b->phase = ((b->phase & ~ROUND_MASK) + (b->total - 1 - queued) * GONE_ONE) |
               ((b->phase + 1) & ROUND_MASK);
    spin_unlock(&b->qlock);
    ito__wq_wake(list);
    return ITO_BARRIER_SERIAL_THREAD;
  }
  /* a signal's handler runs during the wait (WQ_INTR), out of the queue;
   * the wait goes on unless the round ended meanwhile */
  unsigned round = b->phase & ROUND_MASK;
  while (ito__wq_wait(&b->qlock, &b->head, &b->tail, WQ_INTR, CLOCK_MONOTONIC, NULL, NULL, NULL) ==
         EINTR) {
    spin_lock(&b->qlock, LR_QUEUE);
    if ((b->phase & ROUND_MASK) != round) {
      b->phase -= GONE_ONE; /* looked: destroy may go on */
      spin_unlock(&b->qlock);
      break;
    }
  }
  return 0;
}
