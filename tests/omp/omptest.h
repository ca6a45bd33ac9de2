/* Shared helpers for the OpenMP conformance programs (tests/omp/).
 *
 * Every program prints only what must be the same under any conforming
 * runtime at a given OMP_NUM_THREADS: sums, counts, checks that passed,
 * sorted results. A failed check goes to stderr (the first few of them),
 * is counted, and makes omptest_finish() print "FAILED" and return 1, so
 * compare.sh sees both a different stdout and a nonzero exit status.
 *
 * CHECK may be used inside parallel regions and tasks: it never exits. */
#ifndef ITO_TESTS_OMP_OMPTEST_H
#define ITO_TESTS_OMP_OMPTEST_H

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int omptest_failures;

__attribute__((unused)) static void omptest_fail(const char *file, int line, const char *what,
                                                 long long a, long long b, int have_values) {
  int n = __atomic_fetch_add(&omptest_failures, 1, __ATOMIC_RELAXED);
  if (n < 20) {
    if (have_values)
      fprintf(stderr, "%s:%d: CHECK failed: %s (%lld vs %lld)\n", file, line, what, a, b);
    else
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
    fflush(stderr);
  }
}

#define CHECK(expr)                                                \
  do {                                                             \
    if (!(expr)) omptest_fail(__FILE__, __LINE__, #expr, 0, 0, 0); \
  } while (0)

#define CHECK_EQ(a, b)                                                           \
  do {                                                                           \
    long long omptest_a_ = (long long)(a), omptest_b_ = (long long)(b);          \
    if (omptest_a_ != omptest_b_)                                                \
      omptest_fail(__FILE__, __LINE__, #a " == " #b, omptest_a_, omptest_b_, 1); \
  } while (0)

/* Relaxed atomic helpers for counters shared between threads. */
#define AINC(p) __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#define AADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define ALOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ASTORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static inline int omptest_failed(void) {
  return __atomic_load_n(&omptest_failures, __ATOMIC_RELAXED);
}

/* Prints the verdict line and returns main's exit status. */
static inline int omptest_finish(const char *name) {
  int n = omptest_failed();
  if (n) {
    printf("%s: FAILED (%d checks)\n", name, n);
    fprintf(stderr, "%s: %d checks failed\n", name, n);
    return 1;
  }
  printf("%s: ok\n", name);
  return 0;
}

/* Every counter in cnt[0..n) equals want. Returns the index of the first
 * one that does not, or -1. */
static inline long omptest_all_eq(const int *cnt, long n, int want) {
  for (long i = 0; i < n; i++)
    if (__atomic_load_n(&cnt[i], __ATOMIC_RELAXED) != want) return i;
  return -1;
}

static inline int omptest_cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

#endif
