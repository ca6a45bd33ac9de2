/* Drop-in test: producers and consumers on a bounded buffer, then timed
 * waits on an idle queue.
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DROPIN_PROG "prodcons"
#include "dropin.h"

#define PRODUCERS 4
#define CONSUMERS 4
#define ITEMS 1000000L
#define PER_PRODUCER (ITEMS / PRODUCERS)
#define CAPACITY 64
#define STOP (-1L)

/* ---- the bounded buffer: one mutex, two condition variables */
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t q_not_full = PTHREAD_COND_INITIALIZER;
static long q_items[CAPACITY];
static int q_head, q_count;

static void q_put(long v) {
  pthread_mutex_lock(&q_lock);
  while (q_count == CAPACITY) pthread_cond_wait(&q_not_full, &q_lock);
  q_items[(q_head + q_count) % CAPACITY] = v;
  q_count++;
  pthread_cond_signal(&q_not_empty);
  pthread_mutex_unlock(&q_lock);
}

static long q_get(void) {
  pthread_mutex_lock(&q_lock);
  while (q_count == 0) pthread_cond_wait(&q_not_empty, &q_lock);
  long v = q_items[q_head];
  q_head = (q_head + 1) % CAPACITY;
  q_count--;
  pthread_cond_signal(&q_not_full);
  pthread_mutex_unlock(&q_lock);
  return v;
}

static void *producer(void *arg) {
  long p = (long)arg;
  for (long i = 0; i < PER_PRODUCER; i++) q_put(p * PER_PRODUCER + i);
  return NULL;
}

struct consumer_result {
  long count;
  long long sum;
};

static void *consumer(void *arg) {
  struct consumer_result *r = arg;
  long last[PRODUCERS];
  for (int p = 0; p < PRODUCERS; p++) last[p] = -1;
  for (;;) {
    long v = q_get();
    if (v == STOP) break;
    if (v < 0 || v >= ITEMS) FAIL("consumer got item %ld, out of range", v);
    /* A consumer sees a subsequence of the queue, so each producer's items
     * arrive in increasing order. */
    int p = (int)(v / PER_PRODUCER);
    if (v <= last[p]) FAIL("consumer got item %ld after %ld from producer %d", v, last[p], p);
    last[p] = v;
    r->count++;
    r->sum += v;
  }
  return NULL;
}

/* ---- timed waits */
enum wait_kind { TIMEDWAIT, CLOCKWAIT };

/* Waits on an empty queue for `cond` until a deadline 50 ms ahead on
 * `clock`; returns the code. A return of 0 is a spurious wake-up: the queue
 * is still empty, so it waits again. Checks that it did not return before
 * the deadline. */
static int wait_idle(const char *what, pthread_cond_t *cond, enum wait_kind kind, clockid_t clock) {
  struct timespec deadline;
  deadline_in(clock, 50, &deadline);
  int rc;
  pthread_mutex_lock(&q_lock);
  do {
    if (kind == TIMEDWAIT)
      rc = pthread_cond_timedwait(cond, &q_lock, &deadline);
    else
      rc = pthread_cond_clockwait(cond, &q_lock, clock, &deadline);
  } while (rc == 0 && q_count == 0);
  if (q_count != 0) FAIL("%s: the idle queue holds %d items", what, q_count);
  pthread_mutex_unlock(&q_lock);
  struct timespec now;
  clock_gettime(clock, &now);
  if (rc != ETIMEDOUT) FAIL("%s returned %s, expected ETIMEDOUT", what, code_name(rc));
  if (ts_before(&now, &deadline)) FAIL("%s returned ETIMEDOUT before its deadline", what);
  return rc;
}

int main(void) {
  pthread_t prod[PRODUCERS], cons[CONSUMERS];
  struct consumer_result res[CONSUMERS];
  memset(res, 0, sizeof res);

  for (int i = 0; i < CONSUMERS; i++) {
    int rc = pthread_create(&cons[i], NULL, consumer, &res[i]);
    if (rc) FAIL("pthread_create consumer: %s", code_name(rc));
  }
  for (long i = 0; i < PRODUCERS; i++) {
    int rc = pthread_create(&prod[i], NULL, producer, (void *)i);
    if (rc) FAIL("pthread_create producer: %s", code_name(rc));
  }
  for (int i = 0; i < PRODUCERS; i++) {
    int rc = pthread_join(prod[i], NULL);
    if (rc) FAIL("pthread_join producer: %s", code_name(rc));
  }
  for (int i = 0; i < CONSUMERS; i++) q_put(STOP);
  long count = 0;
  long long sum = 0;
  for (int i = 0; i < CONSUMERS; i++) {
    int rc = pthread_join(cons[i], NULL);
    if (rc) FAIL("pthread_join consumer: %s", code_name(rc));
    count += res[i].count;
    sum += res[i].sum;
  }
  long long expect = (long long)ITEMS * (ITEMS - 1) / 2;
  if (count != ITEMS) FAIL("consumed %ld items, expected %ld", count, ITEMS);
  if (sum != expect) FAIL("sum %lld, expected %lld", sum, expect);
  printf("producers %d consumers %d capacity %d\n", PRODUCERS, CONSUMERS, CAPACITY);
  printf("items %ld sum %lld\n", count, sum);

  /* Realtime: the default clock of a condition variable. */
  int rc =
      wait_idle("pthread_cond_timedwait (CLOCK_REALTIME)", &q_not_empty, TIMEDWAIT, CLOCK_REALTIME);
  printf("pthread_cond_timedwait CLOCK_REALTIME: %s\n", code_name(rc));

  /* Monotonic, from the condition variable's attribute. */
  pthread_condattr_t ca;
  pthread_cond_t mono;
  if ((rc = pthread_condattr_init(&ca))) FAIL("pthread_condattr_init: %s", code_name(rc));
  if ((rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)))
    FAIL("pthread_condattr_setclock: %s", code_name(rc));
  clockid_t got;
  if ((rc = pthread_condattr_getclock(&ca, &got)) || got != CLOCK_MONOTONIC)
    FAIL("pthread_condattr_getclock: %s, clock %d", code_name(rc), (int)got);
  if ((rc = pthread_cond_init(&mono, &ca))) FAIL("pthread_cond_init: %s", code_name(rc));
  pthread_condattr_destroy(&ca);
  rc = wait_idle("pthread_cond_timedwait (CLOCK_MONOTONIC attribute)", &mono, TIMEDWAIT,
                 CLOCK_MONOTONIC);
  printf("pthread_cond_timedwait CLOCK_MONOTONIC attribute: %s\n", code_name(rc));
  if ((rc = pthread_cond_destroy(&mono))) FAIL("pthread_cond_destroy: %s", code_name(rc));

  /* The clock given to the call. */
  rc = wait_idle("pthread_cond_clockwait (CLOCK_MONOTONIC)", &q_not_empty, CLOCKWAIT,
                 CLOCK_MONOTONIC);
  printf("pthread_cond_clockwait CLOCK_MONOTONIC: %s\n", code_name(rc));
  rc =
      wait_idle("pthread_cond_clockwait (CLOCK_REALTIME)", &q_not_empty, CLOCKWAIT, CLOCK_REALTIME);
  printf("pthread_cond_clockwait CLOCK_REALTIME: %s\n", code_name(rc));
  return 0;
}
