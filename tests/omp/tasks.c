/* Explicit tasks (GOMP_task, GOMP_taskwait, GOMP_taskyield): recursive fib
 * with task/taskwait, if(0) (undeferred: complete when the construct
 * returns), final (omp_in_final in final tasks and their descendants, not
 * elsewhere; included tasks complete at once), mergeable, untied,
 * priority, taskyield, firstprivate capture by default, tasks created by
 * every thread, tasks completed by an explicit barrier and by the end of
 * the region, and a task tree summed with taskwait at each level. */
#include "omptest.h"

static long fib_task(int n) {
  if (n < 2) return n;
  long x, y;
#pragma omp task shared(x)
  x = fib_task(n - 1);
#pragma omp task shared(y)
  y = fib_task(n - 2);
#pragma omp taskwait
  return x + y;
}

static long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

/* final(depth >= cut): tasks at depth >= cut are final, so are all their
 * descendants (included tasks). Counts tasks that see omp_in_final(). */
static int finals_seen, nonfinals_seen, final_wrong;

static void final_tree(int depth, int cut, int maxd) {
  if (depth == maxd) return;
  for (int k = 0; k < 2; k++) {
#pragma omp task final(depth + 1 >= cut) mergeable
    {
      int f = omp_in_final();
      if (f)
        AINC(&finals_seen);
      else
        AINC(&nonfinals_seen);
      if (f != (depth + 1 >= cut)) AINC(&final_wrong);
      final_tree(depth + 1, cut, maxd);
    }
  }
#pragma omp taskwait
}

static long tree_sum(int depth) {
  if (depth == 0) return 1;
  long parts[3] = {0};
  for (int k = 0; k < 3; k++) {
#pragma omp task shared(parts) untied priority(k)
    parts[k] = tree_sum(depth - 1);
  }
#pragma omp taskwait
  return 1 + parts[0] + parts[1] + parts[2];
}

int main(void) {
  /* fib(25) from a single thread of the team. */
  long f = -1;
  double t0 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
  f = fib_task(25);
  (void)t0;
  printf("fib(25) with tasks: %ld (serial %ld)\n", f, fib_serial(25));
  CHECK_EQ(f, fib_serial(25));

  /* if(0): the task has finished when the construct returns. */
  {
    int bad = 0, ran = 0;
#pragma omp parallel shared(bad, ran)
    for (int i = 0; i < 500; i++) {
      int x = 0;
      int cond = i < 0;
#pragma omp task if (cond) shared(x)
      {
        x = i + 1;
        AINC(&ran);
      }
      if (x != i + 1) AINC(&bad);
    }
    printf("if(0) tasks: %d ran, %d not complete at once\n", ran, bad);
    CHECK_EQ(bad, 0);
  }

  /* final: depth 0 creates, tasks at depth >= 3 are final. */
  {
    finals_seen = nonfinals_seen = final_wrong = 0;
#pragma omp parallel
#pragma omp single
    final_tree(0, 3, 8);
    /* 2 + 4 tasks above the cut (depths 1, 2), 2^3 + ... + 2^8 at/below. */
    printf("final: %d tasks in final, %d not, %d wrong; outside a task %d\n", finals_seen,
           nonfinals_seen, final_wrong, omp_in_final());
    CHECK_EQ(nonfinals_seen, 6);
    CHECK_EQ(finals_seen, 512 - 8);
    CHECK_EQ(final_wrong, 0);
    /* An included task (child of a final task) has completed when its
     * construct returns. */
    int bad = 0;
#pragma omp parallel
#pragma omp single
#pragma omp task final(1)
    {
      for (int i = 0; i < 100; i++) {
        int x = 0;
#pragma omp task shared(x)
        x = 1;
        if (!x || !omp_in_final()) bad++;
      }
    }
    printf("included tasks not complete at once: %d\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* mergeable and untied tasks, with taskyield, created by all threads. */
  {
    long sum = 0;
    int yields = 0;
#pragma omp parallel
    {
      for (int i = 0; i < 1000; i++) {
#pragma omp task mergeable shared(sum)
        {
#pragma omp atomic
          sum += i;
        }
#pragma omp task untied shared(sum, yields)
        {
#pragma omp taskyield
          AINC(&yields);
#pragma omp atomic
          sum += 2 * i;
#pragma omp taskyield
        }
        if (i % 100 == 0) {
#pragma omp taskyield
        }
      }
#pragma omp taskwait
    }
    int n = omp_get_max_threads();
    printf("mergeable/untied/taskyield: %ld %d\n", sum, yields);
    CHECK_EQ(sum, 3L * n * 999 * 1000 / 2);
    CHECK_EQ(yields, 1000 * n);
  }

  /* Default firstprivate capture: the task sees the value at creation. */
  {
    int bad = 0;
#pragma omp parallel
#pragma omp single
    {
      for (int i = 0; i < 2000; i++) {
        int v = i * 3;
#pragma omp task
        {
          if (v != i * 3) AINC(&bad);
        }
        v = -1;
        (void)v;
      }
    }
    printf("firstprivate capture: %d wrong\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* Tasks are complete after an explicit barrier and after the region. */
  {
    int done1 = 0, done2 = 0, seen_at_barrier = -1, n = 0;
#pragma omp parallel shared(done1, done2, seen_at_barrier, n)
    {
#pragma omp single
      n = omp_get_num_threads();
      for (int i = 0; i < 300; i++) {
#pragma omp task
        {
          volatile int spin = 0;
          for (int k = 0; k < 200; k++) spin += k;
          AINC(&done1);
        }
      }
#pragma omp barrier
#pragma omp single
      seen_at_barrier = ALOAD(&done1);
      for (int i = 0; i < 300; i++) {
#pragma omp task
        AINC(&done2);
      }
    }
    printf("tasks done at the barrier %d, at the region's end %d\n", seen_at_barrier, done2);
    CHECK_EQ(seen_at_barrier, 300 * n);
    CHECK_EQ(done2, 300 * n);
  }

  /* A tree of untied, prioritised tasks, 3^8 leaves. */
  {
    long nodes = 0;
#pragma omp parallel
#pragma omp single
    nodes = tree_sum(8);
    printf("task tree: %ld nodes\n", nodes);
    CHECK_EQ(nodes, (6561L * 3 - 1) / 2);
  }

  /* Tasks outside any parallel region run too. */
  {
    int x = 0;
#pragma omp task shared(x)
    x = 42;
#pragma omp taskwait
    printf("task outside a region: %d\n", x);
    CHECK_EQ(x, 42);
  }
  return omptest_finish("tasks");
}
