/* Idle workers: sleeping, waking, shutting down (docs/idle.md).
 *
 *   test_idle handoff [cycles]   after an idle gap of random length, the root
 *                                forks a child that waits until the parent's
 *                                continuation runs on another worker, which
 *                                needs a sleeper to be woken. A lost wake-up
 *                                shows up as a child waiting forever: after
 *                                60 s the test fails and says so (a bound
 *                                for a loaded machine, which may not run a
 *                                woken worker for seconds).
 *   test_idle burst [cycles]     idle gaps, then a burst of forks; the sums
 *                                must be right and some tasks must run on
 *                                other workers (in the last burst a leaf
 *                                waits for that).
 *   test_idle outside [cycles]   an OS thread outside the runtime wakes an ito
 *                                thread (condition variable) while every
 *                                worker sleeps; it must run.
 *   test_idle timer              a timed wait expires while every worker
 *                                sleeps.
 *   test_idle shutdown           ito_finalize with every worker asleep, and
 *                                with queued threads: none is lost. Prints
 *                                how long finalize took.
 */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t rng = 0x853c49e6748fea9bULL;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* An idle gap on the root: busy (the other workers spin, then sleep) or an
 * OS-level sleep; lengths around the spin time and far beyond it. */
static void idle_gap(void) {
  static const int64_t lens[] = {0, 5000, 30000, 50000, 70000, 150000, 400000, 2000000};
  int64_t ns = lens[next_rand() % 8] + (int64_t)(next_rand() % 20000);
  if (next_rand() & 1) {
    int64_t end = now_ns() + ns;
    while (now_ns() < end) {
    }
  } else {
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
  }
}

/* ---- handoff ----------------------------------------------------------------- */

typedef struct {
  atomic_int parent_ran;
  int cycle;
  int child_worker;
} handoff_t;

static void handoff_child(void *p) {
  handoff_t *h = p;
  h->child_worker = ito_worker_id();
  int64_t deadline = now_ns() + 60LL * 1000000000LL;
  while (!atomic_load_explicit(&h->parent_ran, memory_order_acquire)) {
    if (now_ns() > deadline) {
      fprintf(stderr,
              "test_idle: LOST WAKE-UP in cycle %d: the forking worker's continuation was not "
              "taken by any of the %d other workers within 60 s\n",
              h->cycle, ito_num_workers() - 1);
      abort();
    }
  }
}

static void run_handoff(int cycles) {
  long moved = 0;
  for (int c = 0; c < cycles; c++) {
    idle_gap();
    handoff_t h;
    atomic_init(&h.parent_ran, 0);
    h.cycle = c;
    h.child_worker = -1;
    ito_tg_t tg;
    ito_tg_init(&tg);
    ito_tg_fork(&tg, handoff_child, &h, 0);
    /* here only when another worker took the continuation, or the child
     * returned (it returns only after this store) */
    int me = ito_worker_id();
    atomic_store_explicit(&h.parent_ran, 1, memory_order_release);
    ito_tg_join(&tg);
    CHECK(h.child_worker >= 0);
    moved += me != h.child_worker;
  }
  /* the child spins until the continuation ran, so every cycle moved it */
  CHECK_EQ(moved, cycles);
  printf("handoff: %d cycles, every continuation taken by another worker\n", cycles);
}

/* ---- burst ------------------------------------------------------------------- */

static atomic_long other_worker_tasks;
static int wait_for_other; /* the first leaf waits until a leaf ran on another worker */

typedef struct {
  int lo, hi;
  long *out;
} sum_arg;

static long sum_par(int lo, int hi);
static void sum_task(void *p) {
  sum_arg *a = p;
  *a->out = sum_par(a->lo, a->hi);
}
static long sum_par(int lo, int hi) {
  if (hi - lo <= 4) {
    long s = 0;
    for (int i = lo; i < hi; i++) s += i;
    if (ito_worker_id() != 0)
      atomic_fetch_add_explicit(&other_worker_tasks, 1, memory_order_relaxed);
    /* (its siblings' continuations wait in deques: a woken worker takes
     * one; a loaded machine may run it late, so wait for the state) */
    if (lo == 0 && wait_for_other) {
      int64_t deadline = now_ns() + 60LL * 1000000000LL;
      while (!atomic_load_explicit(&other_worker_tasks, memory_order_relaxed)) {
        if (now_ns() > deadline) {
          fprintf(stderr, "test_idle: no leaf of a burst ran on another worker within 60 s\n");
          abort();
        }
      }
    }
    /* a little work, so that a woken worker finds the tree still there */
    int64_t end = now_ns() + 2000;
    while (now_ns() < end) {
    }
    return s;
  }
  int mid = lo + (hi - lo) / 2;
  long x = 0;
  sum_arg a = {lo, mid, &x};
  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_fork(&tg, sum_task, &a, sizeof a);
  long y = sum_par(mid, hi);
  ito_tg_join(&tg);
  return x + y;
}

static void run_burst(int cycles) {
  for (int c = 0; c < cycles; c++) {
    idle_gap();
    int n = 64 + (int)(next_rand() % 2000);
    wait_for_other = c == cycles - 1 && ito_num_workers() > 1;
    long s = sum_par(0, n);
    CHECK_EQ(s, (long)n * (n - 1) / 2);
  }
  long other = atomic_load(&other_worker_tasks);
  printf("burst: %d cycles, %ld leaves ran on workers other than 0\n", cycles, other);
  if (ito_num_workers() > 1) CHECK(other > 0);
}

/* ---- outside ----------------------------------------------------------------- */

static ito_mutex_t om;
static ito_cond_t oc;
static int posted, taken;
static atomic_int acked;

static void *waiter_thread(void *arg) {
  int cycles = *(int *)arg;
  for (int c = 0; c < cycles; c++) {
    ito_mutex_lock(&om);
    while (posted == taken) ito_cond_wait(&oc, &om);
    taken++;
    ito_mutex_unlock(&om);
    atomic_store_explicit(&acked, taken, memory_order_release);
  }
  return NULL;
}

static void *outside_thread(void *arg) {
  int cycles = *(int *)arg;
  for (int c = 0; c < cycles; c++) {
    struct timespec ts = {0, (long)(next_rand() % 3) * 100000L + (long)(next_rand() % 50000)};
    nanosleep(&ts, NULL); /* the workers spin, then sleep */
    ito_mutex_lock(&om);
    posted++;
    ito_cond_signal(&oc);
    ito_mutex_unlock(&om);
    int64_t deadline = now_ns() + 60LL * 1000000000LL;
    while (atomic_load_explicit(&acked, memory_order_acquire) != c + 1) {
      if (now_ns() > deadline) {
        fprintf(stderr,
                "test_idle: LOST WAKE-UP in cycle %d: an ito thread signalled from outside the "
                "runtime did not run within 60 s\n",
                c);
        abort();
      }
      sched_yield();
    }
  }
  return NULL;
}

static void run_outside(int cycles) {
  CHECK_EQ(ito_mutex_init(&om), 0);
  CHECK_EQ(ito_cond_init(&oc), 0);
  ito_thread_t t;
  CHECK_EQ(ito_create(waiter_thread, &cycles, &t), 0);
  pthread_t o;
  CHECK_EQ(pthread_create(&o, NULL, outside_thread, &cycles), 0);
  CHECK_EQ(ito_join(t, NULL), 0); /* the root blocks too: every worker is idle */
  CHECK_EQ(pthread_join(o, NULL), 0);
  CHECK_EQ(taken, cycles);
  printf("outside: %d wake-ups from a plain OS thread, none lost\n", cycles);
}

/* ---- timer ------------------------------------------------------------------- */

static void *timed_thread(void *arg) {
  (void)arg;
  ito_mutex_t m;
  ito_cond_t c;
  CHECK_EQ(ito_mutex_init(&m), 0);
  CHECK_EQ(ito_cond_init(&c), 0);
  for (int i = 0; i < 20; i++) {
    /* t0 before the deadline is computed: a thread descheduled between
     * the two reads would otherwise start its count late, and see the
     * wait end less than 2 ms after it */
    int64_t t0 = now_ns();
    struct timespec abs;
    clock_gettime(CLOCK_REALTIME, &abs);
    abs.tv_nsec += 2000000;
    if (abs.tv_nsec >= 1000000000L) {
      abs.tv_sec++;
      abs.tv_nsec -= 1000000000L;
    }
    ito_mutex_lock(&m);
    int rc = ito_cond_timedwait(&c, &m, &abs);
    ito_mutex_unlock(&m);
    CHECK_EQ(rc, ETIMEDOUT);
    CHECK(now_ns() - t0 >= 1500000); /* not before its time (clocks differ by a little) */
  }
  return NULL;
}

static void run_timer(void) {
  ito_thread_t t;
  CHECK_EQ(ito_create(timed_thread, NULL, &t), 0);
  CHECK_EQ(ito_join(t, NULL), 0);
  printf("timer: 20 timed waits expired while the workers slept\n");
}

/* ---- shutdown ---------------------------------------------------------------- */

static atomic_int finished;

static void *queued_thread(void *arg) {
  (void)arg;
  ito_yield();
  atomic_fetch_add(&finished, 1);
  return NULL;
}

static void run_shutdown(void) {
  for (int round = 0; round < 5; round++) {
    CHECK_EQ(ito_init(), 0);
    int n = ito_num_workers();
    struct timespec ts = {0, 20 * 1000000L}; /* every worker goes to sleep */
    nanosleep(&ts, NULL);
    int64_t t0 = now_ns();
    CHECK_EQ(ito_finalize(), 0);
    double ms = (double)(now_ns() - t0) / 1e6;
    printf("shutdown: ito_finalize with %d sleeping workers took %.3f ms\n", n - 1, ms);
  }
  /* queued work is not lost: detached threads still queued at finalize run */
  CHECK_EQ(ito_init(), 0);
  atomic_store(&finished, 0);
  for (int i = 0; i < 1000; i++) {
    ito_thread_t t;
    CHECK_EQ(ito_create(queued_thread, NULL, &t), 0);
    CHECK_EQ(ito_detach(t), 0);
  }
  CHECK_EQ(ito_finalize(), 0);
  CHECK_EQ(atomic_load(&finished), 1000);
  printf("shutdown: 1000 detached threads queued at ito_finalize all ran\n");
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "all";
  int cycles = argc > 2 ? atoi(argv[2]) : 0;
  const char *seed = getenv("TEST_IDLE_SEED");
  if (seed) rng = strtoull(seed, NULL, 0) | 1;
  int all = !strcmp(what, "all");
  if (!all && strcmp(what, "shutdown") && strcmp(what, "handoff") && strcmp(what, "burst") &&
      strcmp(what, "outside") && strcmp(what, "timer")) {
    fprintf(stderr,
            "test_idle: unknown part \"%s\" (all, handoff, burst, outside, timer, shutdown)\n",
            what);
    return 2;
  }
  if (!strcmp(what, "shutdown") || all) {
    run_shutdown();
    if (!all) return 0;
  }
  CHECK_EQ(ito_init(), 0);
  int skipped = 0;
  if (!strcmp(what, "handoff") || all) {
    if (ito_num_workers() < 2) {
      /* a continuation cannot be taken by another worker: the part would
       * test nothing, so the run is reported as skipped, not passed */
      printf("handoff: needs 2 workers, has %d: SKIPPED\n", ito_num_workers());
      skipped = 1;
    } else {
      run_handoff(cycles ? cycles : 2000);
    }
  }
  if (!strcmp(what, "burst") || all) run_burst(cycles ? cycles : 500);
  if (!strcmp(what, "outside") || all) run_outside(cycles ? cycles : 500);
  if (!strcmp(what, "timer") || all) run_timer();
  CHECK_EQ(ito_finalize(), 0);
  return skipped ? TEST_SKIP_STATUS : 0;
}
