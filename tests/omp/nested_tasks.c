/* Tasks in nested parallel regions: each inner team (2 x 2 and 3 x 2,
 * with omp_set_max_active_levels(2)) creates tasks, which bind to that
 * inner team: they see omp_get_level() == 2, the inner team's size, and
 * the outer thread number as ancestor at level 1; they are complete at
 * the inner region's barriers and at its end; taskwait, taskgroup, depend
 * chains and fib in the inner teams, while the other inner teams do the
 * same. Also tasks whose body opens a parallel region. */
#include "omptest.h"

static long fib(int n) {
  if (n < 2) return n;
  long x, y;
#pragma omp task shared(x)
  x = fib(n - 1);
#pragma omp task shared(y)
  y = fib(n - 2);
#pragma omp taskwait
  return x + y;
}

int main(void) {
  omp_set_max_active_levels(2);

  for (int outer = 2; outer <= 3; outer++) {
    int wrong_level = 0, wrong_team = 0, wrong_anc = 0;
    int done_at_barrier[4] = {0}, done_at_end[4] = {0}, chain_bad = 0, group_bad = 0;
    long fibs[4] = {0};
#pragma omp parallel num_threads(outer)
    {
      int o = omp_get_thread_num();
      int produced = 0;
#pragma omp parallel num_threads(2) shared(produced)
      {
        /* every inner thread creates tasks */
        for (int i = 0; i < 200; i++) {
#pragma omp task shared(produced)
          {
            if (omp_get_level() != 2) AINC(&wrong_level);
            if (omp_get_num_threads() != 2 || omp_get_team_size(2) != 2) AINC(&wrong_team);
            if (omp_get_ancestor_thread_num(1) != o) AINC(&wrong_anc);
            AINC(&produced);
          }
        }
#pragma omp barrier
#pragma omp single
        done_at_barrier[o] = ALOAD(&produced);
        /* fib in one inner thread, a depend chain in the other */
#pragma omp sections
        {
#pragma omp section
          fibs[o] = fib(18);
#pragma omp section
          {
            int x = 0;
            for (int i = 0; i < 500; i++) {
#pragma omp task depend(inout : x) shared(x)
              {
                if (x != i) AINC(&chain_bad);
                x = i + 1;
              }
            }
#pragma omp taskwait
            if (x != 500) AINC(&chain_bad);
          }
        }
        int got = 0;
#pragma omp taskgroup
        {
          for (int i = 0; i < 50; i++) {
#pragma omp task shared(got)
            {
#pragma omp task shared(got)
              AINC(&got);
            }
          }
        }
        if (ALOAD(&got) != 50) AINC(&group_bad);
        /* tasks left for the end of the inner region */
        for (int i = 0; i < 100; i++) {
#pragma omp task shared(produced)
          AINC(&produced);
        }
      }
      done_at_end[o] = produced;
    }
    printf("outer %d x inner 2:", outer);
    for (int o = 0; o < outer; o++)
      printf(" [team %d: %d at barrier, %d at end, fib %ld]", o, done_at_barrier[o], done_at_end[o],
             fibs[o]);
    printf(" wrong level %d team %d ancestor %d, chain %d, taskgroup %d\n", wrong_level, wrong_team,
           wrong_anc, chain_bad, group_bad);
    for (int o = 0; o < outer; o++) {
      CHECK_EQ(done_at_barrier[o], 400);
      CHECK_EQ(done_at_end[o], 600);
      CHECK_EQ(fibs[o], 2584);
    }
    CHECK_EQ(wrong_level + wrong_team + wrong_anc, 0);
    CHECK_EQ(chain_bad, 0);
    CHECK_EQ(group_bad, 0);
  }

  /* Tasks that open parallel regions (level 2 under a team of the
   * default size) and tasks inside those. */
  {
    long total = 0;
    int levels_bad = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    for (int k = 0; k < 8; k++) {
#pragma omp task shared(total, levels_bad)
      {
#pragma omp parallel num_threads(2)
        {
          if (omp_get_level() != 2 || omp_get_active_level() != 2) AINC(&levels_bad);
#pragma omp for
          for (int i = 0; i < 10; i++) {
#pragma omp task shared(total)
            {
#pragma omp atomic
              total += i;
            }
          }
        }
      }
    }
    printf("parallel regions inside tasks: %ld, %d wrong levels\n", total, levels_bad);
    CHECK_EQ(total, 8L * 45);
    CHECK_EQ(levels_bad, 0);
  }
  return omptest_finish("nested_tasks");
}
