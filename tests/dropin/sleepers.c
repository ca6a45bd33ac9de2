/* Drop-in test: sleeping threads. 200 threads each sleep 20 ms in each of
 * nanosleep, usleep and clock_nanosleep (monotonic relative, monotonic
 * absolute, realtime absolute), and no call returns early. Then an order
 * check: while thread A sleeps, thread B is created, runs and ends.
 *
 * Under libito-pthread.so with one worker, a sleep that blocked the only
 * worker would keep B from running until A woke, and A would print "no".
 * No check here bounds a duration other than "not shorter than asked".
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "sleepers"
#include "dropin.h"

#define SLEEPERS 200
#define SLEEP_MS 20L
#define A_SLEEP_MAX_MS 30000L
#define NS_PER_MS 1000000LL

static long long now_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct timespec ts_of(long long ns) {
  struct timespec t = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
  return t;
}

enum call { NANOSLEEP, USLEEP, MONO_RELATIVE, MONO_ABSOLUTE, REAL_ABSOLUTE, CALLS };
static const char *call_names[CALLS] = {"nanosleep", "usleep",
                                        "clock_nanosleep(CLOCK_MONOTONIC, relative)",
                                        "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)",
                                        "clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)"};
static atomic_int done_calls[CALLS];

/* Sleeps SLEEP_MS with one call; fails if it returned early or with an error. */
static void sleep_once(enum call c) {
  long long want = SLEEP_MS * NS_PER_MS;
  long long t0 = now_ns(CLOCK_MONOTONIC);
  long long deadline = 0;
  clockid_t clock = CLOCK_MONOTONIC;
  int rc = 0;
  struct timespec req = ts_of(want), rem = {1, 1};
  switch (c) {
    case NANOSLEEP:
      if (nanosleep(&req, &rem) != 0) FAIL("nanosleep: %s", strerror(errno));
      break;
    case USLEEP:
      if (usleep((useconds_t)(SLEEP_MS * 1000)) != 0) FAIL("usleep: %s", strerror(errno));
      break;
    case MONO_RELATIVE:
      rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &rem);
      break;
    case MONO_ABSOLUTE:
      deadline = t0 + want;
      req = ts_of(deadline);
      rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &req, NULL);
      break;
    case REAL_ABSOLUTE:
      clock = CLOCK_REALTIME;
      deadline = now_ns(CLOCK_REALTIME) + want;
      req = ts_of(deadline);
      rc = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &req, NULL);
      break;
    default:
      FAIL("no call %d", (int)c);
  }
  if (rc != 0) FAIL("%s: %s", call_names[c], strerror(rc));
  long long t1 = now_ns(CLOCK_MONOTONIC);
  if (c != REAL_ABSOLUTE && t1 - t0 < want)
    FAIL("%s slept %lld ns, asked for %lld", call_names[c], t1 - t0, want);
  if (deadline && now_ns(clock) < deadline) FAIL("%s returned before its deadline", call_names[c]);
  atomic_fetch_add(&done_calls[c], 1);
}

static void *sleeper(void *arg) {
  (void)arg;
  for (int c = 0; c < CALLS; c++) sleep_once((enum call)c);
  return NULL;
}

/* ---- the order check */
static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flag_cond = PTHREAD_COND_INITIALIZER;
static int a_about_to_sleep;
static atomic_int b_ran;

static void *thread_a(void *arg) {
  (void)arg;
  pthread_mutex_lock(&flag_lock);
  a_about_to_sleep = 1;
  pthread_cond_signal(&flag_cond);
  pthread_mutex_unlock(&flag_lock);
  /* sleeps of 10 ms until B ran, 30 s at most: a busy machine may be slow
   * to run main and B, but only a sleep that holds the worker keeps them
   * from running for 30 s */
  for (long slept = 0; !atomic_load(&b_ran) && slept < A_SLEEP_MAX_MS; slept += 10) {
    struct timespec t = ts_of(10 * NS_PER_MS);
    while (nanosleep(&t, &t) != 0) {
    }
  }
  printf("B ran while A slept: %s\n", atomic_load(&b_ran) ? "yes" : "no");
  return NULL;
}

static void *thread_b(void *arg) {
  (void)arg;
  atomic_fetch_add(&b_ran, 1);
  return NULL;
}

static atomic_int woke_forever[3];
static void *forever(void *arg) {
  int i = (int)(intptr_t)arg;
  struct timespec never = {LONG_MAX, 999999999};
  if (i == 0) nanosleep(&never, NULL);
  if (i == 1) clock_nanosleep(CLOCK_MONOTONIC, 0, &never, NULL);
  if (i == 2) clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &never, NULL);
  atomic_store(&woke_forever[i], 1);
  return NULL;
}

int main(void) {
  pthread_t t[SLEEPERS];
  for (int i = 0; i < SLEEPERS; i++)
    must("pthread_create", pthread_create(&t[i], NULL, sleeper, NULL));
  for (int i = 0; i < SLEEPERS; i++) must("pthread_join", pthread_join(t[i], NULL));
  for (int c = 0; c < CALLS; c++) {
    int n = atomic_load(&done_calls[c]);
    if (n != SLEEPERS) FAIL("%s: %d calls, expected %d", call_names[c], n, SLEEPERS);
    printf("%s: %d threads slept at least %ld ms\n", call_names[c], n, SLEEP_MS);
  }
  fflush(stdout);

  pthread_t a, b;
  must("pthread_create A", pthread_create(&a, NULL, thread_a, NULL));
  pthread_mutex_lock(&flag_lock);
  while (!a_about_to_sleep) pthread_cond_wait(&flag_cond, &flag_lock);
  pthread_mutex_unlock(&flag_lock);
  must("pthread_create B", pthread_create(&b, NULL, thread_b, NULL));
  must("pthread_join B", pthread_join(b, NULL));
  must("pthread_join A", pthread_join(a, NULL));

  /* sleeps longer than the clocks' range in nanoseconds are for ever, not
   * over at once: each forever sleeper must still sleep 100 ms later (the
   * process ends with them asleep) */
  pthread_t f[3];
  for (int i = 0; i < 3; i++) {
    must("pthread_create forever", pthread_create(&f[i], NULL, forever, (void *)(intptr_t)i));
    must("pthread_detach forever", pthread_detach(f[i]));
  }
  struct timespec tenth = {0, 100 * 1000000L};
  nanosleep(&tenth, NULL);
  for (int i = 0; i < 3; i++)
    if (atomic_load(&woke_forever[i])) FAIL("a sleep of LONG_MAX seconds (%d) ended", i);
  printf("sleeps of LONG_MAX seconds still sleep\n");
  return 0;
}
