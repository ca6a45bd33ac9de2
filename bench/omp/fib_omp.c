/* fib(n) with OpenMP tasks: the tasking example of the OpenMP
 * specification, both calls as tasks on shared x and y, then taskwait; no
 * cut-off. Started by one thread (parallel + single); timed against the
 * plain serial recursion compiled into the same binary.
 *
 *   fib_omp [n=35] [reps=5]
 *
 * CSV, one line per repetition (ratio = parallel_s / serial_s):
 *   system,workers,n,rep,serial_s,parallel_s,ratio
 * Exits 1 on a wrong answer. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include "omp_common.h"

__attribute__((noinline)) static long fib_serial(int n) {
  if (n < 2) return n;
  return fib_serial(n - 1) + fib_serial(n - 2);
}

__attribute__((noinline)) static long fib_task(int n) {
  if (n < 2) return n;
  long x, y;
#pragma omp task shared(x) firstprivate(n)
  x = fib_task(n - 1);
#pragma omp task shared(y) firstprivate(n)
  y = fib_task(n - 2);
#pragma omp taskwait
  return x + y;
}

/* fib(n) on a team: one thread starts the recursion, the others take tasks
 * at the barrier that ends single. *team gets the team's size. */
static long fib_parallel(int n, int *team) {
  long r = -1;
#pragma omp parallel shared(r)
  {
#pragma omp single
    {
      *team = omp_get_num_threads();
      r = fib_task(n);
    }
  }
  return r;
}

int main(int argc, char **argv) {
  const int n = (int)bench_arg("fib_omp", argc, argv, 1, 35, 0, 80);
  const int reps = (int)bench_arg("fib_omp", argc, argv, 2, 5, 1, 100000);
  const long want = ompb_fib(n);
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel),       OMPB_ENTRY(GOMP_single_start),
                                OMPB_ENTRY(GOMP_task),           OMPB_ENTRY(GOMP_taskwait),
                                OMPB_ENTRY(omp_get_num_threads), OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);

  /* warm-up: starts the team's threads */
  int team = ompb_fib_warmup("fib_omp", fib_parallel, n);
  const char *sys = ompb_system(entries, nent);
  ompb_meta("omp_fib", entries, nent, team);
  printf("system,workers,n,rep,serial_s,parallel_s,ratio\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    int x = n;
    OMPB_OPAQUE(x);
    double t0 = ompb_now_s();
    long rs = fib_serial(x);
    double t1 = ompb_now_s();
    long rp = fib_parallel(x, &team);
    double t2 = ompb_now_s();
    if (rs != want || rp != want) {
      fprintf(stderr, "fib_omp: WRONG ANSWER fib(%d): serial %ld, parallel %ld, expected %ld\n", n,
              rs, rp, want);
      return 1;
    }
    double ts = t1 - t0, tp = t2 - t1;
    printf("%s,%d,%d,%d,%.6f,%.6f,%.4f\n", sys, team, n, rep, ts, tp, ts > 0 ? tp / ts : 0.0);
    fflush(stdout);
  }
  return 0;
}
