/* Idle workers: the idle word, the sleeper list, the spin policy, sleep
 * (G1-G5 of docs/idle.md), wake-ups and the poll role. Invariants at the
 * top of idle.h. verify/idle.pml models ito__idle_sleep, ito__idle_wake_one,
 * ito__idle_wake, ito__idle_stop_spinning, ito__idle_start_spinning,
 * ito__idle_waiter_arrives and idle_after_publish, step by step. */
#define _GNU_SOURCE
#include "idle.h"

#include <errno.h>

struct ito_idle_word ito__rt_idle;
int ito__idle_waiters;

static struct {
  int sleep_lock;       /* guards the sleeper list, Z and poller */
  struct idler *top;    /* the sleeper list */
  struct idler *poller; /* the sleeper waiting for poll sources, if any */
  struct idler **all;   /* every worker's, by id */
  int n;
  bool active;      /* ITO_WAIT_POLICY=active: nobody sleeps */
  long spin_ns;     /* the least spin (ITO_SPIN_US) */
  long spin_max_ns; /* the most an adaptive spin grows to */
  struct idle_ops ops;
} ig;

void ito__idle_init(struct idler *w, int id) {
  w->id = id;
  w->spinning = 0;
  w->ws_hint = -1;
  STORE_RLX(&w->on_list, 0);
  w->wake_word = 0;
  w->sleep_next = NULL;
  w->spin_ns = ig.spin_ns;
}

void ito__idle_setup(struct idler **idlers, int n, const struct idle_ops *ops, bool active,
                     long spin_ns, bool hooks) {
  ig.all = idlers;
  ig.n = n;
  ig.ops = *ops;
  ig.active = active;
  ig.spin_ns = spin_ns;
  /* adaptive spin: up to 4 ms (docs/idle.md, "How long to spin") */
  ig.spin_max_ns = spin_ns > 4000000L || spin_ns == 0 ? spin_ns : 4000000L;
  ig.top = NULL;
  ig.poller = NULL;
  ig.sleep_lock = 0; /* (free at a start; after fork, its holder may be gone) */
  for (int i = 0; i < n; i++) ito__idle_init(idlers[i], i);
  __atomic_store_n(&ito__rt_idle.v, (ito__asym_fence ? 0 : IDLE_SYM) | (hooks ? IDLE_HOOKS : 0),
                   __ATOMIC_RELAXED);
}

/* Takes v off the sleeper list and makes it a spinner (sleep_lock held).
 * Returns whether v is the poll sleeper: its waker must then kick the
 * event wait instead of the futex. */
static bool unsleep_locked(struct idler *v, int hint) {
  ITO_ASSERT(spin_held(&ig.sleep_lock) && v->on_list);
  struct idler **pp = &ig.top;
  while (*pp != v) pp = &(*pp)->sleep_next;
  *pp = v->sleep_next;
  STORE_RLX(&v->on_list, 0);    /* (read without the lock: nodeq.c) */
  bool poller = ig.poller == v; /* v gives the role up itself (ito__idle_sleep) */
  uint64_t x = __atomic_fetch_add(&ito__rt_idle.v, IDLE_SPIN_ONE - 1, __ATOMIC_SEQ_CST);
  ITO_ASSERT(idle_Z(x) > 0); /* invariant 1: v was counted in Z */
  (void)x;
  v->ws_hint = hint;
  __atomic_store_n(&v->wake_word, 1, __ATOMIC_RELEASE);
  return poller;
}

static void kick(struct idler *v, bool poller) {
  if (poller)
    ig.ops.kick();
  else
    ito__futex_wake(&v->wake_word, 1);
}

int ito__idle_wake_one(int hint) {
  spin_lock(&ig.sleep_lock, LR_SLEEP);
  uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED);
  struct idler *v = ig.top;
  if (idle_S(x) != 0 || idle_Z(x) == 0 || !v) {
    spin_unlock(&ig.sleep_lock);
    return IDLE_NOBODY;
  }
  /* a futex sleeper rather than the poll sleeper, which keeps watching */
  if (v == ig.poller && v->sleep_next) v = v->sleep_next;
  bool poller = unsleep_locked(v, hint);
  spin_unlock(&ig.sleep_lock);
  kick(v, poller);
  return IDLE_WOKE;
}

/* The lock orders the caller's mail before w's scan, whichever of the two
 * takes sleep_lock first. */
void ito__idle_wake(struct idler *w) {
  spin_lock(&ig.sleep_lock, LR_SLEEP);
  bool was = w->on_list, poller = false;
  if (was) poller = unsleep_locked(w, -1);
  spin_unlock(&ig.sleep_lock);
  if (was) kick(w, poller);
}

void ito__idle_wake_all(void) {
  spin_lock(&ig.sleep_lock, LR_SLEEP);
  struct idler *l = NULL;
  bool poller = false;
  while (ig.top) {
    struct idler *v = ig.top;
    poller |= unsleep_locked(v, -1);
    v->sleep_next = l;
    l = v;
  }
  spin_unlock(&ig.sleep_lock);
  if (poller) ig.ops.kick();
  for (; l; l = l->sleep_next) ito__futex_wake(&l->wake_word, 1);
}

/* The last spinner to find work wakes a replacement while anybody sleeps,
 * so that work keeps spreading. */
int ito__idle_stop_spinning(struct idler *w) {
  ITO_ASSERT(w->spinning);
  w->spinning = 0;
  uint64_t x = __atomic_fetch_sub(&ito__rt_idle.v, IDLE_SPIN_ONE, __ATOMIC_SEQ_CST);
  ITO_ASSERT(idle_S(x) > 0);
  if (idle_S(x) == 1 && idle_Z(x) > 0) return ito__idle_wake_one(w->id);
  return IDLE_NOBODY;
}

/* Yes if fewer than MIN_SPINNERS spin, or if fewer than half of the busy
 * workers do; always with the active policy (nobody sleeps there, but
 * spinners are still counted, so that the workers they will steal from
 * open fenced windows and their steals need no membarrier). Two, not one:
 * when the only spinner takes work, the replacement it wakes arrives a
 * futex wake-up later (50-100 us here), and work handed from one worker to
 * the next would wait that long (docs/idle.md). */
#define MIN_SPINNERS 2
bool ito__idle_start_spinning(struct idler *w) {
  ITO_ASSERT(!w->spinning && !w->on_list);
  uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED);
  for (;;) {
    long s = idle_S(x), busy = (long)LOAD_RLX(&ig.n) - s - (long)idle_Z(x) - 1;
    if (!ig.active && s >= MIN_SPINNERS && 2 * s >= busy) return false;
    if (__atomic_compare_exchange_n(&ito__rt_idle.v, &x, x + IDLE_SPIN_ONE, 1, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
      w->spinning = 1;
      return true;
    }
  }
}

bool ito__idle_spun_out(const struct idler *w, long long spin_t0) {
  return !ig.active && clock_ns(CLOCK_MONOTONIC) - spin_t0 >= w->spin_ns;
}

/* After a sleep of `slept` ns (or none, 0: the scan found work at once):
 * double the spin after a short sleep, halve it after a long one
 * (docs/idle.md, "How long to spin"). */
static void adapt_spin(struct idler *w, long long slept) {
  if (slept < ig.spin_max_ns)
    w->spin_ns = w->spin_ns * 2 < ig.spin_max_ns ? w->spin_ns * 2 : ig.spin_max_ns;
  else
    w->spin_ns = w->spin_ns / 2 > ig.spin_ns ? w->spin_ns / 2 : ig.spin_ns;
}

void ito__idle_sleep(struct idler *w) {
  /* G1 */
  spin_lock(&ig.sleep_lock, LR_SLEEP);
  ITO_ASSERT(!w->on_list);
  w->sleep_next = ig.top;
  ig.top = w;
  STORE_RLX(&w->on_list, 1);
  __atomic_store_n(&w->wake_word, 0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&ito__rt_idle.v, 1 - (w->spinning ? IDLE_SPIN_ONE : 0), __ATOMIC_SEQ_CST);
  w->spinning = 0;
  /* G1 for poll sources: with threads waiting for them and nobody in the
   * event wait, this sleeper waits there. The waiter count is read after
   * Z's increment: a waiter adds to it, then reads Z, so one of the two
   * sees the other (the model rejects the other order). */
  bool poller = false;
  if (__atomic_load_n(&ito__idle_waiters, __ATOMIC_SEQ_CST) && !ig.poller) {
    STORE_RLX(&ig.poller, w);
    poller = true;
  }
  spin_unlock(&ig.sleep_lock);

  /* G2: the fork publishes without a fence; this makes its stores visible
   * before the scan, or makes it see our Z. */
  ito__heavy_barrier();

  /* G3, then G5 */
  int found = ig.ops.scan(w->id);
  long long t_sleep = found ? 0 : clock_ns(CLOCK_MONOTONIC);
  while (!found && !__atomic_load_n(&w->wake_word, __ATOMIC_ACQUIRE)) {
    /* asleep until woken, or until the next timer is due */
    long ns = ig.ops.next_timer_ns();
    if (ns >= 0 && ns < 1000) ns = 1000;
    if (poller) {
      /* the kick is sticky: one before the wait still ends it */
      if (ig.ops.wait_events(ns) > 0)
        found = -1; /* threads made ready, on our queue */
      else
        found = ig.ops.scan(w->id);
    } else {
      struct timespec rel = ns_to_ts(ns >= 0 ? ns : 0);
      long r = ito__futex_wait(&w->wake_word, 0, ns >= 0 ? &rel : NULL);
      if (r != 0 && errno == ETIMEDOUT) found = ig.ops.scan(w->id); /* -1 if a timer is due */
    }
  }
  /* G4: leave the list unless a waker already took us off */
  if (found || poller) {
    spin_lock(&ig.sleep_lock, LR_SLEEP);
    if (found && w->on_list) unsleep_locked(w, found > 0 ? found - 1 : -1);
    /* the poll role is given up only here, by its holder, once it will
     * not wait for events again: a waker that cleared it could let a
     * second worker take the role and both wait on one kick, one of them
     * for ever (found by the model, verify/idle.pml BROKEN=6) */
    if (ig.poller == w) STORE_RLX(&ig.poller, NULL);
    spin_unlock(&ig.sleep_lock);
  }
  ITO_ASSERT(!w->on_list);
  w->spinning = 1; /* counted in S by whoever took us off the list */
  if (t_sleep) adapt_spin(w, clock_ns(CLOCK_MONOTONIC) - t_sleep);
}

void ito__idle_resize(int delta) { __atomic_fetch_add(&ig.n, delta, __ATOMIC_RELAXED); }

/* G1-G3 of a sleep without the list: the worker stops counting in S (a
 * read-modify-write of the word, as a sleeper's increment of Z; the last
 * spinner wakes a replacement while others sleep), runs the heavy
 * barrier, then scans. A publisher that saw it spinning published
 * before that, so the scan sees the work (docs/monitor.md). */
int ito__idle_leave(struct idler *w) {
  ITO_ASSERT(!w->on_list);
  if (w->spinning) {
    w->spinning = 0;
    uint64_t x = __atomic_fetch_sub(&ito__rt_idle.v, IDLE_SPIN_ONE, __ATOMIC_SEQ_CST);
    ITO_ASSERT(idle_S(x) > 0);
    /* the last spinner leaves while others sleep: a replacement, as in
     * ito__idle_stop_spinning, or nobody may take the poll role
     * (verify/idle.pml, RETIRE with BROKEN=12, finds the lost wake-up) */
    if (idle_S(x) == 1 && idle_Z(x) > 0) ito__idle_wake_one(-1);
  }
  ito__heavy_barrier();
  int found = ig.ops.scan(w->id);
  if (found) {
    __atomic_fetch_add(&ito__rt_idle.v, IDLE_SPIN_ONE, __ATOMIC_SEQ_CST);
    w->spinning = 1;
    w->ws_hint = found > 0 ? found - 1 : -1;
  }
  return found;
}

void ito__idle_waiter_arrives(void) {
  if (__atomic_fetch_add(&ito__idle_waiters, 1, __ATOMIC_SEQ_CST) == 0) {
    uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_SEQ_CST) & ~IDLE_FLAGS;
    if (idle_Z(x) && !LOAD_RLX(&ig.poller)) ito__idle_wake_one(-1);
  }
}

void ito__idle_waiter_leaves(void) {
  int old = __atomic_fetch_sub(&ito__idle_waiters, 1, __ATOMIC_RELEASE);
  ITO_ASSERT(old > 0);
  (void)old;
}
