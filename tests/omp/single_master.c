/* single (GOMP_single_start; with copyprivate GOMP_single_copy_start/end),
 * single nowait, master, masked and masked filter(n): how many times each
 * body runs, and which thread runs master/masked bodies. 2000 single
 * constructs in a row (with and without nowait) test the bookkeeping of
 * consecutive worksharing constructs. */
#include "omptest.h"

int main(void) {
  int n = 0;
  int singles = 0, singles_nowait = 0, masters = 0, master_not0 = 0;
  int masked = 0, masked_not0 = 0, masked1 = 0, masked1_wrong = 0, masked_big = 0;
  int after = 0, copy_bad = 0;
#pragma omp parallel shared(n)
  {
    int t = omp_get_thread_num();
#pragma omp single
    n = omp_get_num_threads();
    for (int r = 0; r < 1000; r++) {
#pragma omp single
      singles++;
#pragma omp single nowait
      AINC(&singles_nowait);
    }
#pragma omp barrier
    for (int r = 0; r < 100; r++) {
#pragma omp master
      {
        masters++;
        if (t != 0) master_not0++;
      }
#pragma omp masked
      {
        masked++;
        if (t != 0) masked_not0++;
      }
#pragma omp masked filter(1)
      {
        AINC(&masked1);
        if (t != 1) AINC(&masked1_wrong);
      }
#pragma omp masked filter(n + 5)
      AINC(&masked_big);
    }
    /* No barrier after master/masked/single nowait: count the threads that
     * got past them, then synchronise. */
    AINC(&after);
#pragma omp barrier
    /* single with copyprivate, 1000 times. */
    for (int r = 0; r < 1000; r++) {
      int v;
#pragma omp single copyprivate(v)
      v = r * 7 + 1;
      if (v != r * 7 + 1) AINC(&copy_bad);
    }
  }
  printf(
      "team %d: single %d, single nowait %d, master %d (not thread 0: %d), masked %d (not "
      "thread 0: %d), masked filter(1) %d (wrong thread %d), masked filter(n+5) %d, past %d, "
      "copyprivate wrong %d\n",
      n, singles, singles_nowait, masters, master_not0, masked, masked_not0, masked1, masked1_wrong,
      masked_big, after, copy_bad);
  CHECK_EQ(singles, 1000);
  CHECK_EQ(singles_nowait, 1000);
  CHECK_EQ(masters, 100);
  CHECK_EQ(master_not0, 0);
  CHECK_EQ(masked, 100);
  CHECK_EQ(masked_not0, 0);
  CHECK_EQ(masked1, n > 1 ? 100 : 0);
  CHECK_EQ(masked1_wrong, 0);
  CHECK_EQ(masked_big, 0);
  CHECK_EQ(after, n);
  CHECK_EQ(copy_bad, 0);

  /* single and master in teams of 1 to 6 threads. */
  for (int k = 1; k <= 6; k++) {
    int s = 0, m = 0, who = -1;
#pragma omp parallel num_threads(k)
    {
#pragma omp single
      s++;
#pragma omp master
      {
        m++;
        who = omp_get_thread_num();
      }
    }
    printf("num_threads(%d): single %d master %d by thread %d\n", k, s, m, who);
    CHECK(s == 1 && m == 1 && who == 0);
  }

  /* Orphaned single and master outside any region. */
  {
    int s = 0, m = 0;
#pragma omp single
    s++;
#pragma omp master
    m++;
    printf("outside a region: single %d master %d\n", s, m);
    CHECK(s == 1 && m == 1);
  }
  return omptest_finish("single_master");
}
