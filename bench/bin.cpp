// bin(n, K, A): the artificial binary-tree task program of the six-systems study, 5.5:
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
//
// Work and critical path, from the recurrences T1(0) = Tinf(0) = a,
// T1(n) = a + K (2 T1(n-1) + a), Tinf(n) = a + K (Tinf(n-1) + a), where a is
// the time of one consume(A):
//   T1(n)   = a / (2K-1) * (3K (2K)^n - (K+1))
//   Tinf(n) = a * (2n+1)                          for K = 1 (the paper's 2an
//                                                 leaves out the root's own a)
//           = a / (K-1) * (2 K^(n+1) - (K+1))     for K > 1
// so consume(A) is called C(n) = T1(n) / a times.
//
// a is measured in this process, before every repetition: the median of five
// timed batches of consume(A) calls (each batch about 2 ms). The binary prints
// T1, Tinf and the greedy-scheduler bound T1/P + Tinf (P = workers) from that
// a next to the measured times; nothing is assumed about the machine.
//
//   bin_<system> [n=16] [K=1] [A=1000] [reps=3]
//
// Prints one CSV line per repetition:
//   system,workers,n,K,A,rep,serial_s,parallel_s,ratio,consume_ns,t1_s,tinf_s,bound_s
// and exits nonzero with a message unless both versions return C(n) times
// the value one consume(A) returns (mod 2^64).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

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

// The time of one consume(a), in seconds: the median over five batches, each
// of enough calls for about 2 million LCG steps, of the batch time per call.
double consume_seconds(long a) {
  const long per_batch = std::max(1L, 2000000 / std::max(1L, a));
  std::vector<double> t;
  for (int b = 0; b < 5; b++) {
    double s = bench::seconds([&] {
      for (long i = 0; i < per_batch; i++) {
        long x = a;
        bench::opaque(x);
        std::uint64_t r = consume(x);
        bench::keep(r);
      }
    });
    t.push_back(s / static_cast<double>(per_batch));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The closed forms of the six-systems study, 5.5, for one consume(A) taking `a` seconds.
double t1_closed(int n, int k, double a) {
  return a / (2.0 * k - 1.0) * (3.0 * k * std::pow(2.0 * k, n) - (k + 1.0));
}
double tinf_closed(int n, int k, double a) {
  if (k == 1) return a * (2.0 * n + 1.0);
  return a / (k - 1.0) * (2.0 * std::pow(static_cast<double>(k), n + 1) - (k + 1.0));
}

// The closed forms must agree with the recurrences they solve (a = 1).
bool closed_forms_agree(int n, int k) {
  double t1 = 1, tinf = 1;
  for (int i = 1; i <= n; i++) {
    t1 = 1 + k * (2 * t1 + 1);
    tinf = 1 + k * (tinf + 1);
  }
  auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-9 * std::fabs(y); };
  // C(n) = T1(n) / a, where C(n) fits in 64 bits (below about 2^60 here)
  const bool fits = n * std::log2(2.0 * k) < 60;
  return close(t1_closed(n, k, 1.0), t1) && close(tinf_closed(n, k, 1.0), tinf) &&
         (!fits || close(t1, static_cast<double>(calls(n, k))));
}

}  // namespace

int main(int argc, char **argv) {
  const int n = static_cast<int>(bench::arg_long(argc, argv, 1, 16, 0, 40));
  const int k = static_cast<int>(bench::arg_long(argc, argv, 2, 1, 1, 1000));
  const long a = bench::arg_long(argc, argv, 3, 1000, 0, 1L << 40);
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 4, 3, 1, 100000));
  const std::uint64_t want = calls(n, k) * consume(a);
  if (!closed_forms_agree(n, k)) {
    std::fprintf(stderr,
                 "bin_%s: the closed forms for T1/Tinf disagree with their recurrences "
                 "at n=%d, K=%d\n",
                 BENCH_SYSTEM, n, k);
    return 1;
  }

  const int workers = bench::init_workers();
  bench::print_meta("bin", BENCH_SYSTEM, workers);
  std::printf("# consume_calls=%llu\n", (unsigned long long)calls(n, k));
  std::printf(
      "system,workers,n,K,A,rep,serial_s,parallel_s,ratio,consume_ns,t1_s,tinf_s,bound_s\n");
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
    const double ca = consume_seconds(a);
    const double t1 = t1_closed(n, k, ca), tinf = tinf_closed(n, k, ca);
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
    std::printf("%s,%d,%d,%d,%ld,%d,%.6f,%.6f,%.4f,%.3f,%.6f,%.6f,%.6f\n", BENCH_SYSTEM, workers, n,
                k, a, rep, ts, tp, ts > 0 ? tp / ts : 0.0, ca * 1e9, t1, tinf, t1 / workers + tinf);
    std::fflush(stdout);
  }
  return 0;
}
