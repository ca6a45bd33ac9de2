/* The idle word's arithmetic (src/core/idle.h), white box, with three
 * idlers and scripted scheduler callbacks instead of a runtime: the
 * spinner policy, a sleeper counted in Z, a publisher that finds a
 * spinner, the last spinner's wake-up, wake_worker, the waiter count and
 * the poll role, and the flag bits (M, H) that every reader masks. */
#define _GNU_SOURCE
#include "../../src/core/idle.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"

static struct idler w[3];
static struct idler *all[3] = {&w[0], &w[1], &w[2]};

static int scan_result;  /* what G3 finds */
static int events_waits; /* calls of wait_events (the poll sleeper) */
static int kicked;

static int scan(int self) {
  (void)self;
  return __atomic_load_n(&scan_result, __ATOMIC_ACQUIRE);
}
static long no_timer(void) { return -1; }
static int wait_events(long ns) {
  (void)ns;
  __atomic_add_fetch(&events_waits, 1, __ATOMIC_RELAXED);
  while (!__atomic_load_n(&kicked, __ATOMIC_ACQUIRE)) usleep(500);
  __atomic_store_n(&kicked, 0, __ATOMIC_RELEASE);
  return 0;
}
static void kick(void) { __atomic_store_n(&kicked, 1, __ATOMIC_RELEASE); }

static const struct idle_ops ops = {scan, no_timer, wait_events, kick};

static uint64_t word(void) { return __atomic_load_n(&ito__rt_idle.v, __ATOMIC_ACQUIRE); }
static unsigned S(void) { return idle_S(word()); }
static unsigned Z(void) { return idle_Z(word()); }

static void *sleeper(void *p) {
  struct idler *me = p;
  ito__idle_sleep(me);
  return NULL;
}

static void wait_Z(unsigned z) {
  while (Z() != z) usleep(500);
}

static void run(bool hooks) {
  ito__idle_setup(all, 3, &ops, false, 50000, hooks);
  uint64_t flags = (ito__asym_fence ? 0 : IDLE_SYM) | (hooks ? IDLE_HOOKS : 0);
  CHECK_EQ(word(), flags);
  CHECK_EQ(idle_after_publish(0, true), IDLE_NOBODY); /* only flags: nobody idle */

  /* two spinners at most while nobody is busy */
  CHECK(ito__idle_start_spinning(&w[0]));
  CHECK(ito__idle_start_spinning(&w[1]));
  CHECK_EQ(S(), 2);
  CHECK(!ito__idle_start_spinning(&w[2]));
  CHECK_EQ(S(), 2);

  /* w2 sleeps: Z counts it, S does not */
  pthread_t th;
  CHECK_EQ(pthread_create(&th, NULL, sleeper, &w[2]), 0);
  wait_Z(1);
  CHECK_EQ(S(), 2);
  CHECK_EQ(word() & IDLE_FLAGS, flags);
  /* a publisher sees spinners: nobody is woken */
  CHECK_EQ(idle_after_publish(0, true), IDLE_SPINNERS);
  CHECK_EQ(Z(), 1);
  /* w0 stops spinning; w1 still spins: no wake-up */
  CHECK_EQ(ito__idle_stop_spinning(&w[0]), IDLE_NOBODY);
  CHECK_EQ(S(), 1);
  /* the last spinner to find work wakes a replacement, which counts in S */
  CHECK_EQ(ito__idle_stop_spinning(&w[1]), IDLE_WOKE);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(Z(), 0);
  CHECK_EQ(S(), 1);
  CHECK(w[2].spinning && !w[2].on_list);
  CHECK_EQ(w[2].ws_hint, 1); /* woken for the waker's work */
  CHECK_EQ(ito__idle_stop_spinning(&w[2]), IDLE_NOBODY);

  /* nobody spins, one sleeps: a publisher wakes it */
  CHECK_EQ(pthread_create(&th, NULL, sleeper, &w[2]), 0);
  wait_Z(1);
  CHECK_EQ(S(), 0);
  CHECK_EQ(idle_after_publish(0, true), IDLE_WOKE);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(S(), 1);
  CHECK_EQ(Z(), 0);
  CHECK_EQ(ito__idle_wake_one(0), IDLE_NOBODY); /* nobody sleeps */
  CHECK_EQ(ito__idle_stop_spinning(&w[2]), IDLE_NOBODY);

  /* mail: wake_worker wakes that sleeper even while others spin */
  CHECK(ito__idle_start_spinning(&w[0]));
  CHECK_EQ(pthread_create(&th, NULL, sleeper, &w[1]), 0);
  wait_Z(1);
  ito__idle_wake(&w[1]);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(S(), 2);
  CHECK_EQ(w[1].ws_hint, -1);
  CHECK_EQ(ito__idle_stop_spinning(&w[0]), IDLE_NOBODY);
  CHECK_EQ(ito__idle_stop_spinning(&w[1]), IDLE_NOBODY);
  CHECK_EQ(S(), 0);

  /* a scan that finds work: the sleeper leaves the list by itself */
  __atomic_store_n(&scan_result, 1 + 0, __ATOMIC_RELEASE);
  ito__idle_sleep(&w[2]);
  CHECK(w[2].spinning);
  CHECK_EQ(w[2].ws_hint, 0);
  CHECK_EQ(Z(), 0);
  CHECK_EQ(S(), 1);
  CHECK_EQ(ito__idle_stop_spinning(&w[2]), IDLE_NOBODY);
  __atomic_store_n(&scan_result, 0, __ATOMIC_RELEASE);

  /* a thread waits for a poll source: the next sleeper takes the poll role
   * and waits for events; a wake-up kicks it rather than its futex */
  ito__idle_waiter_arrives();
  CHECK(idle_waiters_any());
  int before = __atomic_load_n(&events_waits, __ATOMIC_RELAXED);
  CHECK_EQ(pthread_create(&th, NULL, sleeper, &w[0]), 0);
  while (__atomic_load_n(&events_waits, __ATOMIC_RELAXED) == before) usleep(500);
  CHECK_EQ(Z(), 1);
  CHECK_EQ(ito__idle_wake_one(-1), IDLE_WOKE);
  CHECK_EQ(pthread_join(th, NULL), 0);
  CHECK_EQ(ito__idle_stop_spinning(&w[0]), IDLE_NOBODY);
  ito__idle_waiter_leaves();
  CHECK(!idle_waiters_any());
  CHECK_EQ(word(), flags); /* back where it started */
  printf("idle: %s mode%s: spin policy, sleep, wake-ups, poll role: OK\n",
         ito__asym_fence ? "asymmetric" : "symmetric", hooks ? ", recorder bit set" : "");
}

int main(void) {
  ito__asym_fence = ito__membarrier_register();
  run(false);
  run(true);
  if (ito__asym_fence) {
    ito__asym_fence = 0; /* symmetric: M set for the whole run */
    run(false);
  }
  puts("test_idle: OK");
  return 0;
}
