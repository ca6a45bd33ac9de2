// Task creation on P workers at once (the six-systems study, section 5.3; docs/references.md).
//
//   create_p_<system> [iters=1000] [measurements=31] [dropped=5]
//
// The root spawns P tasks (P = the worker count). Each waits at a spin
// barrier, so that all P run at the same time, then times `iters` iterations
// of `spawn(null_task); sync;` (the loop of spawn_loop.cpp); a barrier before
// every measurement keeps the P loops overlapping. The first `dropped`
// measurements are not printed. One CSV line per kept measurement:
//   system,workers,measurement,ns_per_iter
// where ns_per_iter is the mean over the P tasks of each one's own ns per
// iteration. Afterwards every task runs a counting loop that checks each sync
// waited for its child; a failure exits nonzero.
//
// The barrier spins a bounded number of times and then yields, so a task that
// waits for a worker not yet started does not starve it; if the P tasks do not
// all arrive within 120 s (a system that gave fewer workers than it said) the
// program exits nonzero instead of hanging.
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/spawn.hpp"
#include "common/util.hpp"
#include "common/create_loop.hpp"

namespace {

// Sense-reversing barrier for n participants: bounded spin, then sched_yield.
class spin_barrier {
 public:
  explicit spin_barrier(int n) : n_(n) {}
  void arrive() {
    const unsigned gen = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      count_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      return;
    }
    bench::spin_until([&] { return gen_.load(std::memory_order_acquire) != gen; }, 120,
                      [&] {
                        std::fprintf(stderr,
                                     "create_p_%s: barrier: only %d of %d tasks arrived in 120 s\n",
                                     BENCH_SYSTEM, count_.load(), n_);
                        std::exit(4);
                      });
  }

 private:
  const int n_;
  alignas(64) std::atomic<int> count_{0};
  alignas(64) std::atomic<unsigned> gen_{0};
};

struct ctx {
  int p;
  long iters;
  int meas;
  spin_barrier bar;
  std::atomic<int> next_id{0};
  std::vector<std::vector<std::int64_t>> ns;  // [task][measurement]
  std::vector<long> counted, bad;
  ctx(int p_, long it, int m)
      : p(p_),
        iters(it),
        meas(m),
        bar(p_),
        ns(static_cast<size_t>(p_)),
        counted(static_cast<size_t>(p_), 0),
        bad(static_cast<size_t>(p_), -2) {}
};

}  // namespace

// One of the P tasks; its index is taken from a counter, so the spawning loop
// passes nothing that changes between spawns.
__attribute__((noinline)) static void leaf(ctx *c) {
  const int id = c->next_id.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::int64_t> &ns = c->ns[static_cast<size_t>(id)];
  ns.assign(static_cast<size_t>(c->meas), 0);
  for (int m = 0; m < c->meas; m++) {
    c->bar.arrive();
    long it = c->iters;
    bench::opaque(it);
    std::int64_t t0 = bench::now_ns();
    create_many(it);
    std::int64_t t1 = bench::now_ns();
    ns[static_cast<size_t>(m)] = t1 - t0;
  }
  c->bar.arrive();
  long *cnt = &c->counted[static_cast<size_t>(id)];
  c->bad[static_cast<size_t>(id)] = create_many_checked(c->iters, cnt);
}

__attribute__((noinline)) static void spawn_all(ctx *c) {
  BENCH_TASK_GROUP(tg);
  for (int i = 0; i < c->p; i++) BENCH_SPAWN(tg, leaf(c));
  BENCH_SYNC(tg);
}

int main(int argc, char **argv) {
  const long iters = bench::arg_long(argc, argv, 1, 1000, 1, 1L << 40);
  const int meas = static_cast<int>(bench::arg_long(argc, argv, 2, 31, 1, 1000000));
  const int drop = static_cast<int>(bench::arg_long(argc, argv, 3, 5, 0, meas - 1));

  const int workers = bench::init_workers();
  bench::print_meta("create_p", BENCH_SYSTEM, workers);

  ctx c(workers, iters, meas);
  bench::run_root([&] { spawn_all(&c); });

  if (c.next_id.load() != workers) {
    std::fprintf(stderr, "create_p_%s: WRONG ANSWER: %d of %d tasks ran\n", BENCH_SYSTEM,
                 c.next_id.load(), workers);
    return 1;
  }
  for (int i = 0; i < workers; i++) {
    if (c.bad[static_cast<size_t>(i)] != -1 || c.counted[static_cast<size_t>(i)] != iters) {
      std::fprintf(stderr,
                   "create_p_%s: WRONG ANSWER: task %d: %ld tasks ran of %ld; first sync that "
                   "did not wait for its child: iteration %ld\n",
                   BENCH_SYSTEM, i, c.counted[static_cast<size_t>(i)], iters,
                   c.bad[static_cast<size_t>(i)]);
      return 1;
    }
  }

  std::printf("system,workers,measurement,ns_per_iter\n");
  for (int m = drop; m < meas; m++) {
    double sum = 0;
    for (int i = 0; i < workers; i++)
      sum += static_cast<double>(c.ns[static_cast<size_t>(i)][static_cast<size_t>(m)]) /
             static_cast<double>(iters);
    std::printf("%s,%d,%d,%.2f\n", BENCH_SYSTEM, workers, m, sum / workers);
  }
  return 0;
}
