/* A reduction over a tree of tasks: fib(n) summed by task reductions. The
 * call tree of fib is made of tasks, each of them `in_reduction(+: sum)`,
 * all inside one `taskgroup task_reduction(+: sum)`: a call of fib(m) with
 * m > cutoff creates two tasks, for m - 1 and m - 2; a task for m <= cutoff
 * adds fib(m) (the plain recursion) to sum, so the leaves of the tree (with
 * cutoff=1: fib(1) = 1 and fib(0) = 0) add up to fib(n). Nothing waits
 * inside the tree (no taskwait): the end of the taskgroup waits for every
 * descendant and combines the copies. Started by one thread (parallel +
 * single); timed against the same tree walked without pragmas, adding to
 * one variable, in the same binary.
 *
 *   taskred_omp [n=25] [cutoff=1] [reps=5]
 *
 * Each in_reduction task updates a copy of sum that the runtime gives it
 * (GOMP_task_reduction_remap), one per team member; the end of the
 * taskgroup adds them into sum. CSV, one line per repetition
 * (ratio = parallel_s / serial_s):
 *   system,workers,n,cutoff,rep,serial_s,parallel_s,ratio
 * Exits 1 on a wrong answer (the closed form, and the serial walk). */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include "omp_common.h"

/* The reduction variable: file scope, so that the tasks of every level of
 * the recursion name it in their in_reduction clause. */
static long sum;
static int cutoff;

__attribute__((noinline)) static long fib_serial(int n) {
  if (n < 2) return n;
  return fib_serial(n - 1) + fib_serial(n - 2);
}

/* Adds fib(n) to sum, n > cutoff: two in_reduction tasks. */
__attribute__((noinline)) static void fib_red(int n) {
  int a = n - 1, b = n - 2;
#pragma omp task in_reduction(+ : sum) firstprivate(a)
  {
    if (a <= cutoff)
      sum += fib_serial(a);
    else
      fib_red(a);
  }
#pragma omp task in_reduction(+ : sum) firstprivate(b)
  {
    if (b <= cutoff)
      sum += fib_serial(b);
    else
      fib_red(b);
  }
}

/* fib(n) on a team: one thread opens the taskgroup and starts the tree,
 * the others take tasks at the barrier that ends single. *team gets the
 * team's size. */
static long fib_parallel(int n, int *team) {
  sum = 0;
#pragma omp parallel
  {
#pragma omp single
    {
      *team = omp_get_num_threads();
#pragma omp taskgroup task_reduction(+ : sum)
      {
#pragma omp task in_reduction(+ : sum) firstprivate(n)
        {
          if (n <= cutoff)
            sum += fib_serial(n);
          else
            fib_red(n);
        }
      }
    }
  }
  return sum;
}

/* The same tree without pragmas: the leaves add to one variable. */
static long acc;
__attribute__((noinline)) static void fib_walk(int n) {
  if (n <= cutoff) {
    acc += fib_serial(n);
    return;
  }
  fib_walk(n - 1);
  fib_walk(n - 2);
}

int main(int argc, char **argv) {
  const int n = (int)bench_arg("taskred_omp", argc, argv, 1, 25, 0, 80);
  cutoff = (int)bench_arg("taskred_omp", argc, argv, 2, 1, 1, 80);
  const int reps = (int)bench_arg("taskred_omp", argc, argv, 3, 5, 1, 100000);
  const long want = ompb_fib(n);
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel),
                                OMPB_ENTRY(GOMP_single_start),
                                OMPB_ENTRY(GOMP_taskgroup_start),
                                OMPB_ENTRY(GOMP_taskgroup_reduction_register),
                                OMPB_ENTRY(GOMP_task),
                                OMPB_ENTRY(GOMP_task_reduction_remap),
                                OMPB_ENTRY(GOMP_taskgroup_end),
                                OMPB_ENTRY(GOMP_taskgroup_reduction_unregister),
                                OMPB_ENTRY(omp_get_num_threads),
                                OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);

  /* warm-up: starts the team's threads */
  int team = ompb_fib_warmup("taskred_omp", fib_parallel, n);
  const char *sys = ompb_system(entries, nent);
  ompb_meta("omp_taskred", entries, nent, team);
  printf("system,workers,n,cutoff,rep,serial_s,parallel_s,ratio\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    int x = n;
    OMPB_OPAQUE(x);
    acc = 0;
    double t0 = ompb_now_s();
    fib_walk(x);
    double t1 = ompb_now_s();
    long rp = fib_parallel(x, &team);
    double t2 = ompb_now_s();
    if (acc != want || rp != want) {
      fprintf(stderr,
              "taskred_omp: WRONG ANSWER fib(%d) cutoff %d: serial %ld, task reduction %ld, "
              "expected %ld\n",
              n, cutoff, acc, rp, want);
      return 1;
    }
    double ts = t1 - t0, tp = t2 - t1;
    printf("%s,%d,%d,%d,%d,%.6f,%.6f,%.4f\n", sys, team, n, cutoff, rep, ts, tp,
           ts > 0 ? tp / ts : 0.0);
    fflush(stdout);
  }
  return 0;
}
