// Task-creation overhead (the six-systems study, sections 5.1-5.2): a loop that spawns a
// task doing nothing and syncs right after it.
//
//   spawn_loop_<system> [iters=1000] [measurements=31] [dropped=5]
//
// One measurement times `iters` spawn+sync pairs; the first `dropped`
// measurements (start-up effects: page faults, pools) are not printed.
// Prints one CSV line per kept measurement:
//   system,workers,measurement,ns_per_iter,clocks_per_iter
// where clocks are the processor's clock counter (bench::clocks(): rdtsc on
// x86-64, at the nominal frequency); a `# clock=... ghz=...` line gives the
// counter and its rate, measured against CLOCK_MONOTONIC over the run.
// Afterwards a checked run (a task that counts) verifies that every sync
// waited for its child; a failure exits nonzero.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/spawn.hpp"
#include "common/util.hpp"
#include "common/create_loop.hpp"

// Does nothing, but is really called: not inlined, not removable.

int main(int argc, char **argv) {
  const long iters = bench::arg_long(argc, argv, 1, 1000, 1, 1L << 40);
  const int meas = static_cast<int>(bench::arg_long(argc, argv, 2, 31, 1, 1000000));
  const int drop = static_cast<int>(bench::arg_long(argc, argv, 3, 5, 0, meas - 1));

  const int workers = bench::init_workers();
  bench::print_meta("spawn_loop", BENCH_SYSTEM, workers);

  std::vector<std::int64_t> ns(static_cast<size_t>(meas));
  std::vector<std::uint64_t> clk(static_cast<size_t>(meas));
  std::int64_t run_ns0 = 0, run_ns1 = 0;
  std::uint64_t run_c0 = 0, run_c1 = 0;
  bench::run_root([&] {
    run_ns0 = bench::now_ns();
    run_c0 = bench::clocks();
    for (int m = 0; m < meas; m++) {
      long it = iters;
      bench::opaque(it);
      std::int64_t t0 = bench::now_ns();
      std::uint64_t c0 = bench::clocks();
      create_many(it);
      std::uint64_t c1 = bench::clocks();
      std::int64_t t1 = bench::now_ns();
      ns[static_cast<size_t>(m)] = t1 - t0;
      clk[static_cast<size_t>(m)] = c1 - c0;
    }
    run_c1 = bench::clocks();
    run_ns1 = bench::now_ns();
  });

  std::printf("# clock=%s ghz=%.4f\n", BENCH_CLOCK_NAME,
              run_ns1 > run_ns0
                  ? static_cast<double>(run_c1 - run_c0) / static_cast<double>(run_ns1 - run_ns0)
                  : 0.0);
  std::printf("system,workers,measurement,ns_per_iter,clocks_per_iter\n");
  for (int m = drop; m < meas; m++)
    std::printf("%s,%d,%d,%.2f,%.1f\n", BENCH_SYSTEM, workers, m,
                static_cast<double>(ns[static_cast<size_t>(m)]) / static_cast<double>(iters),
                static_cast<double>(clk[static_cast<size_t>(m)]) / static_cast<double>(iters));
  std::fflush(stdout);

  long counter = 0, bad = -2;
  bench::run_root([&] { bad = create_many_checked(iters, &counter); });
  if (bad != -1 || counter != iters) {
    std::fprintf(stderr,
                 "spawn_loop_%s: WRONG ANSWER: %ld tasks ran of %ld; first sync that did not wait "
                 "for its child: iteration %ld\n",
                 BENCH_SYSTEM, counter, iters, bad);
    return 1;
  }
  return 0;
}
