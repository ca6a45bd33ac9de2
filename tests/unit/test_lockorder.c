/* The lock order's check (src/core/base.h, docs/locks.md), in Debug and
 * sanitizer builds: each fault runs in a child of its own, which must end
 * with SIGABRT after one line on stderr that names the fault; the orders
 * the note allows run to the end.
 *   1. a lock of a lower rank taken while a higher one is held;
 *   2. a lock of the same rank taken while one is held;
 *   3. a lock taken again by its holder;
 *   4. an ito thread that parks (ito_yield) holding a lock;
 *   5. an ito thread that ends holding a lock;
 *   6. allowed: ranks taken in ascending order, a trylock of a lower rank
 *      while a higher one is held, and a park on a wait queue whose lock
 *      the scheduler lets go (ito__wq_wait).
 * A Release build has no check: the test says SKIPPED. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include "../../src/core/base.h"
#include "../../src/core/wait.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "../child.h"

static int a, b, c;

static void *hold_and_yield(void *p) {
  spin_lock(&a, LR_LEAF);
  if (p) ito_yield(); /* case 4 */
  return NULL;        /* case 5: ends holding it */
}

static void fault(int which) {
  switch (which) {
    case 1:
      spin_lock(&a, LR_TIMER);
      spin_lock(&b, LR_QUEUE);
      break;
    case 2:
      spin_lock(&a, LR_QUEUE);
      spin_lock(&b, LR_QUEUE);
      break;
    case 3:
      spin_lock(&a, LR_QUEUE);
      spin_lock(&a, LR_QUEUE);
      break;
    case 4:
    case 5: {
      CHECK_EQ(ito_init(), 0);
      ito_thread_t t;
      CHECK_EQ(ito_create(hold_and_yield, which == 4 ? (void *)1 : NULL, &t), 0);
      ito_join(t, NULL);
      break;
    }
  }
}

static const char *const want[] = {
    NULL,
    "taken after one of the same or a higher rank",
    "taken after one of the same or a higher rank",
    "taken again by its holder",
    "held across a switch",
    "held across a switch",
};

static void fault_in_child(void *which) { fault((int)(intptr_t)which); }

static void expect_abort(int which) {
  char buf[1024];
  int st = child_run(fault_in_child, (void *)(intptr_t)which, buf, sizeof buf);
  if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(buf, want[which])) {
    fprintf(stderr, "case %d: status %#x, stderr \"%s\"; wanted SIGABRT and \"%s\"\n", which, st,
            buf, want[which]);
    CHECK(0);
  }
  printf("lockorder: case %d: %s", which, strstr(buf, "ito: lock order"));
}

static int qlock;
static void *qhead, *qtail;
static int parked;

static void *park_on_queue(void *arg) {
  (void)arg;
  spin_lock(&qlock, LR_QUEUE);
  __atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
  ito__wq_wait(&qlock, &qhead, &qtail, 0, CLOCK_MONOTONIC, NULL, NULL, NULL);
  return NULL;
}

static void allowed(void) {
  spin_lock(&a, LR_QUEUE_OUTER);
  spin_lock(&b, LR_QUEUE);
  spin_lock(&c, LR_TIMER);
  spin_unlock(&c);
  CHECK(spin_trylock(&c, LR_INIT)); /* (not ordered: it never waits) */
  spin_unlock(&c);
  spin_unlock(&b);
  spin_unlock(&a);
  CHECK_EQ(ito_init(), 0);
  ito_thread_t t;
  CHECK_EQ(ito_create(park_on_queue, NULL, &t), 0);
  for (;;) { /* until it is queued (its lock let go by the scheduler) */
    spin_lock(&qlock, LR_QUEUE);
    void *w = __atomic_load_n(&parked, __ATOMIC_ACQUIRE) ? ito__wq_take(&qhead, &qtail, 1) : NULL;
    spin_unlock(&qlock);
    if (w) {
      ito__wq_wake(w);
      break;
    }
    ito_yield();
  }
  CHECK_EQ(ito_join(t, NULL), 0);
  CHECK_EQ(ito_finalize(), 0);
  printf("lockorder: case 6: ascending ranks, a trylock out of order, a park on a queue: OK\n");
}

int main(void) {
#if !ITO_ASSERTS
  printf("lockorder: SKIPPED: a Release build does not check the lock order\n");
  return 77;
#else
  for (int i = 1; i <= 5; i++) expect_abort(i);
  allowed();
  printf("lockorder: PASS\n");
  return 0;
#endif
}
