/* threadprivate variables, copyin and copyprivate, in regions of any
 * size (also more threads than ito workers) and nested:
 *  - every member has its own copy (written, then read back after
 *    barriers and after other members wrote theirs);
 *  - copies start from the static initialiser;
 *  - the initial thread's copy is the master's copy;
 *  - values persist between two regions with the same number of threads
 *    (OpenMP 5.x, 2.21.2: no nesting, same team size, dyn-var false);
 *  - copyin copies the master's value to every member, for an int, a
 *    double, a struct and an array;
 *  - copyprivate of threadprivate variables from a single;
 *  - persistence over many regions of the same size, each changing every
 *    copy;
 *  - nested teams: the inner master's copy is the encountering member's,
 *    the other inner members have their own, copyin in the inner team;
 *  - tasks: an undeferred task sees its creator's copy; deferred tasks
 *    see the copies where every member's holds the same value (after
 *    copyin), and a task of the initial thread sees its copy.
 * Under a runtime whose team members share one OS thread's TLS (ito
 * before member TLS, with more members than workers or nested teams)
 * these checks fail. */
#include "omptest.h"

struct tpstruct {
  int id;
  double w;
  char tag[16];
};

static int tp_int = 11;
static double tp_dbl = 1.5;
static struct tpstruct tp_s = {5, 0.25, "init"};
static long tp_arr[8] = {1, 2, 3, 4, 5, 6, 7, 8};
#pragma omp threadprivate(tp_int, tp_dbl, tp_s, tp_arr)

int main(void) {
  int n = omp_get_max_threads();
  int bad_init = 0, bad_own = 0, bad_persist = 0, bad_copyin = 0;

  /* The initial thread's copy is the master's. */
  tp_int = 100;

  /* 1. Own copies, starting from the initialiser (non-master members). */
#pragma omp parallel shared(bad_init, bad_own)
  {
    int t = omp_get_thread_num();
    if (t == 0 ? tp_int != 100 : tp_int != 11) AINC(&bad_init);
    if (tp_dbl != 1.5 || tp_s.id != 5 || strcmp(tp_s.tag, "init") || tp_arr[7] != 8)
      AINC(&bad_init);
    tp_int = 1000 + t;
    tp_dbl = t * 0.5;
    tp_s.id = -t;
    snprintf(tp_s.tag, sizeof tp_s.tag, "t%d", t);
    for (int i = 0; i < 8; i++) tp_arr[i] = t * 10 + i;
    for (int r = 0; r < 50; r++) {
#pragma omp barrier
      if (tp_int != 1000 + t || tp_dbl != t * 0.5 || tp_s.id != -t || tp_arr[3] != t * 10 + 3)
        AINC(&bad_own);
      tp_int += 0; /* keep the accesses in the loop */
    }
  }
  printf("threadprivate: wrong initial copies %d, copies changed by others %d\n", bad_init,
         bad_own);
  printf("master's copy after the region: %d\n", tp_int);
  CHECK_EQ(bad_init, 0);
  CHECK_EQ(bad_own, 0);
  CHECK_EQ(tp_int, 1000);

  /* 2. Persistence into the next region of the same size. */
#pragma omp parallel shared(bad_persist)
  {
    int t = omp_get_thread_num();
    char want[16];
    snprintf(want, sizeof want, "t%d", t);
    if (tp_int != 1000 + t || tp_dbl != t * 0.5 || strcmp(tp_s.tag, want) || tp_arr[0] != t * 10)
      AINC(&bad_persist);
  }
  printf("threadprivate: copies that did not persist %d\n", bad_persist);
  CHECK_EQ(bad_persist, 0);

  /* 3. copyin, repeatedly with different master values. */
  for (int r = 0; r < 100; r++) {
    tp_int = r;
    tp_dbl = r * 0.25;
    tp_s.id = r + 1;
    snprintf(tp_s.tag, sizeof tp_s.tag, "r%d", r);
    for (int i = 0; i < 8; i++) tp_arr[i] = r * i;
#pragma omp parallel copyin(tp_int, tp_dbl, tp_s, tp_arr) shared(bad_copyin)
    {
      char want[16];
      snprintf(want, sizeof want, "r%d", r);
      if (tp_int != r || tp_dbl != r * 0.25 || tp_s.id != r + 1 || strcmp(tp_s.tag, want) ||
          tp_arr[7] != 7 * r)
        AINC(&bad_copyin);
      /* Each member changes its copy; the next copyin must overwrite it. */
      tp_int = -1;
      tp_arr[7] = -1;
#pragma omp barrier
      if (tp_int != -1) AINC(&bad_copyin);
    }
  }
  printf("copyin: wrong copies %d\n", bad_copyin);
  CHECK_EQ(bad_copyin, 0);

  /* 4. A threadprivate counter per member, summed at the end. */
  tp_int = 0;
  long sum = 0;
#pragma omp parallel copyin(tp_int) reduction(+ : sum)
  {
#pragma omp for schedule(static, 1)
    for (int i = 0; i < 1000; i++) tp_int++;
    sum += tp_int;
  }
  printf("threadprivate counters: %ld (team of %d)\n", sum, n);
  CHECK_EQ(sum, 1000);

  /* 5. copyprivate of threadprivate variables: every member gets the
   * single's values, then changes its own copy. */
  int bad_cp = 0;
  for (int r = 0; r < 50; r++) {
#pragma omp parallel shared(bad_cp)
    {
      int t = omp_get_thread_num();
      tp_int = 500 + t;
      tp_s.id = -t;
#pragma omp barrier
#pragma omp single copyprivate(tp_int, tp_s)
      {
        tp_int = 4242 + r;
        tp_s.id = 77 + r;
        snprintf(tp_s.tag, sizeof tp_s.tag, "cp%d", r);
      }
      char want[16];
      snprintf(want, sizeof want, "cp%d", r);
      if (tp_int != 4242 + r || tp_s.id != 77 + r || strcmp(tp_s.tag, want)) AINC(&bad_cp);
      tp_int += t;
#pragma omp barrier
      if (tp_int != 4242 + r + t) AINC(&bad_cp);
    }
  }
  printf("copyprivate: wrong copies %d\n", bad_cp);
  CHECK_EQ(bad_cp, 0);

  /* 6. Persistence over many regions of the same size, each adding to
   * every copy. */
  int bad_many = 0;
#pragma omp parallel
  tp_int = 0;
  for (int r = 1; r <= 30; r++) {
#pragma omp parallel shared(bad_many)
    {
      int t = omp_get_thread_num();
      if (tp_int != (r - 1) * (t + 1)) AINC(&bad_many);
      tp_int += t + 1;
    }
  }
  printf("persistence over 30 regions: wrong copies %d\n", bad_many);
  CHECK_EQ(bad_many, 0);

  /* 7. Nested teams (active with OMP_NUM_THREADS=3,2; else teams of 1). */
  int bad_nest = 0;
#pragma omp parallel shared(bad_nest)
  {
    int o = omp_get_thread_num();
    tp_int = 10 * o;
#pragma omp parallel shared(bad_nest)
    {
      int i = omp_get_thread_num();
      if (i == 0 && tp_int != 10 * o) AINC(&bad_nest); /* the encountering member's copy */
#pragma omp barrier
      tp_int = 1000 * (o + 1) + i;
      tp_dbl = o + i * 0.5;
      for (int r = 0; r < 20; r++) {
#pragma omp barrier
        if (tp_int != 1000 * (o + 1) + i || tp_dbl != o + i * 0.5) AINC(&bad_nest);
      }
    }
    if (tp_int != 1000 * (o + 1)) AINC(&bad_nest); /* the inner master wrote it */
    tp_int = 7 * o + 1;
#pragma omp parallel copyin(tp_int) shared(bad_nest)
    {
      if (tp_int != 7 * o + 1) AINC(&bad_nest);
      tp_int = -omp_get_thread_num();
#pragma omp barrier
      if (tp_int != -omp_get_thread_num()) AINC(&bad_nest);
    }
    if (tp_int != 0) AINC(&bad_nest); /* the inner master's -0 */
  }
  printf("nested teams: wrong copies %d\n", bad_nest);
  CHECK_EQ(bad_nest, 0);

  /* 8. Tasks. Not with TP_BOUND_ONLY=1 (set for both runtimes): ito with
   * worker TLS, where only bound outermost teams have copies per member
   * and a task sees the copy of the worker that runs it, which may have
   * no member (docs/openmp.md, "threadprivate"). */
  const char *bound_only = getenv("TP_BOUND_ONLY");
  if (bound_only && !strcmp(bound_only, "1")) return omptest_finish("threadprivate");
  int bad_task = 0;
  /* a task of the initial thread, outside any region */
  tp_int = 99;
#pragma omp task shared(bad_task)
  if (tp_int != 99) AINC(&bad_task);
#pragma omp taskwait
    /* undeferred tasks run by their creator see its copy */
#pragma omp parallel shared(bad_task)
  {
    int t = omp_get_thread_num();
    tp_int = 100 + t;
#pragma omp barrier
    for (int k = 0; k < 20; k++) {
#pragma omp task if (0) shared(bad_task)
      {
        if (tp_int != 100 + t) AINC(&bad_task);
      }
#pragma omp barrier
    }
  }
  /* deferred tasks, every copy equal (copyin): whichever member runs a
   * task, it reads that value */
  for (int r = 0; r < 20; r++) {
    tp_int = 321 + r;
    tp_s.id = r;
#pragma omp parallel copyin(tp_int, tp_s) shared(bad_task)
    {
#pragma omp single
      for (int k = 0; k < 32; k++) {
#pragma omp task shared(bad_task)
        {
          if (tp_int != 321 + r || tp_s.id != r) AINC(&bad_task);
        }
      }
#pragma omp for schedule(static, 1)
      for (int k = 0; k < 64; k++) {
#pragma omp task shared(bad_task)
        {
          if (tp_int != 321 + r) AINC(&bad_task);
        }
      }
    }
  }
  printf("tasks: wrong copies %d\n", bad_task);
  CHECK_EQ(bad_task, 0);
  return omptest_finish("threadprivate");
}
