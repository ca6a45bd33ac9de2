/* Helpers for the benchmarks written in plain C (shutdown.c, wake_floor.c):
 * the monotonic clock and argument parsing, as util.hpp gives the C++ ones. */
#ifndef BENCH_COMMON_CUTIL_H
#define BENCH_COMMON_CUTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline long long bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* argv[i] as an integer in [lo, hi], or dflt when absent; exits with a
 * message naming the program on garbage. */
static inline long bench_arg(const char *prog, int argc, char **argv, int i, long dflt, long lo,
                             long hi) {
  if (i >= argc) return dflt;
  char *end;
  long v = strtol(argv[i], &end, 10);
  if (*end || end == argv[i] || v < lo || v > hi) {
    fprintf(stderr, "%s: argument %d must be an integer in [%ld, %ld], got '%s'\n", prog, i, lo, hi,
            argv[i]);
    exit(2);
  }
  return v;
}

#endif
