/* Wait queues and the one wait (src/core/waitq.h, wait.h), white box,
 * with plain OS threads as the waiters (no runtime started): FIFO order, wakes, timeouts on both
 * clocks, tags, the callback run under the lock, and a timeout racing a
 * wake (invariant 2: taken exactly once). */
#define _GNU_SOURCE
#include "../../src/core/wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"

static int qlock;
static void *head, *tail;

struct arg {
  int tag;
  long long timeout_ns; /* 0: none */
  clockid_t clock;
  int rc;
  int order; /* when it returned */
};
static int returned;

static void *waiter_fn(void *p) {
  struct arg *a = p;
  struct timespec abs, *absp = NULL;
  if (a->timeout_ns) {
    abs = deadline_in(a->clock, a->timeout_ns);
    absp = &abs;
  }
  spin_lock(&qlock, LR_QUEUE);
  a->rc = ito__wq_wait(&qlock, &head, &tail, a->tag, a->clock, absp, NULL, NULL);
  a->order = __atomic_add_fetch(&returned, 1, __ATOMIC_ACQ_REL);
  return NULL;
}

static int queued(void) {
  int n = 0;
  spin_lock(&qlock, LR_QUEUE);
  for (waiter *w = head; w; w = w->next) n++;
  spin_unlock(&qlock);
  return n;
}

static void wait_queued(int n) {
  while (queued() != n) usleep(1000);
}

static void fifo_and_tags(void) {
  struct arg a[3] = {{1, 0, CLOCK_MONOTONIC, -1, 0},
                     {1, 0, CLOCK_MONOTONIC, -1, 0},
                     {2, 0, CLOCK_MONOTONIC, -1, 0}};
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    CHECK_EQ(pthread_create(&th[i], NULL, waiter_fn, &a[i]), 0);
    wait_queued(i + 1); /* queued in this order */
  }
  spin_lock(&qlock, LR_QUEUE);
  CHECK_EQ(wq_head_tag(&head), 1);
  int n = 0;
  waiter *readers = ito__wq_take_tag(&head, &tail, 1, &n);
  CHECK_EQ(n, 2);
  CHECK_EQ(wq_head_tag(&head), 2);
  spin_unlock(&qlock);
  ito__wq_wake(readers);
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
  CHECK(a[0].rc == 0 && a[1].rc == 0);
  spin_lock(&qlock, LR_QUEUE);
  waiter *w = ito__wq_take(&head, &tail, 1);
  CHECK(w && !head && !tail);
  CHECK_EQ(wq_head_tag(&head), -1);
  spin_unlock(&qlock);
  ito__wake_waiter(w);
  CHECK_EQ(pthread_join(th[2], NULL), 0);
  CHECK_EQ(a[2].rc, 0);
  puts("waitq: FIFO, tags, batch and single wakes: OK");
}

static void timeouts(void) {
  for (int c = 0; c < 2; c++) {
    clockid_t clock = c ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    struct arg a = {0, 20 * 1000000LL, clock, -1, 0};
    long long t0 = clock_ns(CLOCK_MONOTONIC);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, waiter_fn, &a), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(a.rc, ETIMEDOUT);
    CHECK(clock_ns(CLOCK_MONOTONIC) - t0 >= 20 * 1000000LL);
    CHECK_EQ(queued(), 0); /* off the queue */
  }
  puts("waitq: timeouts on both clocks leave the queue: OK");
}

/* Invariant 2: a wake that takes the waiter just as its timeout passes;
 * whichever takes it decides the result, and the waiter is off the queue
 * exactly once. */
static void timeout_races_wake(void) {
  int zero = 0, timedout = 0;
  for (int i = 0; i < 200; i++) {
    struct arg a = {0, 200000 + (i % 7) * 50000, CLOCK_MONOTONIC, -1, 0};
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, waiter_fn, &a), 0);
    usleep(200 + (i % 5) * 100); /* about when the waiter times out */
    spin_lock(&qlock, LR_QUEUE);
    waiter *w = ito__wq_take(&head, &tail, 1);
    spin_unlock(&qlock);
    if (w) ito__wake_waiter(w);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK(a.rc == 0 || a.rc == ETIMEDOUT);
    CHECK(a.rc == 0 || !w); /* taken by a wake: woken, never "timed out" */
    if (a.rc == 0)
      zero++;
    else
      timedout++;
    CHECK_EQ(queued(), 0);
  }
  printf("waitq: a timeout racing a wake, 200 runs (%d woken, %d timed out): OK\n", zero, timedout);
}

static int locked_calls;
static int refuse(void *p) {
  CHECK(spin_held(&qlock)); /* still under the queue's lock */
  locked_calls++;
  return *(int *)p;
}

static void locked_callback(void) {
  int refusal = EPERM;
  spin_lock(&qlock, LR_QUEUE);
  CHECK_EQ(ito__wq_wait(&qlock, &head, &tail, 0, CLOCK_MONOTONIC, NULL, refuse, &refusal), EPERM);
  CHECK(!spin_held(&qlock));
  CHECK_EQ(locked_calls, 1);
  CHECK_EQ(queued(), 0);
  puts("waitq: a refusing callback under the lock returns its value, off the queue: OK");
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  fifo_and_tags();
  timeouts();
  timeout_races_wake();
  locked_callback();
  puts("test_waitq: OK");
  return 0;
}
