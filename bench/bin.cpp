// bin(n, K, A): the artificial binary-tree task program of seed 000, 5.5:
//
//   void bin(int n) {
//     consume CPU (A);
//     if (n > 0) {
//       for (i = 0; i < K; i++) {
//         spawn bin(n - 1);
//         bin(n - 1);
//         sync;
//         consume CPU (A);
//       }
//     }
//   }
//
// "consume CPU (A)" is here A steps of a 64-bit LCG (a dependent multiply-add
// chain, about 1 ns a step, kept opaque so no compiler can fold steps), so A is
// in LCG steps rather than clock cycles.
// It is called C(n) = (3K(2K)^n - (K+1)) / (2K-1) times (T1 of the paper
// divided by A); T_inf = A * (2n+1) for K = 1 (the paper's 2An, up to
// the root's own A), A * (2K^(n+1) - (K+1)) / (K-1) for K > 1.
//
//   bin_<system> [n=16] [K=1] [A=1000] [reps=3]
//
// Prints one CSV line per repetition:
//   system,workers,n,K,A,rep,serial_s,parallel_s,ratio
// and exits nonzero with a message unless both versions return C(n) times
// the value one consume(A) returns (mod 2^64).
#include <cstdint>
#include <cstdio>

#include "common/spawn.hpp"
#include "common/util.hpp"

namespace {

// A steps of an LCG from a start the compiler cannot see; the result is the same
// for every call, so the total is C(n) copies of it.
__attribute__((noinline)) std::uint64_t consume(long a) {
  std::uint64_t x = 0x2545F4914F6CDD1Dull;
  bench::opaque(x);
  // opaque(x) each step: without it clang folds steps together (10x less work
  // than g++'s code for the same A), so the systems would not do equal work.
  for (long i = 0; i < a; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    bench::opaque(x);
  }
  return x;
}

// The baseline: the same recursion, plain serial.
__attribute__((noinline)) std::uint64_t bin_serial(int n, int k, long a) {
  std::uint64_t s = consume(a);
  if (n > 0) {
    for (int i = 0; i < k; i++) {
      std::uint64_t x = bin_serial(n - 1, k, a);
      std::uint64_t y = bin_serial(n - 1, k, a);
      s += x + y + consume(a);
    }
  }
  return s;
}

// The benchmark: one spawn and one sync per iteration of the K loop.
__attribute__((noinline)) std::uint64_t bin_par(int n, int k, long a) {
  std::uint64_t s = consume(a);
  if (n > 0) {
    for (int i = 0; i < k; i++) {
      std::uint64_t x, y;
      BENCH_TASK_GROUP(tg);
      BENCH_SPAWN(tg, x = bin_par(n - 1, k, a));
      y = bin_par(n - 1, k, a);
      BENCH_SYNC(tg);
      s += x + y + consume(a);
    }
  }
  return s;
}

// C(n) by its recurrence C(0) = 1, C(n) = 1 + K (2 C(n-1) + 1), in 64 bits.
std::uint64_t calls(int n, int k) {
  std::uint64_t c = 1;
  for (int i = 0; i < n; i++) c = 1 + static_cast<std::uint64_t>(k) * (2 * c + 1);
  return c;
}

}  // namespace

int main(int argc, char **argv) {
  const int n = static_cast<int>(bench::arg_long(argc, argv, 1, 16, 0, 40));
  const int k = static_cast<int>(bench::arg_long(argc, argv, 2, 1, 1, 1000));
  const long a = bench::arg_long(argc, argv, 3, 1000, 0, 1L << 40);
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 4, 3, 1, 100000));
  const std::uint64_t want = calls(n, k) * consume(a);

  const int workers = bench::init_workers();
  bench::print_meta("bin", BENCH_SYSTEM, workers);
  std::printf("# consume_calls=%llu\n", (unsigned long long)calls(n, k));
  std::printf("system,workers,n,K,A,rep,serial_s,parallel_s,ratio\n");
  std::fflush(stdout);

  {  // warm-up
    int wn = n < 8 ? n : 8;
    std::uint64_t got = 0;
    bench::run_root([&] { got = bin_par(wn, k, a); });
    if (got != calls(wn, k) * consume(a)) {
      std::fprintf(stderr, "bin_%s: WRONG ANSWER in the warm-up bin(%d, %d, %ld)\n", BENCH_SYSTEM,
                   wn, k, a);
      return 1;
    }
  }

  for (int rep = 0; rep < reps; rep++) {
    std::uint64_t rs = 0, rp = 0;
    double ts = bench::seconds([&] {
      int x = n;
      bench::opaque(x);
      rs = bin_serial(x, k, a);
      bench::keep(rs);
    });
    double tp = bench::seconds_on_root([&] {
      int x = n;
      bench::opaque(x);
      rp = bin_par(x, k, a);
      bench::keep(rp);
    });

    if (rs != want || rp != want) {
      std::fprintf(stderr,
                   "bin_%s: WRONG ANSWER bin(n=%d, K=%d, A=%ld): serial %016llx, parallel %016llx, "
                   "expected %016llx\n",
                   BENCH_SYSTEM, n, k, a, (unsigned long long)rs, (unsigned long long)rp,
                   (unsigned long long)want);
      return 1;
    }
    std::printf("%s,%d,%d,%d,%ld,%d,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, n, k, a, rep, ts, tp,
                ts > 0 ? tp / ts : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
