// One spawn/sync syntax for every system the benchmarks are built for.
//
// A benchmark is written once with these macros (the six-systems study, section 2.3;
// docs/references.md) and compiled once per system, chosen by exactly one SYS_* definition:
//
//   SYS_serial      serial elision: SPAWN runs its statement, SYNC does nothing
//   SYS_ito         ito::task_group (lazy task creation), ito.hpp
//   SYS_ito_thread  one ito_create per SPAWN, ito_join at SYNC, ito.h
//   SYS_tbb         tbb::task_group (oneTBB)
//   SYS_gomp        OpenMP tasks, GNU libgomp (g++ -fopenmp)
//   SYS_iomp        OpenMP tasks, LLVM libomp (clang++ -fopenmp=libomp)
//
//   BENCH_TASK_GROUP(tg);        open a group in the current function
//   BENCH_SPAWN(tg, stmt);       run stmt as a child task; it sees the
//                                parent's variables by reference
//   BENCH_SPAWN_COPY(tg, (v, ...), stmt);
//                                the same, but the child gets its own copies
//                                of the listed variables, taken at the spawn
//                                (a loop variable the parent goes on changing)
//   BENCH_SYNC(tg);              wait for every child spawned into tg
//
// Rules, as for Cilk's spawn/sync: the group is declared, spawned into and
// synced in one function activation (ito's fast path needs exactly this);
// variables a child writes are the parent's own and are read only after the
// SYNC; the function does not return between a SPAWN and its SYNC. A child
// may run after the parent has gone on (TBB and OpenMP defer it; ito lets the
// parent's continuation be stolen), so a variable the parent changes after
// the spawn and the child reads must be listed in BENCH_SPAWN_COPY.
//
//   int bench::init_workers();   start the runtime, return its worker count
//   bench::run_root(f);          run f() where SPAWN may be used: on an ito
//                                thread, inside `omp parallel` + `single`, ...
//
// Worker counts come from each system's own variable: ITO_NUM_WORKERS,
// OMP_NUM_THREADS, and BENCH_WORKERS for TBB (global_control).
#ifndef BENCH_COMMON_SPAWN_HPP
#define BENCH_COMMON_SPAWN_HPP

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util.hpp"
#include <new>
#include <type_traits>
#include <utility>

#if (defined(SYS_serial) + defined(SYS_ito) + defined(SYS_ito_thread) + defined(SYS_tbb) + \
     defined(SYS_gomp) + defined(SYS_iomp)) != 1
#error "define exactly one of SYS_serial SYS_ito SYS_ito_thread SYS_tbb SYS_gomp SYS_iomp"
#endif

#define BENCH_STR2_(x) #x
#define BENCH_STR_(x) BENCH_STR2_(x)
// (a, b) -> a, b: BENCH_SPAWN_COPY's variable list inside a capture list or clause
#define BENCH_UNPAREN_(...) __VA_ARGS__

namespace bench {

[[noreturn]] inline void die(const char *what, int err) {
  std::fprintf(stderr, "bench: %s failed: %s (%d)\n", what, std::strerror(err), err);
  std::exit(3);
}

// A positive integer from the environment, or 0 if unset or malformed.
inline int env_workers(const char *name) {
  const char *s = std::getenv(name);
  if (!s || !*s) return 0;
  char *end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (*end || v <= 0 || v > 1 << 20) {
    std::fprintf(stderr, "bench: ignoring %s=%s\n", name, s);
    return 0;
  }
  return static_cast<int>(v);
}

}  // namespace bench

/* ======================================================================== */
#if defined(SYS_serial)
#define BENCH_SYSTEM "serial"

namespace bench {
struct serial_group {};
inline int init_workers() { return 1; }
template <class F>
void run_root(F &&f) {
  f();
}
}  // namespace bench

#define BENCH_TASK_GROUP(tg) [[maybe_unused]] bench::serial_group tg
#define BENCH_SPAWN(tg, ...) \
  do {                       \
    __VA_ARGS__;             \
  } while (0)
#define BENCH_SPAWN_COPY(tg, vars, ...) BENCH_SPAWN(tg, __VA_ARGS__)
#define BENCH_SYNC(tg) ((void)(tg))

/* ======================================================================== */
#elif defined(SYS_ito) || defined(SYS_ito_thread)
#include <ito/ito.hpp>

namespace bench {
inline int init_workers() {
  int rc = ito_init();
  if (rc) die("ito_init", rc);
  return ito_num_workers();
}

template <class F>
void *root_tramp_(void *p) {
  (*static_cast<F *>(p))();
  return nullptr;
}

// The root runs on an ito thread so that it is on a worker and can fork.
// Each run is an instance of the profiler's region "parallel" (under
// ITO_PROFILE; docs/profile.md), which bench/benches/profile.py reports.
template <class F>
void run_root(F &&f) {
  using Fn = std::remove_reference_t<F>;
  ito_thread_t t;
  ito_profile_begin("parallel");
  int rc = ito_create(&root_tramp_<Fn>, static_cast<void *>(&f), &t);
  if (rc) die("ito_create (root)", rc);
  rc = ito_join(t, nullptr);
  if (rc) die("ito_join (root)", rc);
  ito_profile_end("parallel");
}
}  // namespace bench

#if defined(SYS_ito)
#define BENCH_SYSTEM "ito"
   // ito::task_group's constructor, run() and wait() are always_inline, so the
   // frame they record is the benchmark function's own: the fast path.
#define BENCH_TASK_GROUP(tg) ito::task_group tg
#define BENCH_SPAWN(tg, ...) (tg).run([&]() { __VA_ARGS__; })
#define BENCH_SPAWN_COPY(tg, vars, ...) (tg).run([&, BENCH_UNPAREN_ vars]() { __VA_ARGS__; })
#define BENCH_SYNC(tg) (tg).wait()

#else
#define BENCH_SYSTEM "ito_thread"

namespace bench {
// A group of ito threads. Each child gets its own lightweight thread made by
// ito_create; SYNC joins them all. The closure lives inside the group (or on
// the heap when large or many), so it outlives the child.
class ito_thread_group {
 public:
  ito_thread_group() noexcept = default;
  ito_thread_group(const ito_thread_group &) = delete;
  ito_thread_group &operator=(const ito_thread_group &) = delete;
  ~ito_thread_group() { sync(); }

  template <class F>
  void spawn(F &&f) {
    using Fn = std::decay_t<F>;
    void *where;
    void (*destroy)(void *) = &destroy_<Fn>;
    heap_node *h = nullptr;
    if (n_inline_ < kInline && sizeof(Fn) <= kBuf && alignof(Fn) <= alignof(std::max_align_t)) {
      slot &s = inline_[n_inline_];
      where = s.buf;
      new (where) Fn(std::forward<F>(f));
      s.destroy = destroy;
      int rc = ito_create(&run_<Fn>, where, &s.t);
      if (rc) die("ito_create", rc);
      ++n_inline_;
    } else {
      h = static_cast<heap_node *>(::operator new(sizeof(heap_node) + sizeof(Fn)));
      where = reinterpret_cast<char *>(h) + sizeof(heap_node);
      new (where) Fn(std::forward<F>(f));
      h->destroy = destroy;
      h->next = heap_;
      int rc = ito_create(&run_<Fn>, where, &h->t);
      if (rc) die("ito_create", rc);
      heap_ = h;
    }
  }

  void sync() {
    for (int i = 0; i < n_inline_; i++) {
      int rc = ito_join(inline_[i].t, nullptr);
      if (rc) die("ito_join", rc);
      inline_[i].destroy(inline_[i].buf);
    }
    n_inline_ = 0;
    while (heap_node *h = heap_) {
      int rc = ito_join(h->t, nullptr);
      if (rc) die("ito_join", rc);
      heap_ = h->next;
      h->destroy(reinterpret_cast<char *>(h) + sizeof(heap_node));
      ::operator delete(h);
    }
  }

 private:
  static constexpr int kInline = 4;
  static constexpr std::size_t kBuf = 64;
  struct slot {
    alignas(std::max_align_t) unsigned char buf[kBuf];
    ito_thread_t t;
    void (*destroy)(void *);
  };
  struct alignas(std::max_align_t) heap_node {
    heap_node *next;
    ito_thread_t t;
    void (*destroy)(void *);
  };
  template <class Fn>
  static void *run_(void *p) {
    (*static_cast<Fn *>(p))();
    return nullptr;
  }
  template <class Fn>
  static void destroy_(void *p) {
    static_cast<Fn *>(p)->~Fn();
  }

  int n_inline_ = 0;
  heap_node *heap_ = nullptr;
  slot inline_[kInline];
};
}  // namespace bench

#define BENCH_TASK_GROUP(tg) bench::ito_thread_group tg
#define BENCH_SPAWN(tg, ...) (tg).spawn([&]() { __VA_ARGS__; })
#define BENCH_SPAWN_COPY(tg, vars, ...) (tg).spawn([&, BENCH_UNPAREN_ vars]() { __VA_ARGS__; })
#define BENCH_SYNC(tg) (tg).sync()
#endif

/* ======================================================================== */
#elif defined(SYS_tbb)
#define BENCH_SYSTEM "tbb"
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_group.h>

#include <memory>

namespace bench {
// max_allowed_parallelism counts the calling thread, so it is the worker count.
inline int init_workers() {
  static std::unique_ptr<tbb::global_control> gc;
  int w = env_workers("BENCH_WORKERS");
  if (w == 0) w = tbb::info::default_concurrency();
  gc = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                             static_cast<std::size_t>(w));
  return static_cast<int>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
}
template <class F>
void run_root(F &&f) {
  f();
}
}  // namespace bench

#define BENCH_TASK_GROUP(tg) tbb::task_group tg
#define BENCH_SPAWN(tg, ...) (tg).run([&]() { __VA_ARGS__; })
#define BENCH_SPAWN_COPY(tg, vars, ...) (tg).run([&, BENCH_UNPAREN_ vars]() { __VA_ARGS__; })
#define BENCH_SYNC(tg) (tg).wait()

/* ======================================================================== */
#elif defined(SYS_gomp) || defined(SYS_iomp)
#if defined(SYS_gomp)
#define BENCH_SYSTEM "gomp"
#else
#define BENCH_SYSTEM "iomp"
#endif
#if !defined(_OPENMP)
#error "SYS_gomp / SYS_iomp need OpenMP enabled (-fopenmp)"
#endif
#include <omp.h>

namespace bench {
struct omp_group {};
inline int init_workers() { return omp_get_max_threads(); }
// The team is made once per root; one thread runs f, the others take tasks.
template <class F>
void run_root(F &&f) {
  F &fr = f;
#pragma omp parallel
  {
#pragma omp single
    fr();
  }
}
}  // namespace bench

// default(shared): the child writes the parent's variables, as in Cilk
// (an orphaned task would otherwise get firstprivate copies).
#define BENCH_TASK_GROUP(tg) [[maybe_unused]] bench::omp_group tg
#define BENCH_SPAWN(tg, ...)                             \
  do {                                                   \
    _Pragma("omp task default(shared)") { __VA_ARGS__; } \
  } while (0)
// firstprivate: the listed variables are copied when the task is created.
#define BENCH_SPAWN_COPY(tg, vars, ...)                                               \
  do {                                                                                \
    _Pragma(BENCH_STR_(omp task default(shared) firstprivate(BENCH_UNPAREN_ vars))) { \
      __VA_ARGS__;                                                                    \
    }                                                                                 \
  } while (0)
#define BENCH_SYNC(tg) _Pragma("omp taskwait")

#endif

namespace bench {
// Seconds one call of f takes. f hides its argument (opaque) and keeps its
// result (keep) inside the timed region, so neither is optimised away.
template <class F>
double seconds(F &&f) {
  double t0 = now_s();
  f();
  return now_s() - t0;
}
// The same, on the runtime's root thread (where SPAWN may be used).
template <class F>
double seconds_on_root(F &&f) {
  double t = 0;
  run_root([&] { t = seconds(f); });
  return t;
}
}  // namespace bench

#endif  // BENCH_COMMON_SPAWN_HPP
