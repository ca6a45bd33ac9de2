/* sections (GOMP_sections_start/next/end, end_nowait) and parallel
 * sections (GOMP_parallel_sections): every section runs exactly once, with
 * 1, 2, 5 and 17 sections (more sections than threads), nowait, inside a
 * loop of 500 rounds (consecutive constructs in one region), lastprivate,
 * private, and sections in a region of one thread. */
#include "omptest.h"

static int ran[32];

#define S(k) _Pragma("omp section") AINC(&ran[k]);

static void check_ran(const char *what, int n, int times) {
  long bad = omptest_all_eq(ran, n, times);
  if (bad >= 0) fprintf(stderr, "%s: section %ld ran %d times\n", what, bad, ran[bad]);
  CHECK(bad < 0);
  for (int k = n; k < 32; k++) CHECK_EQ(ran[k], 0);
  printf("%-36s %d sections x %d: ok\n", what, n, times);
  memset(ran, 0, sizeof ran);
}

int main(void) {
#pragma omp parallel
  {
#pragma omp sections
    { AINC(&ran[0]); }
  }
  check_ran("one section", 1, 1);

#pragma omp parallel
  {
#pragma omp sections
    { S(0) S(1) }
  }
  check_ran("two sections", 2, 1);

#pragma omp parallel sections
  {S(0) S(1) S(2) S(3) S(4)} check_ran("parallel sections", 5, 1);

#pragma omp parallel sections num_threads(3)
  {S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)
       S(16)} check_ran("parallel sections num_threads(3)", 17, 1);

  /* 500 rounds of sections in one region, half of them nowait. */
#pragma omp parallel
  for (int r = 0; r < 500; r++) {
    if (r % 2) {
#pragma omp sections nowait
      {
        S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15) S(16)
      }
    } else {
#pragma omp sections
      { S(0) S(1) S(2) }
    }
  }
  {
    /* Sections 0-2 ran 500 times, 3-16 250 times. */
    int bad = 0;
    for (int k = 0; k < 17; k++) bad += ran[k] != (k < 3 ? 500 : 250);
    printf("500 rounds of sections (nowait on odd rounds): %d wrong counts\n", bad);
    CHECK_EQ(bad, 0);
    memset(ran, 0, sizeof ran);
  }

  /* Sections produce values that the region uses after the barrier. */
  {
    long v[6] = {0};
    int bad = 0;
#pragma omp parallel shared(v, bad)
    {
#pragma omp sections
      {
#pragma omp section
        v[0] = 1;
#pragma omp section
        v[1] = 20;
#pragma omp section
        v[2] = 300;
#pragma omp section
        v[3] = 4000;
#pragma omp section
        v[4] = 50000;
#pragma omp section
        v[5] = 600000;
      }
      if (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] != 654321) AINC(&bad);
    }
    printf("values after the implicit barrier: %d wrong\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* lastprivate and private. */
  {
    int last = -1, p = 99;
#pragma omp parallel sections lastprivate(last) private(p)
    {
#pragma omp section
      {
        p = 1;
        last = p * 10;
      }
#pragma omp section
      {
        p = 2;
        last = p * 10;
      }
#pragma omp section
      {
        p = 3;
        last = p * 10;
      }
    }
    printf("lastprivate %d, private original %d\n", last, p);
    CHECK_EQ(last, 30);
    CHECK_EQ(p, 99);
  }

  /* In a region of one thread and orphaned. */
  {
    int zero = 0;
#pragma omp parallel if (zero)
#pragma omp sections
    {S(0) S(1) S(2) S(3)} check_ran("sections in an if(0) region", 4, 1);
#pragma omp sections
    {S(0) S(1)} check_ran("orphaned sections", 2, 1);
  }
  return omptest_finish("sections");
}
