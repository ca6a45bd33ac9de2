// CPU work of a known amount, the same on every system and compiler: n steps
// of a 64-bit LCG (a dependent multiply-add chain), each step hidden from the
// optimiser so that no compiler can fold steps together.
#ifndef BENCH_COMMON_WORK_HPP
#define BENCH_COMMON_WORK_HPP

#include <cstdint>

#include "util.hpp"

namespace bench {

// n steps from a start the compiler cannot see; the result depends only on n.
__attribute__((noinline)) inline std::uint64_t lcg_work(long n) {
  std::uint64_t x = 0x2545F4914F6CDD1Dull;
  opaque(x);
  for (long i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    opaque(x);
  }
  return x;
}

// LCG steps per microsecond on this machine, from one timed serial run of
// about 20 ms (the fastest of three).
inline double lcg_steps_per_us() {
  const long n = 1L << 24;
  double best = 0;
  for (int i = 0; i < 3; i++) {
    std::int64_t t0 = now_ns();
    keep(lcg_work(n));
    double us = static_cast<double>(now_ns() - t0) / 1e3;
    double rate = static_cast<double>(n) / us;
    if (rate > best) best = rate;
  }
  return best;
}

}  // namespace bench

#endif  // BENCH_COMMON_WORK_HPP
