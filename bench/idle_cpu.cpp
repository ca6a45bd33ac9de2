// CPU burnt by idle workers (the idle-workers paper, docs/references.md): one task runs sequential
// work while the other P - 1 workers have nothing to do.
//
//   idle_cpu_<system> [ms=1000] [reps=3]
//
// Each repetition first runs a parallel phase (a spawn tree of 16 P leaves
// of 200 us of work each) so that every worker has been running and is now
// idle, then, on the root, for ms milliseconds of wall time, runs LCG steps
// and measures
//   wall       the elapsed time,
//   process    the CPU time of the whole process (getrusage, user + system),
//   work       the CPU time of the OS thread that ran the work
//              (CLOCK_THREAD_CPUTIME_ID),
// and prints idle_pct = (process - work) / (P - 1) / wall * 100: the share of
// a core each idle worker used. Whatever the system does while idle counts:
// spinning before it sleeps, timed wake-ups, polling. Needs 2 workers.
// CSV, one line per repetition:
//   system,workers,rep,ms,wall_s,process_cpu_s,work_cpu_s,idle_pct
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "common/spawn.hpp"
#include "common/util.hpp"
#include "common/work.hpp"

namespace {

std::atomic<long> leaves_run{0};
long leaf_steps = 0;

void warm_tree(int n) {
  if (n == 1) {
    bench::keep(bench::lcg_work(leaf_steps));
    leaves_run.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  BENCH_TASK_GROUP(tg);
  BENCH_SPAWN(tg, warm_tree(n / 2));
  warm_tree(n - n / 2);
  BENCH_SYNC(tg);
}

double process_cpu_s() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double thread_cpu_s() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct sample {
  double wall, process, work;
};

// Sequential work on the calling task for ms of wall time, in slices of
// about 100 us so that the clock is read rarely.
sample sequential(long ms, long slice_steps) {
  sample s;
  double c0 = process_cpu_s(), t0 = thread_cpu_s();
  std::int64_t w0 = bench::now_ns(), end = w0 + ms * 1000000;
  std::uint64_t acc = 0;
  while (bench::now_ns() < end) acc += bench::lcg_work(slice_steps);
  bench::keep(acc);
  std::int64_t w1 = bench::now_ns();
  s.work = thread_cpu_s() - t0;
  s.process = process_cpu_s() - c0;
  s.wall = static_cast<double>(w1 - w0) * 1e-9;
  return s;
}

}  // namespace

int main(int argc, char **argv) {
  const long ms = bench::arg_long(argc, argv, 1, 1000, 1, 600000);
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 2, 3, 1, 1000));

  const int workers = bench::init_workers();
  bench::print_meta("idle_cpu", BENCH_SYSTEM, workers);
  if (workers < 2) {
    std::fprintf(stderr, "idle_cpu_%s: needs at least 2 workers (has %d)\n", BENCH_SYSTEM, workers);
    return 2;
  }
  const double rate = bench::lcg_steps_per_us();
  leaf_steps = static_cast<long>(rate * 200);
  const long slice_steps = static_cast<long>(rate * 100);

  std::printf("system,workers,rep,ms,wall_s,process_cpu_s,work_cpu_s,idle_pct\n");
  for (int r = 0; r < reps; r++) {
    sample s{};
    const int leaves = 16 * workers;
    leaves_run.store(0);
    bench::run_root([&] {
      warm_tree(leaves);
      s = sequential(ms, slice_steps);
    });
    if (leaves_run.load() != leaves) {
      std::fprintf(stderr, "idle_cpu_%s: WRONG ANSWER: %ld of %d leaves ran\n", BENCH_SYSTEM,
                   leaves_run.load(), leaves);
      return 1;
    }
    if (s.work <= 0 || s.process + 1e-3 < s.work) {
      std::fprintf(stderr,
                   "idle_cpu_%s: WRONG ANSWER: CPU times make no sense (process %.6f s, "
                   "work %.6f s)\n",
                   BENCH_SYSTEM, s.process, s.work);
      return 1;
    }
    double idle = s.process - s.work;
    if (idle < 0) idle = 0; /* the two clocks tick at different granularities */
    std::printf("%s,%d,%d,%ld,%.6f,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, r, ms, s.wall,
                s.process, s.work, idle / (workers - 1) / s.wall * 100.0);
    std::fflush(stdout);
  }
  return 0;
}
