/* The omp_* query API in and out of parallel regions: thread numbers, team
 * sizes, omp_in_parallel, omp_get_level/active_level, ancestor thread
 * numbers and team sizes at level 1, omp_get_max_threads,
 * omp_set_num_threads, num_threads clauses, if(0) and num_threads(1)
 * (inactive regions), omp_get_num_procs, omp_in_final outside tasks,
 * omp_get_wtime (monotone in every thread), and many back-to-back regions. */
#include "omptest.h"
#include <time.h>

#define MAXT 64

/* One region with the expected team size; checks everything each member
 * can see. Returns the team size that was observed. */
static int probe(int want, int active) {
  int seen[MAXT] = {0};
  int size = -1;
#pragma omp parallel num_threads(want) shared(seen, size)
  {
    int n = omp_get_num_threads(), t = omp_get_thread_num();
    CHECK_EQ(n, want);
    CHECK(t >= 0 && t < n && t < MAXT);
    if (t >= 0 && t < MAXT) AINC(&seen[t]);
    CHECK_EQ(omp_in_parallel(), active);
    CHECK_EQ(omp_get_level(), 1);
    CHECK_EQ(omp_get_active_level(), active);
    CHECK_EQ(omp_get_ancestor_thread_num(0), 0);
    CHECK_EQ(omp_get_ancestor_thread_num(1), t);
    CHECK_EQ(omp_get_ancestor_thread_num(2), -1);
    CHECK_EQ(omp_get_ancestor_thread_num(-1), -1);
    CHECK_EQ(omp_get_team_size(0), 1);
    CHECK_EQ(omp_get_team_size(1), n);
    CHECK_EQ(omp_get_team_size(2), -1);
    CHECK_EQ(omp_get_team_size(-1), -1);
    CHECK_EQ(omp_in_final(), 0);
    if (t == 0) size = n;
  }
  for (int i = 0; i < want && i < MAXT; i++) CHECK_EQ(seen[i], 1);
  return size;
}

static void wtime_monotone(int iters) {
  double prev = omp_get_wtime();
  for (int i = 0; i < iters; i++) {
    double now = omp_get_wtime();
    if (now < prev) {
      CHECK(now >= prev);
      break;
    }
    prev = now;
  }
}

int main(void) {
  /* Outside any region. */
  CHECK(omp_get_num_procs() > 0);
  printf("num_procs > 0: %d\n", omp_get_num_procs() > 0);
  printf(
      "outside: in_parallel %d level %d active_level %d thread_num %d num_threads %d in_final %d\n",
      omp_in_parallel(), omp_get_level(), omp_get_active_level(), omp_get_thread_num(),
      omp_get_num_threads(), omp_in_final());
  printf("outside: ancestor(0) %d ancestor(1) %d ancestor(-1) %d team_size(0) %d team_size(1) %d\n",
         omp_get_ancestor_thread_num(0), omp_get_ancestor_thread_num(1),
         omp_get_ancestor_thread_num(-1), omp_get_team_size(0), omp_get_team_size(1));
  int maxt = omp_get_max_threads();
  printf("max_threads %d\n", maxt);
  CHECK(maxt >= 1);

  /* omp_get_wtime: monotone here and in every member of a team; it
   * advances across a 5 ms sleep. */
  wtime_monotone(100000);
  double t0 = omp_get_wtime();
  struct timespec ts = {0, 5 * 1000 * 1000};
  nanosleep(&ts, NULL);
  double t1 = omp_get_wtime();
  CHECK(t1 > t0);
  printf("wtime advances: %d\n", t1 > t0);
#pragma omp parallel num_threads(4)
  wtime_monotone(20000);

  /* The default team: max_threads members, active when more than one. */
  int seen[MAXT] = {0};
  int inner_max = -1;
#pragma omp parallel shared(seen)
  {
    int n = omp_get_num_threads(), t = omp_get_thread_num();
    CHECK_EQ(n, maxt);
    if (t >= 0 && t < MAXT) AINC(&seen[t]);
    CHECK_EQ(omp_in_parallel(), n > 1);
    CHECK_EQ(omp_get_level(), 1);
    CHECK_EQ(omp_get_active_level(), n > 1);
    CHECK_EQ(omp_get_team_size(1), n);
    CHECK_EQ(omp_get_ancestor_thread_num(1), t);
#pragma omp master
    inner_max = omp_get_max_threads();
  }
  for (int i = 0; i < maxt && i < MAXT; i++) CHECK_EQ(seen[i], 1);
  /* The nthreads-var of the next level: OMP_NUM_THREADS=3,2 gives 2. */
  printf("default team %d, max_threads inside %d\n", maxt, inner_max);

  /* num_threads clauses of 1 to 8: num_threads(1) is an inactive region. */
  for (int k = 1; k <= 8; k++) {
    int got = probe(k, k > 1);
    printf("num_threads(%d): team %d\n", k, got);
  }

  /* if(0): one thread, inactive, but still a level. */
  {
    int n = -1, lvl = -1, act = -1, inpar = -1, tn = -1;
    int cond = 0;
#pragma omp parallel if (cond) num_threads(4)
    {
      n = omp_get_num_threads();
      lvl = omp_get_level();
      act = omp_get_active_level();
      inpar = omp_in_parallel();
      tn = omp_get_thread_num();
    }
    printf("if(0): team %d level %d active_level %d in_parallel %d thread_num %d\n", n, lvl, act,
           inpar, tn);
    CHECK_EQ(n, 1);
    CHECK_EQ(lvl, 1);
    CHECK_EQ(act, 0);
    int count = 0;
    cond = 1;
#pragma omp parallel if (cond) num_threads(3)
    AINC(&count);
    printf("if(1) num_threads(3): %d members ran\n", count);
    CHECK_EQ(count, 3);
  }

  /* omp_set_num_threads changes the default of later regions. */
  omp_set_num_threads(3);
  printf("after omp_set_num_threads(3): max_threads %d team %d\n", omp_get_max_threads(),
         probe(3, 1));
  CHECK_EQ(omp_get_max_threads(), 3);
  {
    int n = 0;
#pragma omp parallel
    {
#pragma omp atomic
      n++;
    }
    CHECK_EQ(n, 3);
    printf("default region after omp_set_num_threads(3): %d members\n", n);
  }
  omp_set_num_threads(1);
  {
    int n = 0, act = -1;
#pragma omp parallel
    {
      n = omp_get_num_threads();
      act = omp_get_active_level();
    }
    printf("after omp_set_num_threads(1): team %d active_level %d\n", n, act);
    CHECK_EQ(n, 1);
    CHECK_EQ(act, 0);
  }
  omp_set_num_threads(maxt);

  /* Many short regions back to back, with different sizes. */
  long total = 0;
  for (int r = 0; r < 3000; r++) {
#pragma omp parallel num_threads(1 + r % 4) reduction(+ : total)
    total += omp_get_thread_num() + 1;
  }
  /* Per cycle of 4 regions: 1 + 3 + 6 + 10 = 20. */
  printf("3000 regions: %ld\n", total);
  CHECK_EQ(total, 750L * 20);

  printf("outside again: in_parallel %d level %d\n", omp_in_parallel(), omp_get_level());
  return omptest_finish("api");
}
