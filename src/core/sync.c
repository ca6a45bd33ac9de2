/* Mutexes, condition variables, barriers and the timers behind timed waits.
 * A blocked lightweight thread is queued as a waiter and suspended; its
 * worker runs other work. On a plain OS thread the waiter sleeps on a futex.
 * Design: docs/sync.md. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <time.h>

void ito__unlock_post(void *lock) { spin_unlock(lock); }

/* ---- wait queues (intrusive FIFO of waiters, guarded by a spinlock) ---------- */

static void q_push(void **head, void **tail, waiter *wt) {
  wt->next = NULL;
  wt->queued = 1;
  if (*tail)
    ((waiter *)*tail)->next = wt;
  else
    *head = wt;
  *tail = wt;
}

static waiter *q_pop(void **head, void **tail) {
  waiter *wt = *head;
  if (wt) {
    *head = wt->next;
    if (!*head) *tail = NULL;
    wt->queued = 0;
  }
  return wt;
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
}

/* Wakes a detached list of waiters; fibers go to the ready queue in one batch. */
static void wake_all(waiter *list) {
  fiber *first = NULL, *last = NULL;
  int n = 0;
  while (list) {
    waiter *next = list->next;
    if (list->fiber) {
      fiber *f = list->fiber;
      f->next = NULL;
      if (last)
        last->next = f;
      else
        first = f;
      last = f;
      n++;
    } else {
      ito__make_ready(list);
    }
    list = next;
  }
  if (n) ito__ready_list(first, last, n);
}

/* Blocks the caller as wt, already queued under *qlock, which this releases.
 * An OS thread's own futex wait times out at abstime on clock; a fiber's
 * timeout is a timer armed by the caller. */
static void block_on(waiter *wt, int *qlock, clockid_t clock, const struct timespec *abstime) {
  if (wt->fiber) {
    ito__suspend(ACT_BLOCK, NULL, ito__unlock_post, qlock);
  } else {
    spin_unlock(qlock);
    ito__block_os(wt, clock, abstime);
  }
}

static void waiter_init(waiter *wt, void *queue) {
  fiber *f = parkable(cur_worker());
  memset(wt, 0, sizeof *wt);
  wt->fiber = f;
  wt->queue = queue;
}

/* A fiber's waiter lives in the fiber; an OS thread's (or a pinned ito
 * thread's) on its stack. */
#define WAITER(name, queue)                                                 \
  waiter name##_os, *name;                                                  \
  do {                                                                      \
    fiber *f_ = parkable(cur_worker());                                     \
    name = f_ ? &f_->w : &name##_os;                                        \
    waiter_init(name, queue);                                               \
  } while (0)

/* ---- timers (timed waits of lightweight threads) ------------------------------- */

struct timer {
  struct timer *next;
  long long deadline; /* ns on the clock of the list it is in */
  waiter *wt;
  int *qlock;         /* the queue the waiter is on */
  void **head, **tail;
  int clk;   /* TIMER_REALTIME or TIMER_MONOTONIC: which list */
  int state; /* T_IDLE, T_ARMED (in the list), T_FIRING (taken by timers_run) */
};
enum { T_IDLE = 0, T_ARMED, T_FIRING };
/* One list per clock: a realtime deadline must follow the realtime clock
 * when it is set, so the two cannot be ordered in one list. */
enum { TIMER_REALTIME = 0, TIMER_MONOTONIC = 1 };
static const clockid_t timer_clock[2] = {CLOCK_REALTIME, CLOCK_MONOTONIC};

static void timer_add(struct timer *t) {
  spin_lock(&ito__rt.timer_lock);
  struct timer **pp = &ito__rt.timers[t->clk];
  while (*pp && (*pp)->deadline <= t->deadline) pp = &(*pp)->next;
  t->next = *pp;
  STORE_RLX(pp, t); /* the list head is read without the lock */
  t->state = T_ARMED;
  spin_unlock(&ito__rt.timer_lock);
}

static void timer_cancel(struct timer *t) {
  spin_lock(&ito__rt.timer_lock);
  if (t->state == T_ARMED) {
    for (struct timer **pp = &ito__rt.timers[t->clk]; *pp; pp = &(*pp)->next) {
      if (*pp == t) {
        STORE_RLX(pp, t->next);
        break;
      }
    }
    t->state = T_IDLE;
  }
  spin_unlock(&ito__rt.timer_lock);
  while (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == T_FIRING) cpu_relax();
}

/* Nanoseconds until the earliest deadline of either clock (at most 1 s), or
 * -1 with no timer armed. */
long ito__timers_next_ns(void) {
  if (!timers_armed()) return -1;
  long long d[2];
  spin_lock(&ito__rt.timer_lock);
  for (int k = 0; k < 2; k++) d[k] = ito__rt.timers[k] ? ito__rt.timers[k]->deadline : -1;
  spin_unlock(&ito__rt.timer_lock);
  long long best = -1;
  for (int k = 0; k < 2; k++) {
    if (d[k] < 0) continue;
    long long left = d[k] - clock_ns(timer_clock[k]);
    if (left < 0) left = 0;
    if (best < 0 || left < best) best = left;
  }
  if (best < 0) return -1;
  return best > 1000000000LL ? 1000000000L : (long)best;
}

/* Fires expired timers: a waiter still queued is taken off its queue and
 * woken with ETIMEDOUT. Expired timers are unlinked under the timer lock
 * and marked firing; the waiter's cancel waits until the firing is over, so
 * the timer (on the waiter's stack) outlives its use here. The queue lock is
 * taken without the timer lock held (a wait nests them the other way). */
void ito__timers_run(void) {
  if (!timers_armed()) return;
  long long now[2] = {clock_ns(timer_clock[0]), clock_ns(timer_clock[1])};
  struct timer *fire = NULL;
  spin_lock(&ito__rt.timer_lock);
  for (int k = 0; k < 2; k++) {
    while (ito__rt.timers[k] && ito__rt.timers[k]->deadline <= now[k]) {
      struct timer *t = ito__rt.timers[k];
      STORE_RLX(&ito__rt.timers[k], t->next);
      t->state = T_FIRING;
      t->next = fire;
      fire = t;
    }
  }
  spin_unlock(&ito__rt.timer_lock);
  waiter *wake = NULL;
  while (fire) {
    struct timer *t = fire;
    fire = t->next;
    waiter *wt = t->wt;
    spin_lock(t->qlock);
    if (wt->queued) {
      q_remove(t->head, t->tail, wt);
      wt->result = ETIMEDOUT;
      wt->next = wake;
      wake = wt;
    }
    spin_unlock(t->qlock);
    __atomic_store_n(&t->state, T_IDLE, __ATOMIC_RELEASE);
  }
  wake_all(wake);
}

/* ---- the one wait: queue, release, block, time out ------------------------------
 * Called with *qlock held; returns with it released, off the queue, with 0
 * (a wake took the caller) or ETIMEDOUT, or locked()'s nonzero result. */
static int wq_wait(int *qlock, void **head, void **tail, int tag, clockid_t clock,
                   const struct timespec *abstime, int (*locked)(void *), void *arg) {
  WAITER(wt, head);
  wt->tag = tag;
  struct timer tm;
  q_push(head, tail, wt);
  if (locked) {
    int rc = locked(arg);
    if (rc) {
      q_remove(head, tail, wt);
      spin_unlock(qlock);
      return rc;
    }
  }
  if (abstime && wt->fiber) {
    memset(&tm, 0, sizeof tm);
    tm.deadline = (long long)abstime->tv_sec * 1000000000LL + abstime->tv_nsec;
    tm.wt = wt;
    tm.qlock = qlock;
    tm.head = head;
    tm.tail = tail;
    tm.clk = clock == CLOCK_MONOTONIC ? TIMER_MONOTONIC : TIMER_REALTIME;
    timer_add(&tm); /* timer lock nests inside a queue lock only here, never the reverse */
  }
  block_on(wt, qlock, clock, abstime);
  if (abstime && wt->fiber) timer_cancel(&tm);
  if (!wt->fiber && wt->result == ETIMEDOUT) {
    /* an OS thread timed out: leave the queue unless a wake took us */
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

/* The clocks timed waits take. */
static int clock_ok(clockid_t c) { return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC; }

static int bad_time(const struct timespec *ts) {
  return ts && (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L);
}

int ito__dropin_wq_wait(int *qlock, void **head, void **tail, int tag, clockid_t clock,
                    const struct timespec *abstime, int (*locked)(void *), void *arg) {
  return wq_wait(qlock, head, tail, tag, clock, abstime, locked, arg);
}

void *ito__dropin_wq_take(void **head, void **tail, int n) {
  waiter *first = NULL, *last = NULL;
  while (n-- != 0) {
    waiter *wt = q_pop(head, tail);
    if (!wt) break;
    wt->next = NULL;
    if (last)
      last->next = wt;
    else
      first = wt;
    last = wt;
  }
  return first;
}

void *ito__dropin_wq_take_tag(void **head, void **tail, int tag, int *n) {
  waiter *first = NULL, *last = NULL;
  *n = 0;
  while (*head && ((waiter *)*head)->tag == tag) {
    ++*n;
    waiter *wt = q_pop(head, tail);
    wt->next = NULL;
    if (last)
      last->next = wt;
    else
      first = wt;
    last = wt;
  }
  return first;
}

int ito__dropin_wq_head_tag(void *const *head) {
  waiter *wt = *head;
  return wt ? wt->tag : -1;
}

void ito__dropin_wq_wake(void *list) { wake_all(list); }
void ito__dropin_lock(int *qlock) { spin_lock(qlock); }
void ito__dropin_unlock(int *qlock) { spin_unlock(qlock); }

/* ---- mutex ------------------------------------------------------------------- */

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
  return __atomic_compare_exchange_n(&m->state, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED) ? 0
                                                                                                : EBUSY;
}

/* The contended half of a lock word (0 free, 1 locked, 2 locked and maybe
 * waited on) with its wait queue: ito_mutex_t here, and the mutexes of
 * libito-pthread.so, which keep the same word and queue in glibc's layout.
 * Spin briefly; then, under the queue lock, exchange the word to 2: a
 * previous 0 means acquired, otherwise queue and retry when woken. A
 * deadline (abs on clock, NULL: none) gives ETIMEDOUT, after one last try. */
static int word_lock_slow(int *state, int *qlock, void **head, void **tail, clockid_t clock,
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
    spin_lock(qlock);
    /* 2: locked and maybe waited on; the unlocker then wakes one waiter */
    if (__atomic_exchange_n(state, 2, __ATOMIC_ACQUIRE) == 0) {
      spin_unlock(qlock);
      return 0;
    }
    if (wq_wait(qlock, head, tail, 0, clock, abs, NULL, NULL) == ETIMEDOUT) {
      int c = 0;
      return __atomic_compare_exchange_n(state, &c, 2, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)
                 ? 0
                 : ETIMEDOUT;
    }
  }
}

/* The unlocker found the word at 2: wake the oldest waiter, which retries. */
static void word_unlock_wake(int *qlock, void **head, void **tail) {
  spin_lock(qlock);
  waiter *wt = q_pop(head, tail);
  spin_unlock(qlock);
  if (wt) ito__make_ready(wt);
}

int ito__dropin_lock_slow(int *state, int *qlock, void **head, void **tail, clockid_t clock,
                      const struct timespec *abs) {
  return word_lock_slow(state, qlock, head, tail, clock, abs);
}

void ito__dropin_unlock_wake(int *qlock, void **head, void **tail) {
  word_unlock_wake(qlock, head, tail);
}

int ito_mutex_lock(ito_mutex_t *m) {
  int c = 0;
  if (LIKELY(__atomic_compare_exchange_n(&m->state, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)))
    return 0;
  return word_lock_slow(&m->state, &m->qlock, &m->head, &m->tail, CLOCK_MONOTONIC, NULL);
}

int ito_mutex_unlock(ito_mutex_t *m) {
  int old = __atomic_exchange_n(&m->state, 0, __ATOMIC_RELEASE);
  if (UNLIKELY(old == 0)) return EPERM;
  if (old == 2) word_unlock_wake(&m->qlock, &m->head, &m->tail);
  return 0;
}

/* ---- condition variable ------------------------------------------------------- */

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
  if (!c || !m) return EINVAL;
  if (bad_time(abstime)) return EINVAL;
  if (!clock_ok(clock)) return EINVAL;
  spin_lock(&c->qlock);
  int r = wq_wait(&c->qlock, &c->head, &c->tail, 0, clock, abstime, unlock_for_wait, m);
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
  spin_lock(&c->qlock);
  waiter *wt = q_pop(&c->head, &c->tail);
  spin_unlock(&c->qlock);
  if (wt) ito__make_ready(wt);
  return 0;
}

int ito_cond_broadcast(ito_cond_t *c) {
  if (!c) return EINVAL;
  if (!LOAD_RLX(&c->head)) return 0;
  spin_lock(&c->qlock);
  waiter *list = c->head;
  for (waiter *x = list; x; x = x->next) x->queued = 0;
  c->head = c->tail = NULL;
  spin_unlock(&c->qlock);
  wake_all(list);
  return 0;
}

/* ---- sleeping ------------------------------------------------------------------ */

/* An ito thread sleeps as a timed wait on a queue nobody wakes: the timer
 * wakes it, and its worker runs other work meanwhile. Any other thread (and
 * a pinned one) sleeps in the kernel. */
int ito__dropin_sleep_until(clockid_t clock, const struct timespec *abstime) {
  if (!abstime || bad_time(abstime)) return EINVAL;
  if (!clock_ok(clock)) return EINVAL;
  if (!parkable(cur_worker())) {
    while (ito__os.clock_nanosleep(clock, TIMER_ABSTIME, abstime, NULL) == EINTR) {
    }
    return 0;
  }
  int qlock = 0;
  void *head = NULL, *tail = NULL;
  for (;;) {
    spin_lock(&qlock);
    if (wq_wait(&qlock, &head, &tail, 0, clock, abstime, NULL, NULL) == ETIMEDOUT) return 0;
  }
}

int ito_nanosleep(const struct timespec *req) {
  if (!req || req->tv_sec < 0 || bad_time(req)) return EINVAL;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += req->tv_sec;
  until.tv_nsec += req->tv_nsec;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  return ito__dropin_sleep_until(CLOCK_MONOTONIC, &until);
}

/* ---- barrier ------------------------------------------------------------------ */

int ito_barrier_init(ito_barrier_t *b, unsigned count) {
  if (!b || count == 0) return EINVAL;
  memset(b, 0, sizeof *b);
  b->total = count;
  return 0;
}

int ito_barrier_destroy(ito_barrier_t *b) {
  if (!b) return EINVAL;
  return LOAD_RLX(&b->count) ? EBUSY : 0;
}

int ito_barrier_wait(ito_barrier_t *b) {
  if (!b || !b->total) return EINVAL;
  spin_lock(&b->qlock);
  if (++b->count == b->total) {
    waiter *list = b->head;
    b->head = b->tail = NULL;
    b->count = 0;
    b->phase++;
    for (waiter *x = list; x; x = x->next) x->queued = 0;
    spin_unlock(&b->qlock);
    wake_all(list);
    return ITO_BARRIER_SERIAL_THREAD;
  }
  wq_wait(&b->qlock, &b->head, &b->tail, 0, CLOCK_MONOTONIC, NULL, NULL, NULL);
  return 0;
}
