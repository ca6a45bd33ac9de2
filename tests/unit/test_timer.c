/* Timers (src/core/timer.h), white box: firing order and due times, both
 * clocks, cancel before and during a firing (invariant 3), the cap of the
 * next deadline, deadlines far in the future. */
#define _GNU_SOURCE
#include "../../src/core/timer.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"

struct counted {
  struct ito_timer t;
  int fired;
  int order;
  int run; /* the ito__timers_run call (run_seq) that fired it */
};
static int fire_seq, run_seq;

static void count_fire(struct ito_timer *t) {
  struct counted *c = (struct counted *)t;
  CHECK_EQ(t->state, T_FIRING);
  c->fired++;
  c->order = ++fire_seq;
  c->run = run_seq;
}

static void arm(struct counted *c, clockid_t clock, long long from_now_ns) {
  memset(c, 0, sizeof *c);
  c->t.fire = count_fire;
  struct timespec abs = deadline_in(clock, from_now_ns > 0 ? from_now_ns : 0);
  if (from_now_ns < 0) abs = ns_to_ts(clock_ns(clock) + from_now_ns);
  ito__timer_add(&c->t, clock, &abs);
  CHECK_EQ(c->t.state, T_ARMED);
}

static void basics(void) {
  CHECK(!timers_armed());
  CHECK_EQ(ito__timers_next_ns(), -1);
  CHECK_EQ(ito__timers_run(), 0);
  /* A loaded machine may not run this thread for seconds: what depends on
   * soon's deadline not having come is checked only when the clock says
   * it had not */
  struct counted late, soon, past, real;
  long long t0 = clock_ns(CLOCK_MONOTONIC), soon_ns = 1000 * 1000000LL;
  arm(&late, CLOCK_MONOTONIC, 3600 * 1000000000LL);
  arm(&soon, CLOCK_MONOTONIC, soon_ns);
  arm(&past, CLOCK_MONOTONIC, -1000000LL);
  arm(&real, CLOCK_REALTIME, 1500 * 1000000LL);
  CHECK(timers_armed());
  CHECK_EQ(ito__timers_next_ns(), 0); /* one is due */
  run_seq++;
  int n = ito__timers_run();
  int prompt = clock_ns(CLOCK_MONOTONIC) - t0 < soon_ns;
  CHECK(prompt ? n == 1 : n >= 1);
  CHECK_EQ(past.fired, 1);
  CHECK_EQ(past.t.state, T_IDLE);
  CHECK(!late.fired);
  if (prompt) CHECK(!soon.fired && !real.fired);
  if (!soon.fired) {
    long next = ito__timers_next_ns(); /* 0 once soon is due */
    CHECK(next >= 0 && next <= soon_ns);
  }
  ito__timer_cancel(&late.t); /* armed: taken off its list, never fires */
  CHECK_EQ(late.t.state, T_IDLE);
  ito__timer_cancel(&past.t); /* idle: nothing happens */
  while (!real.fired) {
    usleep(5000);
    run_seq++;
    ito__timers_run();
  }
  CHECK_EQ(soon.fired, 1);
  CHECK(soon.run <= real.run); /* the earlier deadline fired first, or in the same run */
  CHECK_EQ(late.fired, 0);
  CHECK(!timers_armed());
  puts("timer: order, both clocks, cancel of an armed timer: OK");
}

/* A deadline beyond the runtime's range saturates; the sleep bound is
 * capped at one second. */
static void far_future(void) {
  struct counted c;
  memset(&c, 0, sizeof c);
  c.t.fire = count_fire;
  struct timespec forever = {LONG_MAX, 999999999};
  ito__timer_add(&c.t, CLOCK_REALTIME, &forever);
  CHECK_EQ(c.t.deadline, NS_FOREVER);
  CHECK_EQ(ito__timers_next_ns(), NS_PER_S);
  CHECK_EQ(ito__timers_run(), 0);
  ito__timer_cancel(&c.t);
  CHECK(!timers_armed());
  puts("timer: far deadlines saturate, the next deadline is capped at 1 s: OK");
}

/* Invariant 3: a cancel that meets a firing in progress returns only once
 * the fire function has returned. */
static int in_fire, canceller_ready, fire_over;

static void slow_fire(struct ito_timer *t) {
  (void)t;
  __atomic_store_n(&in_fire, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&canceller_ready, __ATOMIC_ACQUIRE)) {
  }
  usleep(20000); /* the canceller is inside ito__timer_cancel by now (or soon) */
  __atomic_store_n(&fire_over, 1, __ATOMIC_RELEASE);
}

static struct ito_timer slow;

static void *canceller(void *p) {
  (void)p;
  while (!__atomic_load_n(&in_fire, __ATOMIC_ACQUIRE)) {
  }
  __atomic_store_n(&canceller_ready, 1, __ATOMIC_RELEASE);
  ito__timer_cancel(&slow);
  CHECK_EQ(__atomic_load_n(&fire_over, __ATOMIC_ACQUIRE), 1);
  CHECK_EQ(slow.state, T_IDLE);
  return NULL;
}

static void cancel_while_firing(void) {
  slow.fire = slow_fire;
  struct timespec now = deadline_in(CLOCK_MONOTONIC, 0);
  ito__timer_add(&slow, CLOCK_MONOTONIC, &now);
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, canceller, NULL), 0);
  CHECK_EQ(ito__timers_run(), 1);
  CHECK_EQ(pthread_join(th, NULL), 0);
  puts("timer: a cancel during a firing waits for it: OK");
}

int main(void) {
  basics();
  far_future();
  cancel_while_firing();
  puts("test_timer: OK");
  return 0;
}
