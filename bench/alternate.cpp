// Parallelism that alternates between one worker and all of them, many times
// a second (the idle-workers paper: workers that sleep when idle must not cost speed-up).
//
//   alternate_<system> [phases=200] [seq_us=1000] [par_us=1000] [reps=3]
//
// A phase is seq_us of sequential work on the root, then a parallel section:
// a spawn tree of 16 P leaves that together hold P x par_us of work, so that
// with perfect speed-up the section takes par_us. Work is LCG steps,
// calibrated once at start (steps per microsecond, timed serially). The same
// binary first runs the phases with a plain serial recursion (serial_s), then
// with spawns (parallel_s); speedup = serial_s / parallel_s, at most about
// (seq_us + P par_us) / (seq_us + par_us). Both runs must produce the same
// checksum. CSV, one line per repetition:
//   system,workers,phases,seq_us,par_us,rep,serial_s,parallel_s,speedup
#include <cstdint>
#include <cstdio>

#include "common/spawn.hpp"
#include "common/util.hpp"
#include "common/work.hpp"

namespace {

long leaf_steps = 0, seq_steps = 0;

__attribute__((noinline)) std::uint64_t tree_serial(int n) {
  if (n == 1) return bench::lcg_work(leaf_steps);
  return tree_serial(n / 2) + tree_serial(n - n / 2);
}

__attribute__((noinline)) std::uint64_t tree_par(int n) {
  if (n == 1) return bench::lcg_work(leaf_steps);
  std::uint64_t a = 0;
  BENCH_TASK_GROUP(tg);
  BENCH_SPAWN(tg, a = tree_par(n / 2));
  std::uint64_t b = tree_par(n - n / 2);
  BENCH_SYNC(tg);
  return a + b;
}

template <class Tree>
std::uint64_t phases_run(int phases, int leaves, Tree tree) {
  std::uint64_t sum = 0;
  for (int p = 0; p < phases; p++) {
    sum += bench::lcg_work(seq_steps);
    sum += tree(leaves);
  }
  return sum;
}

}  // namespace

int main(int argc, char **argv) {
  const int phases = static_cast<int>(bench::arg_long(argc, argv, 1, 200, 1, 10000000));
  const long seq_us = bench::arg_long(argc, argv, 2, 1000, 0, 10000000);
  const long par_us = bench::arg_long(argc, argv, 3, 1000, 1, 10000000);
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 4, 3, 1, 1000));

  const int workers = bench::init_workers();
  bench::print_meta("alternate", BENCH_SYSTEM, workers);
  const double rate = bench::lcg_steps_per_us();
  const int leaves = 16 * workers;
  seq_steps = static_cast<long>(rate * static_cast<double>(seq_us));
  leaf_steps = static_cast<long>(rate * static_cast<double>(par_us) * workers / leaves);
  if (leaf_steps < 1) leaf_steps = 1;

  std::printf("system,workers,phases,seq_us,par_us,rep,serial_s,parallel_s,speedup\n");
  for (int r = 0; r < reps; r++) {
    std::uint64_t want = 0, got = 0;
    double ts = bench::seconds([&] { want = phases_run(phases, leaves, tree_serial); });
    double tp = bench::seconds_on_root([&] { got = phases_run(phases, leaves, tree_par); });
    if (got != want) {
      std::fprintf(stderr, "alternate_%s: WRONG ANSWER: checksum %llu, serial %llu\n", BENCH_SYSTEM,
                   static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
      return 1;
    }
    std::printf("%s,%d,%d,%ld,%ld,%d,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, phases, seq_us,
                par_us, r, ts, tp, ts / tp);
    std::fflush(stdout);
  }
  return 0;
}
