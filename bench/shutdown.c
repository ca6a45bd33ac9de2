/* How long ito_finalize takes while every other worker sleeps, and that it
 * loses no queued work (the idle-workers paper's workers sleep; they must still stop
 * promptly).
 *
 *   shutdown [reps=20] [queued=1000]
 *
 * Per repetition: ito_init; a parallel burst (a spawn tree) so every worker
 * has run; 20 ms of sleep on the main thread (every worker goes idle and
 * then asleep); `queued` detached threads are created, each yielding once
 * before it counts itself; then ito_finalize is timed. It must return only
 * after all of them ran. CSV, one line per repetition:
 *   workers,rep,queued,finalize_ms
 * Exits nonzero if a thread was lost. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/cutil.h"

static atomic_long ran;

static void leaf_or_split(void *p);
typedef struct {
  int n;
} tree_arg;

static void tree(int n) {
  if (n <= 1) {
    atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
    return;
  }
  ito_tg_t tg;
  ito_tg_init(&tg);
  tree_arg a = {n / 2};
  ito_tg_fork(&tg, leaf_or_split, &a, sizeof a);
  tree(n - n / 2);
  ito_tg_join(&tg);
}
static void leaf_or_split(void *p) { tree(((tree_arg *)p)->n); }

static void *queued_fn(void *arg) {
  (void)arg;
  ito_yield();
  atomic_fetch_add_explicit(&ran, 1, memory_order_relaxed);
  return NULL;
}

static void *burst_fn(void *arg) {
  tree(*(int *)arg);
  return NULL;
}

int main(int argc, char **argv) {
  int reps = (int)bench_arg("shutdown", argc, argv, 1, 20, 1, 100000);
  int queued = (int)bench_arg("shutdown", argc, argv, 2, 1000, 0, 10000000);
  printf("# bench=shutdown system=ito\n");
  printf("workers,rep,queued,finalize_ms\n");
  for (int r = 0; r < reps; r++) {
    int rc = ito_init();
    if (rc) {
      fprintf(stderr, "shutdown: ito_init failed (%d)\n", rc);
      return 3;
    }
    int workers = ito_num_workers();
    int leaves = 64 * workers;
    atomic_store(&ran, 0);
    ito_thread_t b;
    if (ito_create(burst_fn, &leaves, &b) || ito_join(b, NULL)) {
      fprintf(stderr, "shutdown: the burst thread failed\n");
      return 3;
    }
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    for (int i = 0; i < queued; i++) {
      ito_thread_t t;
      if (ito_create(queued_fn, NULL, &t) || ito_detach(t)) {
        fprintf(stderr, "shutdown: creating queued thread %d failed\n", i);
        return 3;
      }
    }
    int64_t t0 = bench_now_ns();
    rc = ito_finalize();
    double ms = (double)(bench_now_ns() - t0) / 1e6;
    if (rc) {
      fprintf(stderr, "shutdown: ito_finalize failed (%d)\n", rc);
      return 3;
    }
    long got = atomic_load(&ran);
    if (got != (long)leaves + queued) {
      fprintf(stderr, "shutdown: WRONG ANSWER: %ld of %ld tasks and threads ran\n", got,
              (long)leaves + queued);
      return 1;
    }
    printf("%d,%d,%d,%.4f\n", workers, r, queued, ms);
    fflush(stdout);
  }
  return 0;
}
