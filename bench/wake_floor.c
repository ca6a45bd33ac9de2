/* The operating system's floor for waking a sleeping worker: how long a
 * plain OS thread asleep on a futex takes to run after another thread wakes
 * it, with the same idle gap before each wake-up as the `wake` benchmark.
 * No runtime is involved; the report prints it next to the runtimes' wake
 * latencies, which cannot be lower unless their idle threads never sleep.
 *
 *   wake_floor [reps=1000] [dropped=100] [gap_us=2000]
 *
 * Per repetition the waker runs gap_us of busy work (the sleeper is asleep
 * by then), records t0, sets the futex word and calls FUTEX_WAKE; the
 * sleeper records t1 as soon as futex_wait returns. CSV, one line per kept
 * repetition:
 *   rep,wake_ns
 * Exits nonzero if a wake-up took more than 10 s (lost). */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cutil.h"

static atomic_int word, asleep, stop;
static atomic_llong woke_at;

static void *sleeper(void *arg) {
  (void)arg;
  for (;;) {
    atomic_store(&asleep, 1);
    while (atomic_load(&word) == 0) syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    atomic_store(&woke_at, bench_now_ns());
    atomic_store(&word, 0);
    if (atomic_load(&stop)) return NULL;
  }
}

int main(int argc, char **argv) {
  int reps = (int)bench_arg("wake_floor", argc, argv, 1, 1000, 1, 10000000);
  int drop = (int)bench_arg("wake_floor", argc, argv, 2, 100, 0, reps - 1);
  long gap_us = bench_arg("wake_floor", argc, argv, 3, 2000, 0, 10000000);
  pthread_t t;
  if (pthread_create(&t, NULL, sleeper, NULL)) {
    fprintf(stderr, "wake_floor: pthread_create failed\n");
    return 3;
  }
  printf("# bench=wake_floor system=os\n");
  printf("rep,wake_ns\n");
  for (int r = 0; r < reps; r++) {
    while (!atomic_load(&asleep)) {
    }
    atomic_store(&asleep, 0);
    long long end = bench_now_ns() + gap_us * 1000;
    while (bench_now_ns() < end) {
    }
    if (r == reps - 1) atomic_store(&stop, 1);
    atomic_store(&woke_at, 0);
    long long t0 = bench_now_ns();
    atomic_store(&word, 1);
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    long long t1;
    while ((t1 = atomic_load(&woke_at)) == 0) {
      if (bench_now_ns() - t0 > 10LL * 1000000000LL) {
        fprintf(stderr, "wake_floor: the sleeper did not run within 10 s\n");
        return 1;
      }
    }
    if (r >= drop) printf("%d,%lld\n", r, t1 - t0);
  }
  pthread_join(t, NULL);
  return 0;
}
