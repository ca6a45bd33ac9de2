/* Explicit tasks run as threads of their team: at any moment no two pieces
 * of code running for a team (members' implicit tasks, explicit tasks) hold
 * one thread number or one set of threadprivate copies, and a tied task
 * keeps its number from start to end.
 *  1. Per-thread accumulators: tasks created by a single add into
 *     sums[omp_get_thread_num()] in many small unsynchronised steps, and
 *     into a threadprivate counter; the totals must be exact.
 *  2. A busy flag per number: a task takes its number's flag at its start
 *     and gives it back at its end and around each task scheduling point
 *     (taskwait, taskyield, a child's creation); the creating member holds
 *     its own between those points. A flag found taken is an overlap.
 *  3. Tied tasks: the number after a child's creation, a taskwait, a
 *     taskyield and a taskgroup end is the number at the start.
 *  4. The same inside nested teams (numbers per inner team).
 *  5. At least two numbers among the tasks of a team of two or more.
 *  6. threadprivate: each member writes its number into a threadprivate
 *     variable; a task reads its number there at its start and after
 *     every scheduling point (it runs as that member, on its copies).
 * Only what every conforming runtime prints is printed. */
#include "omptest.h"

#define MAXT 64
#define NTASK 2000
#define STEPS 200

static long sums[MAXT * MAXT];
static int busy[MAXT * MAXT];
static int seen[MAXT * MAXT];
static long overlaps, moved, out_of_range, tp_wrong;
static long tp_count;
static int tp_me = -1;
#pragma omp threadprivate(tp_count, tp_me)

static void tp_check(void) {
  if (tp_me != omp_get_thread_num()) AINC(&tp_wrong);
}

/* The slot of the running code's number: per team of a nested region. */
static int slot(void) {
  int me = omp_get_thread_num();
  if (me < 0 || me >= MAXT) {
    AINC(&out_of_range);
    return 0;
  }
  int outer = omp_get_level() > 1 ? omp_get_ancestor_thread_num(omp_get_level() - 1) : 0;
  if (outer < 0 || outer >= MAXT) outer = 0;
  return outer * MAXT + me;
}

static void take(int s) {
  if (__atomic_exchange_n(&busy[s], 1, __ATOMIC_SEQ_CST)) AINC(&overlaps);
}
static void drop(int s) { __atomic_store_n(&busy[s], 0, __ATOMIC_SEQ_CST); }

/* many small steps: two holders of one number at once lose updates */
static void slow_add(int s) {
  for (int k = 0; k < STEPS; k++) {
    long x = *(volatile long *)&sums[s];
    *(volatile long *)&sums[s] = x + 1;
    long y = *(volatile long *)&tp_count;
    *(volatile long *)&tp_count = y + 1;
  }
}

static void task_body(int depth) {
  int s = slot();
  take(s);
  tp_check();
  __atomic_store_n(&seen[s], 1, __ATOMIC_RELAXED);
  slow_add(s);
  if (depth > 0) {
    drop(s);
#pragma omp task
    task_body(depth - 1);
    if (slot() != s) AINC(&moved);
    tp_check();
    take(s);
    slow_add(s);
    drop(s);
#pragma omp taskwait
    if (slot() != s) AINC(&moved);
    tp_check();
    take(s);
    drop(s);
#pragma omp taskyield
    if (slot() != s) AINC(&moved);
    tp_check();
    take(s);
    drop(s);
#pragma omp taskgroup
    {
#pragma omp task
      task_body(0);
    }
    if (slot() != s) AINC(&moved);
    tp_check();
    take(s);
  }
  drop(s);
}

static int distinct(void) {
  int d = 0;
  for (int i = 0; i < MAXT * MAXT; i++) d += __atomic_load_n(&seen[i], __ATOMIC_RELAXED);
  return d;
}

/* The member in the single makes one task of the given depth, holding its
 * number's flag between task creations (scheduling points). */
static void make_task(int s, int depth) {
  drop(s);
#pragma omp task
  task_body(depth);
  take(s);
}

/* tasks from a single in the current team; returns its size */
/* Are threadprivate copies per member in a flat team of n? Always, but
 * with TP_BOUND_ONLY (ito with worker TLS: tests/omp/CMakeLists.txt)
 * only where the team is bound: no more members than workers
 * (ITO_NUM_WORKERS; libgomp's run has none). Under TP_BOUND_ONLY the
 * line leaves the count out for every run, so the outputs compare. */
static int tp_per_member(int n) {
  const char *w = getenv("ITO_NUM_WORKERS");
  return !getenv("TP_BOUND_ONLY") || !w || n <= atoi(w);
}

static int run_team(int depth) {
  int n = 0;
  long total = 0;
#pragma omp parallel shared(n, total)
  {
    tp_count = 0;
    tp_me = omp_get_thread_num();
#pragma omp barrier
#pragma omp single
    {
      n = omp_get_num_threads();
      int s = slot();
      take(s);
      /* NTASK tasks, and more until two numbers have run tasks (a team of
       * two or more) or 30 s passed: another member takes tasks only once
       * it reaches the barrier, which on a loaded machine may come late */
      double t0 = omp_get_wtime();
      int need = n > 1 ? 2 : 1;
      for (int i = 0; i < NTASK / (depth + 1) || (distinct() < need && omp_get_wtime() - t0 < 30);
           i++)
        make_task(s, depth);
      drop(s);
    }
#pragma omp atomic
    total += tp_count;
  }
  long sum = 0;
  for (int i = 0; i < MAXT * MAXT; i++) sum += sums[i];
  if (tp_per_member(n)) CHECK_EQ(total, sum);
  return n;
}

static void reset(void) {
  memset(sums, 0, sizeof sums);
  memset(seen, 0, sizeof seen);
  overlaps = moved = out_of_range = tp_wrong = 0;
}

int main(void) {
  for (int depth = 0; depth < 2; depth++) {
    reset();
    int n = run_team(depth);
    long want = 0;
    /* a task of depth d makes (d + 1) + ... tasks in all: count by the sums */
    for (int i = 0; i < MAXT * MAXT; i++) want += sums[i];
    CHECK(want % STEPS == 0);
    CHECK_EQ(overlaps, 0);
    CHECK_EQ(moved, 0);
    CHECK_EQ(out_of_range, 0);
    int d = distinct();
    CHECK(d >= 1 && d <= n);
    const char *enough =
        d >= (n > 1 ? 2 : 1) ? "enough numbers ran tasks" : "too few numbers ran tasks";
    if (tp_per_member(n)) CHECK_EQ(tp_wrong, 0);
    if (!getenv("TP_BOUND_ONLY")) {
      printf("flat team, depth %d: overlaps %ld, moved %ld, wrong threadprivate %ld, %s\n", depth,
             overlaps, moved, tp_wrong, enough);
    } else {
      printf("flat team, depth %d: overlaps %ld, moved %ld, %s\n", depth, overlaps, moved, enough);
    }
  }

  /* nested: an inner team in each of 2 outer members */
  reset();
  omp_set_max_active_levels(2);
  long outer_total = 0;
#pragma omp parallel num_threads(2) shared(outer_total)
  {
    int inner_n = 0;
#pragma omp parallel num_threads(2) shared(inner_n)
    {
      tp_me = omp_get_thread_num();
#pragma omp barrier
#pragma omp single
      {
        inner_n = omp_get_num_threads();
        int s = slot();
        take(s);
        for (int i = 0; i < NTASK / 4; i++) make_task(s, 1);
        drop(s);
      }
    }
#pragma omp atomic
    outer_total += inner_n;
  }
  CHECK_EQ(overlaps, 0);
  CHECK_EQ(moved, 0);
  CHECK_EQ(out_of_range, 0);
  /* TP_BOUND_ONLY: threadprivate is per member only in bound outermost
   * teams (ITO_TLS=worker: tests/omp/CMakeLists.txt); nested ones not */
  if (getenv("TP_BOUND_ONLY")) {
    printf("nested teams: overlaps %ld, moved %ld\n", overlaps, moved);
  } else {
    CHECK_EQ(tp_wrong, 0);
    printf("nested teams: overlaps %ld, moved %ld, wrong threadprivate %ld\n", overlaps, moved,
           tp_wrong);
  }
  return omptest_finish("task_ids");
}
