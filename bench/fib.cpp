// fib(n) with one spawn and one sync per call, against the plain serial
// function compiled in this same translation unit with the same flags.
//
//   fib_<system> [n=35] [reps=5]
//
// Prints one CSV line per repetition:
//   system,workers,n,rep,serial_s,parallel_s,ratio     (ratio = parallel/serial)
// and exits nonzero with a message if either version returns a wrong answer.
#include <cinttypes>
#include <cstdint>
#include <cstdio>

#include "common/spawn.hpp"
#include "common/util.hpp"

// Both functions are noinline: each is then exactly one call per node of
// the fib call tree, on every compiler. Left to itself GCC -O3 inlines the
// recursion into itself differently at the two call sites and merges the
// repeated pure calls it exposes, which changes the work, not the overhead
// (measured: fib(35) serial 11 ms, serial elision 1.3 ms; both 22 ms here).

// The baseline: plain C, no macro layer.
__attribute__((noinline)) static long fib_serial(int n) {
  if (n < 2) return n;
  return fib_serial(n - 1) + fib_serial(n - 2);
}

// FIB_CLOCK_READS=3 (the fib_ito_clock3 build, docs/profile.md): the least
// an exact span recorder adds to each fork, and nothing else: one read of
// the cycle counter where the fork starts, one where its child returns and
// one after the join, kept (volatile) but unused. FIB_CLOCK_READS=1
// (fib_ito_clock1): the first of them only.
#if defined(FIB_CLOCK_READS)
#if defined(__x86_64__)
#define FIB_CLOCK() __asm__ volatile("rdtsc" ::: "eax", "edx")
#elif defined(__aarch64__)
#define FIB_CLOCK()                                        \
  do {                                                     \
    unsigned long fib_v_;                                  \
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(fib_v_)); \
  } while (0)
#else
#error "FIB_CLOCK_READS: no cycle counter for this architecture"
#endif
#else
#define FIB_CLOCK() ((void)0)
#endif
#if defined(FIB_CLOCK_READS) && FIB_CLOCK_READS >= 3
#define FIB_CLOCK_MORE() FIB_CLOCK()
#else
#define FIB_CLOCK_MORE() ((void)0)
#endif

// The benchmark: one spawn and one sync per call.
__attribute__((noinline)) static long fib_par(int n) {
  if (n < 2) return n;
  long x, y;
  BENCH_TASK_GROUP(tg);
  FIB_CLOCK();
  BENCH_SPAWN(tg, x = fib_par(n - 1));
  FIB_CLOCK_MORE();
  y = fib_par(n - 2);
  BENCH_SYNC(tg);
  FIB_CLOCK_MORE();
  return x + y;
}

static long fib_expected(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; i++) {
    long c = a + b;
    a = b;
    b = c;
  }
  return a;
}

int main(int argc, char **argv) {
  const int n = static_cast<int>(bench::arg_long(argc, argv, 1, 35, 0, 80));
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 2, 5, 1, 100000));
  const long want = fib_expected(n);

  const int workers = bench::init_workers();
  bench::print_meta("fib", BENCH_SYSTEM, workers);
  std::printf("system,workers,n,rep,serial_s,parallel_s,ratio\n");
  std::fflush(stdout);

  // Warm-up: start the runtime's threads and touch its pools before timing.
  {
    int wn = n < 20 ? n : 20;
    long got = -1;
    bench::run_root([&] {
      bench::opaque(wn);
      got = fib_par(wn);
    });
    if (got != fib_expected(wn)) {
      std::fprintf(stderr, "fib_%s: warm-up fib(%d) = %ld, expected %ld\n", BENCH_SYSTEM, wn, got,
                   fib_expected(wn));
      return 1;
    }
  }

  for (int rep = 0; rep < reps; rep++) {
    long rs = -1, rp = -1;
    double ts = bench::seconds([&] {
      int x = n;
      bench::opaque(x);
      rs = fib_serial(x);
      bench::keep(rs);
    });
    double tp = bench::seconds_on_root([&] {
      int x = n;
      bench::opaque(x);
      rp = fib_par(x);
      bench::keep(rp);
    });

    if (rs != want || rp != want) {
      std::fprintf(stderr, "fib_%s: WRONG ANSWER fib(%d): serial %ld, parallel %ld, expected %ld\n",
                   BENCH_SYSTEM, n, rs, rp, want);
      return 1;
    }
    std::printf("%s,%d,%d,%d,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, n, rep, ts, tp,
                ts > 0 ? tp / ts : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
