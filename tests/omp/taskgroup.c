/* taskgroup (GOMP_taskgroup_start/end): the end of a taskgroup waits for
 * the tasks created in it and for all their descendants (grandchildren
 * created after their parent returned, three levels deep); taskgroups
 * nested in tasks and in each other; a taskgroup in every thread of the
 * team at once; a taskgroup with no tasks; a taskwait inside a taskgroup. */
#include "omptest.h"

static int leaves;

static void spawn(int depth, int fan) {
  if (depth == 0) {
    volatile int spin = 0;
    for (int k = 0; k < 100; k++) spin += k;
    AINC(&leaves);
    return;
  }
  for (int k = 0; k < fan; k++) {
#pragma omp task
    spawn(depth - 1, fan);
  }
  /* no taskwait: the children outlive this task */
}

int main(void) {
  /* 1. Descendants: 4^5 leaves, nobody waits but the taskgroup. */
  {
    int seen = -1;
    leaves = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskgroup
      spawn(5, 4);
      seen = ALOAD(&leaves);
    }
    printf("taskgroup waited for %d of %d leaves\n", seen, 1024);
    CHECK_EQ(seen, 1024);
  }

  /* 2. 200 taskgroups in a row, each with descendants. */
  {
    int bad = 0;
#pragma omp parallel
#pragma omp single
    for (int r = 0; r < 200; r++) {
      leaves = 0;
#pragma omp taskgroup
      {
        spawn(2, 3);
#pragma omp task
        spawn(1, 2);
      }
      if (ALOAD(&leaves) != 11) bad++;
    }
    printf("200 taskgroups: %d incomplete\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* 3. Nested taskgroups and a taskgroup inside a task. */
  {
    int inner_bad = 0, outer_bad = 0;
    int a = 0, b = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskgroup
      {
        for (int i = 0; i < 20; i++) {
#pragma omp task shared(a, inner_bad)
          {
            int mine = 0;
#pragma omp taskgroup
            {
              for (int k = 0; k < 10; k++) {
#pragma omp task shared(mine)
                {
#pragma omp task shared(mine)
                  AINC(&mine);
                  AINC(&mine);
                }
              }
            }
            if (ALOAD(&mine) != 20) AINC(&inner_bad);
            AADD(&a, mine);
          }
        }
#pragma omp taskgroup
        {
#pragma omp task shared(b)
          {
#pragma omp task shared(b)
            AINC(&b);
          }
        }
        if (ALOAD(&b) != 1) outer_bad++;
      }
      if (ALOAD(&a) != 400) outer_bad++;
    }
    printf("nested taskgroups: %d %d, %d inner and %d outer incomplete\n", a, b, inner_bad,
           outer_bad);
    CHECK_EQ(inner_bad, 0);
    CHECK_EQ(outer_bad, 0);
  }

  /* 4. Every thread runs its own taskgroups at the same time. */
  {
    int bad = 0, n = 0;
    static int per[64];
    memset(per, 0, sizeof per);
#pragma omp parallel shared(bad, n)
    {
      int t = omp_get_thread_num();
#pragma omp single
      n = omp_get_num_threads();
      for (int r = 0; r < 50; r++) {
        int mine = 0;
#pragma omp taskgroup
        {
          for (int k = 0; k < 8; k++) {
#pragma omp task shared(mine)
            {
#pragma omp task shared(mine)
              AINC(&mine);
            }
          }
#pragma omp taskwait
        }
        if (ALOAD(&mine) != 8) AINC(&bad);
        if (t < 64) per[t] += mine;
      }
    }
    long tot = 0;
    for (int t = 0; t < 64; t++) tot += per[t];
    printf("concurrent taskgroups: total %ld, %d incomplete\n", tot, bad);
    CHECK_EQ(bad, 0);
    CHECK_EQ(tot, 400L * n);
  }

  /* 5. Empty taskgroups, and one outside any parallel region. */
  {
    int x = 0;
#pragma omp parallel
    {
#pragma omp taskgroup
        {}}
#pragma omp taskgroup
    {
#pragma omp task shared(x)
      {
#pragma omp task shared(x)
        x = 5;
      }
    }
    printf("taskgroup outside a region: %d\n", x);
    CHECK_EQ(x, 5);
  }
  return omptest_finish("taskgroup");
}
