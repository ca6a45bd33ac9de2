/* Timers: deadlines on CLOCK_REALTIME or CLOCK_MONOTONIC that call a
 * function when they pass. Schedulers fire them when they look for work
 * and idle workers sleep no longer than the next one (docs/sync.md,
 * "Timed waits").
 *
 * Invariants:
 *  1. One list per clock, sorted by deadline, guarded by the timer lock; a
 *     realtime deadline must follow the clock when it is set, so the two
 *     clocks cannot share one order. The list heads are read without the
 *     lock (timers_armed).
 *  2. A timer goes IDLE -> ARMED (ito__timer_add) -> FIRING (taken off its
 *     list by ito__timers_run, under the lock) -> IDLE (after its fire
 *     function returned), or ARMED -> IDLE (ito__timer_cancel).
 *  3. ito__timer_cancel returns only once the timer is IDLE: a firing in
 *     progress is waited for, so the timer's memory (often on the waiting
 *     thread's stack) outlives every use of it. */
#ifndef ITO_CORE_TIMER_H
#define ITO_CORE_TIMER_H

#include "base.h"

enum { TIMER_REALTIME = 0, TIMER_MONOTONIC = 1 };
enum { T_IDLE = 0, T_ARMED, T_FIRING };

struct ito_timer {
  struct ito_timer *next;
  long long deadline;                /* ns on the clock of its list */
  int clk;                           /* TIMER_REALTIME or TIMER_MONOTONIC */
  int state;                         /* T_* */
  void (*fire)(struct ito_timer *t); /* called without the timer lock */
};

/* Arms t for the deadline abs on clock (CLOCK_REALTIME or
 * CLOCK_MONOTONIC); t->fire must be set. */
HIDDEN void ito__timer_add(struct ito_timer *t, clockid_t clock, const struct timespec *abs);
/* Disarms t; waits for a firing in progress (invariant 3). */
HIDDEN void ito__timer_cancel(struct ito_timer *t);
/* Fires every timer whose deadline has passed; returns how many. */
HIDDEN int ito__timers_run(void);
/* Nanoseconds until the earliest deadline (at most 1 s), or -1 with no
 * timer armed. */
HIDDEN long ito__timers_next_ns(void);

extern struct ito_timer *ito__timer_lists[2] HIDDEN;
/* Any timer armed? One relaxed load per clock. */
static inline bool timers_armed(void) {
  return LOAD_RLX(&ito__timer_lists[0]) != NULL || LOAD_RLX(&ito__timer_lists[1]) != NULL;
}

#endif
