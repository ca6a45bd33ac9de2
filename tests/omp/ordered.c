/* Ordered loops (GOMP_loop_ordered_*_start, GOMP_ordered_start/end): the
 * ordered regions print their iteration numbers, so stdout itself shows
 * that they ran in iteration order; larger loops record a ticket per
 * ordered region instead. Schedules static, static with a chunk, dynamic,
 * guided, runtime; ascending, descending and unsigned long long loops;
 * combined parallel for ordered; work outside the ordered region that
 * runs in any order; loops where only some iterations reach the ordered
 * region. */
#include "omptest.h"

#define PRAGMA(x) _Pragma(#x)

/* Prints iterations in order (the output is the check). */
#define PRINTED(SCHED, FROM, CMP, TO, STEP)                              \
  do {                                                                   \
    printf("ordered %s from %d to %d step %d:", #SCHED, FROM, TO, STEP); \
    PRAGMA(omp parallel for ordered SCHED)                               \
    for (int i = FROM; i CMP TO; i += STEP) {                            \
      _Pragma("omp ordered") printf(" %d", i);                           \
    }                                                                    \
    printf("\n");                                                        \
  } while (0)

#define BIG 20000
static int seq[BIG];

/* Records the order of BIG ordered regions, with unordered work before. */
#define RECORDED(SCHED)                                                                         \
  do {                                                                                          \
    int next = 0, bad = 0;                                                                      \
    long outside = 0;                                                                           \
    _Pragma("omp parallel") {                                                                   \
      PRAGMA(omp for ordered SCHED reduction(+ : outside))                                      \
      for (int i = 0; i < BIG; i++) {                                                           \
        outside += i % 7;                                                                       \
        _Pragma("omp ordered") seq[next++] = i;                                                 \
      }                                                                                         \
    }                                                                                           \
    for (int i = 0; i < BIG; i++) bad += seq[i] != i;                                           \
    printf("ordered %-22s %d regions, %d out of order, unordered sum %ld\n", #SCHED, next, bad, \
           outside);                                                                            \
    CHECK_EQ(next, BIG);                                                                        \
    CHECK_EQ(bad, 0);                                                                           \
  } while (0)

int main(void) {
  PRINTED(schedule(static), 0, <, 40, 1);
  PRINTED(schedule(static, 1), 0, <, 40, 1);
  PRINTED(schedule(static, 3), 100, >, 50, -2);
  PRINTED(schedule(dynamic), 0, <, 40, 1);
  PRINTED(schedule(dynamic, 4), -20, <, 20, 3);
  PRINTED(schedule(guided), 40, >, 0, -1);
  PRINTED(schedule(guided, 3), 0, <, 40, 1);
  PRINTED(schedule(runtime), 0, <, 40, 1);
  PRINTED(schedule(auto), 0, <, 40, 1);
  PRINTED(schedule(monotonic : dynamic, 2), 0, <, 40, 1);

  /* unsigned long long iterations (GOMP_loop_ull_ordered_*). */
  printf("ordered ull:");
#pragma omp parallel for ordered schedule(dynamic, 2)
  for (unsigned long long u = (1ULL << 63) - 10; u < (1ULL << 63) + 10; u += 1) {
#pragma omp ordered
    printf(" %lld", (long long)(u - (1ULL << 63)));
  }
  printf("\n");
  /* Ranges across 2^63 make gcc use the ull entry points. (LLVM libomp 14
   * runs no iteration of a descending ull loop above 2^63: its output
   * differs here; libgomp is the reference.) */
  printf("ordered ull static:");
#pragma omp parallel for ordered schedule(static, 3)
  for (unsigned long long u = (1ULL << 63) + 16; u > (1ULL << 63) - 14; u -= 2) {
#pragma omp ordered
    printf(" %lld", (long long)(u - (1ULL << 63)));
  }
  printf("\n");
  printf("ordered ull static, no chunk:");
#pragma omp parallel for ordered schedule(static)
  for (unsigned long long u = (1ULL << 63) - 7; u < (1ULL << 63) + 7; u++) {
#pragma omp ordered
    printf(" %lld", (long long)(u - (1ULL << 63)));
  }
  printf("\n");
  printf("ordered ull guided:");
#pragma omp parallel for ordered schedule(guided, 2)
  for (unsigned long long u = (1ULL << 63) - 9; u < (1ULL << 63) + 9; u++) {
#pragma omp ordered
    printf(" %lld", (long long)(u - (1ULL << 63)));
  }
  printf("\n");
  printf("ordered ull runtime:");
#pragma omp parallel for ordered schedule(runtime)
  for (unsigned long long u = (1ULL << 63) - 9; u < (1ULL << 63) + 9; u += 3) {
#pragma omp ordered
    printf(" %lld", (long long)(u - (1ULL << 63)));
  }
  printf("\n");

  /* Only every third iteration enters its ordered region. */
  printf("ordered, some iterations only:");
#pragma omp parallel for ordered schedule(dynamic, 1)
  for (int i = 0; i < 60; i++) {
    if (i % 3 == 0) {
#pragma omp ordered
      printf(" %d", i);
    }
  }
  printf("\n");

  RECORDED(schedule(static));
  RECORDED(schedule(static, 1));
  RECORDED(schedule(static, 64));
  RECORDED(schedule(dynamic));
  RECORDED(schedule(dynamic, 7));
  RECORDED(schedule(guided));
  RECORDED(schedule(runtime));

  /* Ordered loops back to back in one region, one nowait. */
  {
    int next = 0, bad = 0;
#pragma omp parallel
    for (int r = 0; r < 50; r++) {
#pragma omp for ordered schedule(dynamic, 3) nowait
      for (int i = 0; i < 100; i++) {
#pragma omp ordered
        {
          if (next != r * 100 + i) bad++;
          next++;
        }
      }
#pragma omp barrier
    }
    printf("50 ordered loops: %d regions, %d out of order\n", next, bad);
    CHECK_EQ(next, 5000);
    CHECK_EQ(bad, 0);
  }
  return omptest_finish("ordered");
}
