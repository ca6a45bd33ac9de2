// Small helpers shared by the C++ benchmarks: a clock, argument parsing,
// and the metadata line every benchmark prints first.
#ifndef BENCH_COMMON_UTIL_HPP
#define BENCH_COMMON_UTIL_HPP

#include <sched.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace bench {

inline std::int64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline double now_s() { return static_cast<double>(now_ns()) * 1e-9; }

// The processor's clock counter: the time-stamp counter on x86-64 (ticks at
// the nominal frequency), the virtual counter on aarch64 (ticks at CNTFRQ,
// usually far below the core clock), 0 elsewhere. CLOCK_NAME names it.
#if defined(__x86_64__) || defined(__i386__)
#define BENCH_CLOCK_NAME "tsc"
inline std::uint64_t clocks() { return __builtin_ia32_rdtsc(); }
#elif defined(__aarch64__)
#define BENCH_CLOCK_NAME "cntvct"
inline std::uint64_t clocks() {
  std::uint64_t v;
  __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
  return v;
}
#else
#define BENCH_CLOCK_NAME "none"
inline std::uint64_t clocks() { return 0; }
#endif

// argv[i] as an integer in [lo, hi], or dflt when absent; exits on garbage.
inline long arg_long(int argc, char **argv, int i, long dflt, long lo, long hi) {
  if (i >= argc) return dflt;
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(argv[i], &end, 10);
  if (errno || end == argv[i] || *end || v < lo || v > hi) {
    std::fprintf(stderr, "%s: argument %d must be an integer in [%ld, %ld], got '%s'\n", argv[0], i,
                 lo, hi, argv[i]);
    std::exit(2);
  }
  return v;
}

// A fixed, well-mixed hash (splitmix64) for seeded data and tree ids.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

// Waits until done() is true: a bounded spin, then sched_yield between
// checks; after timeout_s seconds calls on_timeout() (which should report
// and exit) rather than hang.
template <class Done, class Timeout>
void spin_until(Done done, int timeout_s, Timeout on_timeout) {
  std::int64_t deadline = 0;
  for (long spins = 0; !done(); spins++) {
    if (spins < 4096) {
      cpu_relax();
      continue;
    }
    sched_yield();
    if ((spins & 1023) == 0) {
      std::int64_t now = now_ns();
      if (deadline == 0)
        deadline = now + static_cast<std::int64_t>(timeout_s) * 1000000000;
      else if (now > deadline)
        on_timeout();
    }
  }
}

// Keeps the compiler from knowing v (before a call) or from dropping it (after).
template <class T>
inline void opaque(T &v) {
  __asm__ volatile("" : "+r"(v) : : "memory");
}
template <class T>
inline void keep(const T &v) {
  __asm__ volatile("" : : "r"(v) : "memory");
}

#if defined(__clang__)
#define BENCH_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define BENCH_COMPILER "gcc " __VERSION__
#else
#define BENCH_COMPILER "unknown"
#endif

// "# key=value ..." lines are metadata: run.py keeps them, CSV readers skip them.
inline void print_meta(const char *bench, const char *system, int workers) {
  std::printf("# bench=%s system=%s workers=%d compiler=\"%s\"\n", bench, system, workers,
              BENCH_COMPILER);
}

}  // namespace bench

#endif  // BENCH_COMMON_UTIL_HPP
