/* Timers (invariants at the top of timer.h). */
#define _GNU_SOURCE
#include "timer.h"
#include "forkpart.h"

struct ito_timer *ito__timer_lists[2];
static int timer_lock;
static const clockid_t timer_clock[2] = {CLOCK_REALTIME, CLOCK_MONOTONIC};

void ito__timer_add(struct ito_timer *t, clockid_t clock, const struct timespec *abs) {
  ITO_ASSERT(t->fire && (clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC));
  t->clk = clock == CLOCK_MONOTONIC ? TIMER_MONOTONIC : TIMER_REALTIME;
  t->deadline = ts_to_ns(abs);
  spin_lock(&timer_lock, LR_TIMER);
  ITO_ASSERT(LOAD_RLX(&t->state) == T_IDLE);
  struct ito_timer **pp = &ito__timer_lists[t->clk];
  while (*pp && (*pp)->deadline <= t->deadline) pp = &(*pp)->next;
  t->next = *pp;
  STORE_RLX(pp, t); /* the list heads are read without the lock */
  STORE_RLX(&t->state, T_ARMED);
  spin_unlock(&timer_lock);
}

void ito__timer_cancel(struct ito_timer *t) {
  spin_lock(&timer_lock, LR_TIMER);
  /* (a firing's end stores IDLE without the lock: atomic accesses) */
  if (LOAD_RLX(&t->state) == T_ARMED) {
    struct ito_timer **pp = &ito__timer_lists[t->clk];
    while (*pp && *pp != t) pp = &(*pp)->next;
    ITO_ASSERT(*pp == t); /* an armed timer is in its list */
    STORE_RLX(pp, t->next);
    STORE_RLX(&t->state, T_IDLE);
  }
  spin_unlock(&timer_lock);
  while (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == T_FIRING) cpu_relax();
}

long ito__timers_next_ns(void) {
  if (!timers_armed()) return -1;
  long long d[2];
  spin_lock(&timer_lock, LR_TIMER);
  for (int k = 0; k < 2; k++) d[k] = ito__timer_lists[k] ? ito__timer_lists[k]->deadline : -1;
  spin_unlock(&timer_lock);
  long long best = -1;
  for (int k = 0; k < 2; k++) {
    if (d[k] < 0) continue;
    long long left = d[k] - clock_ns(timer_clock[k]);
    if (left < 0) left = 0;
    if (best < 0 || left < best) best = left;
  }
  if (best < 0) return -1;
  return best > NS_PER_S ? (long)NS_PER_S : (long)best;
}

/* Expired timers are unlinked under the lock and marked firing; their fire
 * functions run without it (they take the locks of what they wake, and a
 * waiter nests the two the other way), then each goes back to idle. */
int ito__timers_run(void) {
  if (!timers_armed()) return 0;
  long long now[2] = {clock_ns(timer_clock[0]), clock_ns(timer_clock[1])};
  struct ito_timer *due = NULL;
  spin_lock(&timer_lock, LR_TIMER);
  for (int k = 0; k < 2; k++) {
    while (ito__timer_lists[k] && ito__timer_lists[k]->deadline <= now[k]) {
      struct ito_timer *t = ito__timer_lists[k];
      STORE_RLX(&ito__timer_lists[k], t->next);
      ITO_ASSERT(LOAD_RLX(&t->state) == T_ARMED);
      STORE_RLX(&t->state, T_FIRING);
      t->next = due;
      due = t;
    }
  }
  spin_unlock(&timer_lock);
  int n = 0;
  while (due) {
    struct ito_timer *t = due;
    due = t->next;
    t->fire(t);
    __atomic_store_n(&t->state, T_IDLE, __ATOMIC_RELEASE);
    n++;
  }
  return n;
}

static void timers_fork_child(struct worker *w, struct ithread *self) {
  (void)w, (void)self;
  timer_lock = 0;
  ito__timer_lists[0] = ito__timer_lists[1] = NULL; /* every one armed was another thread's */
}
ITO_FORK_PART(timers_fork, .child_order = FORK_TIMERS, .child = timers_fork_child);
