/* Tiny assertion macros for the ito tests: print file:line and the failed
 * expression, then abort(). Usable from C11 and C++17. */
#ifndef ITO_TESTS_CHECK_H
#define ITO_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(expr)                                                            \
  do {                                                                         \
    if (!(expr)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr); \
      fflush(stderr);                                                          \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* Integer equality that also prints both values. */
#define CHECK_EQ(a, b)                                                                          \
  do {                                                                                          \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                             \
    if (check_a_ != check_b_) {                                                                 \
      fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, \
              #b, check_a_, check_b_);                                                          \
      fflush(stderr);                                                                           \
      abort();                                                                                  \
    }                                                                                           \
  } while (0)

/* The exit status of a test that cannot test what it was asked to in this
 * setting (ctest's SKIP_RETURN_CODE, set in tests/CMakeLists.txt): it is
 * reported as skipped, never as a pass. Print why before exiting with it. */
#define TEST_SKIP_STATUS 77

#endif
