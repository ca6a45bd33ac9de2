/* Nested parallel regions, 2 and 3 levels: omp_get_level,
 * omp_get_active_level, omp_get_ancestor_thread_num, omp_get_team_size,
 * omp_in_parallel and omp_get_num_threads checked in every member against
 * the values the settings imply; omp_set_max_active_levels (0 to 3),
 * omp_set_nested, if(0) and num_threads(1) levels (inactive, so they do not
 * count towards the active levels), omp_set_num_threads inside a region
 * (the next level's default), and, first of all, the regions the
 * environment alone gives (OMP_NUM_THREADS lists, OMP_MAX_ACTIVE_LEVELS,
 * OMP_NESTED), printed rather than checked. */
#include "omptest.h"

#define MAXLEV 4
#define MAXT 16

/* The configuration of one run: requested size and if-clause per level. */
static int nlev, req[MAXLEV], ifc[MAXLEV], mal;
static long leaves;

/* Called by each member of the region at depth d-1 (d = 0: the initial
 * thread). anc/sz: ancestor thread numbers and team sizes of levels 0..d. */
static void level(int d, int act, const int *anc, const int *sz) {
  if (d == nlev) {
    AINC(&leaves);
    return;
  }
  int active = ifc[d] && req[d] > 1 && act < mal;
  int want = active ? req[d] : 1;
  int seen[MAXT] = {0};
#pragma omp parallel num_threads(req[d]) if (ifc[d]) shared(seen)
  {
    int t = omp_get_thread_num(), n = omp_get_num_threads();
    int myact = act + active;
    CHECK_EQ(n, want);
    CHECK(t >= 0 && t < n);
    if (t >= 0 && t < MAXT) AINC(&seen[t]);
    CHECK_EQ(omp_get_level(), d + 1);
    CHECK_EQ(omp_get_active_level(), myact);
    CHECK_EQ(omp_in_parallel(), myact > 0);
    int a2[MAXLEV + 1], s2[MAXLEV + 1];
    for (int l = 0; l <= d; l++) {
      a2[l] = anc[l];
      s2[l] = sz[l];
    }
    a2[d + 1] = t;
    s2[d + 1] = n;
    for (int l = 0; l <= d + 1; l++) {
      CHECK_EQ(omp_get_ancestor_thread_num(l), a2[l]);
      CHECK_EQ(omp_get_team_size(l), s2[l]);
    }
    CHECK_EQ(omp_get_ancestor_thread_num(d + 2), -1);
    CHECK_EQ(omp_get_team_size(d + 2), -1);
    CHECK_EQ(omp_get_ancestor_thread_num(-1), -1);
    CHECK_EQ(omp_get_team_size(-1), -1);
    level(d + 1, myact, a2, s2);
  }
  for (int i = 0; i < want && i < MAXT; i++) CHECK_EQ(seen[i], 1);
}

/* Runs one configuration given as "3 2 2" with an optional trailing
 * 'x' on a level meaning if(0). */
static void config(int max_active, int n, const int *r, const int *f) {
  nlev = n;
  mal = max_active;
  long expect = 1;
  int act = 0;
  printf("max_active_levels %d, levels", max_active);
  for (int i = 0; i < n; i++) {
    req[i] = r[i];
    ifc[i] = f[i];
    int a = f[i] && r[i] > 1 && act < max_active;
    act += a;
    expect *= a ? r[i] : 1;
    printf(" %d%s", r[i], f[i] ? "" : "(if0)");
  }
  leaves = 0;
  omp_set_max_active_levels(max_active);
  int anc[1] = {0}, sz[1] = {1};
  level(0, 0, anc, sz);
  printf(": %ld innermost members (expected %ld)\n", leaves, expect);
  CHECK_EQ(leaves, expect);
}

int main(void) {
  /* 1. What the environment alone gives: no clause, no API call. */
  {
    int outer = -1, outer_act = -1, inner_min = 1000, inner_max = -1, inner_act = -1;
    int third_min = 1000, third_max = -1, third_act = -1, max2 = -1, max3 = -1;
    long members = 0;
#pragma omp parallel
    {
#pragma omp master
      {
        outer = omp_get_num_threads();
        outer_act = omp_get_active_level();
        max2 = omp_get_max_threads();
      }
#pragma omp parallel
      {
        int n = omp_get_num_threads();
#pragma omp critical
        {
          if (n < inner_min) inner_min = n;
          if (n > inner_max) inner_max = n;
          inner_act = omp_get_active_level();
          if (omp_get_thread_num() == 0) max3 = omp_get_max_threads();
        }
#pragma omp parallel
        {
          int m = omp_get_num_threads();
#pragma omp critical
          {
            if (m < third_min) third_min = m;
            if (m > third_max) third_max = m;
            third_act = omp_get_active_level();
          }
          AINC(&members);
        }
      }
    }
    printf(
        "environment: outer team %d (active level %d), max_threads at level 1 %d, "
        "level-2 teams %d..%d (active level %d), max_threads at level 2 %d, "
        "level-3 teams %d..%d (active level %d), %ld innermost members\n",
        outer, outer_act, max2, inner_min, inner_max, inner_act, max3, third_min, third_max,
        third_act, members);
    CHECK_EQ(inner_min, inner_max);
    CHECK_EQ(third_min, third_max);
    CHECK_EQ(members, (long)outer * inner_max * third_max);
  }

  /* 2. Explicit settings. */
  int on[3] = {1, 1, 1};
  {
    int r[] = {3, 2};
    config(1, 2, r, on);
  }
  {
    int r[] = {3, 2, 2};
    config(1, 3, r, on);
    config(2, 3, r, on);
    config(3, 3, r, on);
  }
  {
    int r[] = {2, 3, 2};
    config(3, 3, r, on);
    config(0, 3, r, on);
  }
  {
    int r[] = {3, 2, 2}, f[] = {0, 1, 1};
    config(2, 3, r, f);
  }
  {
    int r[] = {2, 1, 3};
    config(2, 3, r, on);
  }
  {
    int r[] = {2, 2, 3}, f[] = {1, 0, 1};
    config(2, 3, r, f);
  }

  /* omp_set_nested: off means one active level, on means several. */
  omp_set_max_active_levels(3);
  omp_set_nested(0);
  {
    int inner = -1, act = -1;
#pragma omp parallel num_threads(2)
#pragma omp parallel num_threads(3)
    if (omp_get_ancestor_thread_num(1) == 1 && omp_get_thread_num() == 0) {
      inner = omp_get_num_threads();
      act = omp_get_active_level();
    }
    printf("omp_set_nested(0): inner team %d, active level %d\n", inner, act);
    CHECK_EQ(inner, 1);
    CHECK_EQ(act, 1);
  }
  omp_set_nested(1);
  {
    long members = 0;
#pragma omp parallel num_threads(2)
#pragma omp parallel num_threads(3)
#pragma omp parallel num_threads(2)
    {
      CHECK_EQ(omp_get_active_level(), 3);
      AINC(&members);
    }
    printf("omp_set_nested(1): %ld innermost members of 2x3x2\n", members);
    CHECK_EQ(members, 12);
  }

  /* omp_set_num_threads in a member sets that member's next level. */
  omp_set_max_active_levels(2);
  {
    int sizes[8] = {0};
#pragma omp parallel num_threads(4)
    {
      int t = omp_get_thread_num();
      omp_set_num_threads(t + 1);
      CHECK_EQ(omp_get_max_threads(), t + 1);
#pragma omp parallel
      {
#pragma omp master
        sizes[t] = omp_get_num_threads();
      }
    }
    printf("omp_set_num_threads(t+1) per member: inner teams %d %d %d %d\n", sizes[0], sizes[1],
           sizes[2], sizes[3]);
    for (int t = 0; t < 4; t++) CHECK_EQ(sizes[t], t + 1);
  }

  /* Barriers and worksharing in inner teams that run at the same time. */
  {
    long sum = 0;
#pragma omp parallel num_threads(3) reduction(+ : sum)
    {
      int o = omp_get_thread_num();
#pragma omp parallel num_threads(3) reduction(+ : sum)
      {
        for (int r = 0; r < 50; r++) {
#pragma omp for schedule(dynamic, 2)
          for (int i = 0; i < 30; i++) sum += i + o;
#pragma omp barrier
        }
      }
    }
    /* 3 outer x 50 rounds x (sum 0..29 + 30*o). */
    long expect = 0;
    for (int o = 0; o < 3; o++) expect += 50L * (435 + 30 * o);
    printf("inner worksharing: %ld\n", sum);
    CHECK_EQ(sum, expect);
  }

  return omptest_finish("nested");
}
