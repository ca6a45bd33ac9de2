// How long one task takes to move to another worker (the six-systems study, section 5.4.1;
// docs/references.md).
//
//   migration_<system> [reps=10000] [dropped=1000] [gap_us=0]
//
// Per repetition the parent records t0 and spawns a child; the child records
// t1 as it starts; the parent records t2 when it resumes right after the
// spawn (before its sync). Then each waits until the other has started (the
// handshake of the study's code), so the two must run on different workers: a
// work-first system runs the child at once and the parent's continuation has
// to be stolen (t2 - t0 large); a help-first system goes on with the parent
// and the child has to be stolen (t1 - t0 large). Needs at least 2 workers.
// With gap_us > 0 the root first runs gap_us of work alone before each
// repetition, so that the other workers go idle (and, if the system puts
// idle workers to sleep, asleep): the latency then includes waking one
// (the idle-workers paper; run.py reports it as `wake`).
// CLOCK_MONOTONIC (bench::now_ns). CSV, one line per kept repetition:
//   system,workers,rep,child_start_ns,parent_resume_ns
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/spawn.hpp"
#include "common/util.hpp"
#include "common/work.hpp"

namespace {

// Waits until *flag is nonzero: bounded spin, then sched_yield; exits after
// 60 s rather than hang (e.g. a system that runs both on one worker).
void wait_flag(const std::atomic<int> *flag, const char *who) {
  bench::spin_until([&] { return flag->load(std::memory_order_acquire) != 0; }, 60,
                    [&] {
                      std::fprintf(stderr, "migration_%s: the %s waited 60 s for the other task\n",
                                   BENCH_SYSTEM, who);
                      std::exit(4);
                    });
}

struct rep_state {
  std::atomic<int> parent_started{0};
  std::atomic<int> child_started{0};
  std::int64_t t1 = 0;
};

}  // namespace

__attribute__((noinline)) static void child(rep_state *s) {
  s->t1 = bench::now_ns();
  s->child_started.store(1, std::memory_order_release);
  wait_flag(&s->parent_started, "child");
}

// Returns t0 and t2 through the pointers.
__attribute__((noinline)) static void parent(rep_state *s, std::int64_t *t0, std::int64_t *t2) {
  BENCH_TASK_GROUP(tg);
  *t0 = bench::now_ns();
  BENCH_SPAWN(tg, child(s));
  *t2 = bench::now_ns();
  s->parent_started.store(1, std::memory_order_release);
  wait_flag(&s->child_started, "parent");
  BENCH_SYNC(tg);
}

int main(int argc, char **argv) {
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 1, 10000, 1, 100000000));
  const int drop = static_cast<int>(bench::arg_long(argc, argv, 2, 1000, 0, reps - 1));
  const long gap_us = bench::arg_long(argc, argv, 3, 0, 0, 10000000);

  const int workers = bench::init_workers();
  bench::print_meta("migration", BENCH_SYSTEM, workers);
  if (workers < 2) {
    std::fprintf(stderr, "migration_%s: needs at least 2 workers (has %d)\n", BENCH_SYSTEM,
                 workers);
    return 2;
  }

  std::vector<std::int64_t> child_ns(static_cast<size_t>(reps)),
      parent_ns(static_cast<size_t>(reps));
  bool ok = true;
  const long gap_steps = gap_us ? static_cast<long>(bench::lcg_steps_per_us() * gap_us) : 0;
  bench::run_root([&] {
    for (int r = 0; r < reps; r++) {
      if (gap_steps) bench::keep(bench::lcg_work(gap_steps));
      rep_state s;
      std::int64_t t0 = 0, t2 = 0;
      parent(&s, &t0, &t2);
      if (s.child_started.load() != 1 || s.t1 < t0 || t2 < t0) ok = false;
      child_ns[static_cast<size_t>(r)] = s.t1 - t0;
      parent_ns[static_cast<size_t>(r)] = t2 - t0;
    }
  });
  if (!ok) {
    std::fprintf(stderr, "migration_%s: WRONG ANSWER: a child did not run, or a clock went back\n",
                 BENCH_SYSTEM);
    return 1;
  }
  std::printf("system,workers,rep,child_start_ns,parent_resume_ns\n");
  for (int r = drop; r < reps; r++)
    std::printf("%s,%d,%d,%lld,%lld\n", BENCH_SYSTEM, workers, r,
                static_cast<long long>(child_ns[static_cast<size_t>(r)]),
                static_cast<long long>(parent_ns[static_cast<size_t>(r)]));
  return 0;
}
