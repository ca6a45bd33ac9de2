// How fast tasks spread to many workers (the six-systems study, section 5.4.2; docs/references.md).
//
//   spreading_<system> [trials=30] [leaves=workers] [busy_us=1000]
//
// A binary tree of spawns (tree(l, r): spawn tree(l, mid); tree(mid, r);
// sync) with `leaves` leaves, by default as many as workers. Each leaf records
// when it started, relative to the root's start, then busy-waits `busy_us`
// microseconds so that the leaves cannot all run on one worker and must
// spread. CSV, one line per leaf and trial:
//   system,workers,trial,leaf,start_us
// The time until the last leaf started is the max of start_us in a trial.
// Checks that every leaf ran exactly once per trial.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/spawn.hpp"
#include "common/util.hpp"

namespace {
struct ctx {
  std::int64_t root_start = 0;
  std::int64_t busy_ns = 0;
  std::vector<std::int64_t> start;  // per leaf, ns since root_start; -1 = not run
  std::vector<int> runs;
};
}  // namespace

__attribute__((noinline)) static void leaf(ctx *c, int i) {
  std::int64_t s = bench::now_ns();
  c->start[static_cast<size_t>(i)] = s - c->root_start;
  __atomic_fetch_add(&c->runs[static_cast<size_t>(i)], 1, __ATOMIC_RELAXED);
  while (bench::now_ns() - s < c->busy_ns) __asm__ volatile("");
}

__attribute__((noinline)) static void tree(ctx *c, int l, int r) {
  if (r - l == 1) {
    leaf(c, l);
    return;
  }
  int mid = l + (r - l) / 2;
  BENCH_TASK_GROUP(tg);
  BENCH_SPAWN(tg, tree(c, l, mid));
  tree(c, mid, r);
  BENCH_SYNC(tg);
}

int main(int argc, char **argv) {
  const int trials = static_cast<int>(bench::arg_long(argc, argv, 1, 30, 1, 1000000));
  const long leaves_arg = bench::arg_long(argc, argv, 2, 0, 0, 1 << 20);
  const long busy_us = bench::arg_long(argc, argv, 3, 1000, 0, 10000000);

  const int workers = bench::init_workers();
  bench::print_meta("spreading", BENCH_SYSTEM, workers);
  const int leaves = leaves_arg > 0 ? static_cast<int>(leaves_arg) : workers;

  ctx c;
  c.busy_ns = busy_us * 1000;
  std::vector<std::vector<std::int64_t>> all;
  bool ok = true;
  // All trials run inside one root, so that a trial measures the tree alone
  // (not, say, an idle worker first taking the main thread's join of a new
  // root thread).
  bench::run_root([&] {
    for (int t = 0; t < trials; t++) {
      c.start.assign(static_cast<size_t>(leaves), -1);
      c.runs.assign(static_cast<size_t>(leaves), 0);
      c.root_start = bench::now_ns();
      tree(&c, 0, leaves);
      for (int i = 0; i < leaves; i++)
        if (c.runs[static_cast<size_t>(i)] != 1 || c.start[static_cast<size_t>(i)] < 0) ok = false;
      all.push_back(c.start);
    }
  });
  if (!ok) {
    std::fprintf(stderr, "spreading_%s: WRONG ANSWER: a leaf did not run exactly once\n",
                 BENCH_SYSTEM);
    return 1;
  }
  std::printf("system,workers,trial,leaf,start_us\n");
  for (int t = 0; t < trials; t++)
    for (int i = 0; i < leaves; i++)
      std::printf("%s,%d,%d,%d,%.3f\n", BENCH_SYSTEM, workers, t, i,
                  static_cast<double>(all[static_cast<size_t>(t)][static_cast<size_t>(i)]) * 1e-3);
  return 0;
}
