/* threadprivate variables and copyin, in non-nested regions:
 *  - every member has its own copy (written, then read back after
 *    barriers and after other members wrote theirs);
 *  - copies start from the static initialiser;
 *  - the initial thread's copy is the master's copy;
 *  - values persist between two regions with the same number of threads
 *    (OpenMP 5.x, 2.21.2: no nesting, same team size, dyn-var false);
 *  - copyin copies the master's value to every member, for an int, a
 *    double, a struct and an array.
 * Under a runtime whose team members share one OS thread's TLS these
 * checks fail. */
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
  printf("threadprivate: wrong initial copies %d, copies changed by others %d\n", bad_init, bad_own);
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
    if (tp_int != 1000 + t || tp_dbl != t * 0.5 || strcmp(tp_s.tag, want) ||
        tp_arr[0] != t * 10)
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
  return omptest_finish("threadprivate");
}
