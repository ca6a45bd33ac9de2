// ito: header-only C++17 API over the C ABI in ito.h.
#ifndef ITO_ITO_HPP
#define ITO_ITO_HPP

#include <ito/ito.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <stdexcept>
#include <atomic>
#include <initializer_list>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__GNUC__)
#define ITO_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ITO_ALWAYS_INLINE inline
#endif

namespace ito {

namespace detail {
// Runs f, returning what it threw. Not inlined: its handler frame is on the
// stack the caller runs on, so an exception never unwinds through a forking
// frame between run() and wait() (see docs/lazy-tasks.md).
template <class F>
__attribute__((noinline)) std::exception_ptr call_catching(F &f) noexcept {
  try {
    f();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}
}  // namespace detail

// A dependence of a task run by task_group::run(deps, f): the task starts
// only after every earlier task of the same group that names the same
// address with a conflicting kind has finished (in after out/inout; out and
// inout after in, out and inout), as OpenMP's depend clause.
//
// With more than one NUMA node in use, a task with dependences starts on
// the node that holds most of the bytes it names (out and inout counted
// double; docs/numa.md): in(x) names sizeof(x) bytes, in(p, n) the n
// objects from p (matched with other dependences by p alone, as OpenMP
// matches array sections by their start).
enum class dep_kind { in = 1, out = 2, inout = 3 };
struct dep {
  const void *addr;
  dep_kind kind;
  std::size_t size;
};
template <class T>
constexpr dep in(const T &x) noexcept {
  return {static_cast<const void *>(&x), dep_kind::in, sizeof(T)};
}
template <class T>
constexpr dep out(T &x) noexcept {
  return {static_cast<const void *>(&x), dep_kind::out, sizeof(T)};
}
template <class T>
constexpr dep inout(T &x) noexcept {
  return {static_cast<const void *>(&x), dep_kind::inout, sizeof(T)};
}
template <class T>
constexpr dep in(const T *p, std::size_t n) noexcept {
  return {static_cast<const void *>(p), dep_kind::in, n * sizeof(T)};
}
template <class T>
constexpr dep out(T *p, std::size_t n) noexcept {
  return {static_cast<const void *>(p), dep_kind::out, n * sizeof(T)};
}
template <class T>
constexpr dep inout(T *p, std::size_t n) noexcept {
  return {static_cast<const void *>(p), dep_kind::inout, n * sizeof(T)};
}

// A hint for task_group::run(near(p, bytes), f): run f near these bytes
// (on their NUMA node, with more than one in use).
struct place_hint {
  const void *addr;
  std::size_t size;
};
inline place_hint near(const void *p, std::size_t bytes = 1) noexcept { return {p, bytes}; }
// A hint for task_group::run(on_node(k), f): run f on NUMA node k (first
// touch of memory that is to live there, docs/numa.md).
struct node_hint {
  int node;
};
inline node_hint on_node(int node) noexcept { return {node}; }

// NUMA memory (docs/numa.md): ito_numa_* in C++ form.
namespace numa {
inline int num_nodes() noexcept { return ito_numa_num_nodes(); }
inline int node() noexcept { return ito_numa_node(); }
inline int node_of(const void *p) noexcept { return ito_numa_node_of(p); }
// The node of memory a task with these dependences works on (-1: unknown).
inline int node_for(std::initializer_list<dep> deps) {
  std::vector<ito_access> a;
  a.reserve(deps.size());
  for (const dep &d : deps) a.push_back({d.addr, d.size, static_cast<int>(d.kind)});
  return ito_numa_node_for(a.data(), static_cast<int>(a.size()));
}
// T objects on one node, interleaved, or block-cyclic (blocks of `block`
// objects over the first `nodes` nodes); std::bad_alloc when it fails.
template <class T>
T *alloc_on(std::size_t n, int node) {
  void *p = ito_numa_alloc(n * sizeof(T), node);
  if (!p) throw std::bad_alloc();
  return static_cast<T *>(p);
}
template <class T>
T *alloc_interleaved(std::size_t n) {
  void *p = ito_numa_alloc_interleaved(n * sizeof(T));
  if (!p) throw std::bad_alloc();
  return static_cast<T *>(p);
}
template <class T>
T *alloc_blocked(std::size_t n, std::size_t block, int nodes) {
  void *p = ito_numa_alloc_blocked(n * sizeof(T), block * sizeof(T), nodes);
  if (!p) throw std::bad_alloc();
  return static_cast<T *>(p);
}
template <class T>
void free(T *p, std::size_t n) noexcept {
  ito_numa_free(p, n * sizeof(T));
}
}  // namespace numa

namespace detail {
// What a task with dependences defers to its end (this_task::defer).
struct deferred {
  std::vector<std::function<void()>> waits;
};
// The lightweight thread's key that points at its task's `deferred`
// while a task with dependences runs on it.
inline ito_key_t deferred_key() {
  static const ito_key_t k = [] {
    ito_key_t key;
    if (ito_key_create(&key, nullptr) != 0) std::terminate();
    return key;
  }();
  return k;
}
}  // namespace detail

namespace this_task {
// Called from the function of a task started by task_group::run(deps, f):
// w runs after f has returned (or thrown), and the task completes (its
// successors start) only when w returns. The MPI layer's
// ito::mpi::iwait is this with a wait for a request (TAMPI's Iwait).
// Outside such a task: std::logic_error.
inline void defer(std::function<void()> w) {
  auto *d = static_cast<detail::deferred *>(ito_getspecific(detail::deferred_key()));
  if (!d) throw std::logic_error("ito::this_task::defer: not inside a task with dependences");
  d->waits.push_back(std::move(w));
}
}  // namespace this_task

namespace detail {
// One task with dependences (docs/api.md, "Dependences"). npred counts the
// predecessors not done plus one for the creator while it adds edges;
// whoever brings it to zero calls start. A done node takes no more edges.
struct dep_node {
  std::atomic<int> npred{1};
  std::atomic<int> refs{1};  // the task, and table entries naming it
  std::atomic_flag lock = ATOMIC_FLAG_INIT;
  bool done = false;
  std::vector<dep_node *> succ;
  void (*start)(dep_node *) = nullptr;  // spawns the task (task_group::start_dep)
  void *box = nullptr;                  // the task's closure, for start
  int node = -2;                        // its data's node (-1: unknown; -2: one node in use)

  void acquire() noexcept {
    while (lock.test_and_set(std::memory_order_acquire)) ito_yield();
  }
  void release() noexcept { lock.clear(std::memory_order_release); }
  void unref() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Adds the edge pred -> this unless pred is done (or this itself).
  void after(dep_node *pred) {
    if (pred == this) return;
    pred->acquire();
    if (!pred->done) {
      pred->succ.push_back(this);
      npred.fetch_add(1, std::memory_order_relaxed);
    }
    pred->release();
  }
  // One predecessor (or the creator) is done with this node.
  void predecessor_done() {
    if (npred.fetch_sub(1, std::memory_order_acq_rel) == 1) start(this);
  }
  // The task finished: its successors lose a predecessor.
  void finish() {
    acquire();
    done = true;
    std::vector<dep_node *> s = std::move(succ);
    release();
    for (dep_node *n : s) n->predecessor_done();
    unref();
  }
};

// The last out/inout task of each address and the in tasks since.
class dep_table {
 public:
  dep_table() = default;
  dep_table(const dep_table &) = delete;
  dep_table &operator=(const dep_table &) = delete;
  ~dep_table() {
    for (auto &kv : map_) {
      if (kv.second.last_out) kv.second.last_out->unref();
      for (dep_node *r : kv.second.readers) r->unref();
    }
  }
  dep_node *add(std::initializer_list<dep> deps) {
    dep_node *n = new dep_node;
    if (numa_ < 0) numa_ = ito_numa_num_nodes() > 1;
    if (numa_) n->node = numa::node_for(deps);
    for (const dep &d : deps) {
      entry &e = map_[d.addr];
      if (d.kind == dep_kind::in) {
        if (e.last_out) n->after(e.last_out);
        n->refs.fetch_add(1, std::memory_order_relaxed);
        e.readers.push_back(n);
        continue;
      }
      if (!e.readers.empty()) {
        for (dep_node *r : e.readers) {
          n->after(r);
          r->unref();
        }
        e.readers.clear();
      } else if (e.last_out) {
        n->after(e.last_out);
      }
      if (e.last_out) e.last_out->unref();
      n->refs.fetch_add(1, std::memory_order_relaxed);
      e.last_out = n;
    }
    return n;
  }

 private:
  struct entry {
    dep_node *last_out = nullptr;
    std::vector<dep_node *> readers;
  };
  std::unordered_map<const void *, entry> map_;
  int numa_ = -1;  // more than one node in use (asked once)
};
}  // namespace detail

inline int num_workers() { return ito_num_workers(); }
inline int worker_id() { return ito_worker_id(); }

// The profiler (ITO_PROFILE; docs/profile.md).
namespace profile {
// A tagged region from construction to the end of the scope. Without
// ITO_PROFILE it does nothing; a bad tag (empty, 64 bytes or more, or a
// tag already open) throws std::invalid_argument.
class region {
 public:
  explicit region(const char *tag) : tag_(tag) { check(ito_profile_begin(tag)); }
  ~region() { ito_profile_end(tag_); }
  region(const region &) = delete;
  region &operator=(const region &) = delete;

 private:
  static void check(int rc) {
    if (rc == EINVAL) throw std::invalid_argument("ito::profile::region: bad or open tag");
    if (rc == ENOSPC) throw std::length_error("ito::profile::region: more than 64 tags");
  }
  const char *tag_;
};
// The figures of region tag, or of the run for nullptr or "". Throws
// std::runtime_error without ITO_PROFILE, std::out_of_range for a tag
// never ended.
inline ito_profile get(const char *tag = nullptr) {
  ito_profile f;
  int rc = ito_profile_get(tag, &f);
  if (rc == ENOTSUP) throw std::runtime_error("ito::profile::get: ITO_PROFILE is not set");
  if (rc == ENOENT) throw std::out_of_range("ito::profile::get: no region of that tag ended");
  return f;
}
}  // namespace profile

// A group of child tasks joined by wait(). Children run child-first on the
// caller's stack (lazy task creation) when run() is called in the function
// that constructed the group; from any other function run() still works,
// through a slower path that gives the child its own thread. An exception
// thrown by a child is rethrown by wait() (the first one, if several).
//
// Rules of the fast path (checked where possible, see docs/lazy-tasks.md):
// the constructing function must not return, and no exception may escape it,
// between a run() and the matching wait().
class task_group {
 public:
  ITO_ALWAYS_INLINE task_group() noexcept : error_(nullptr), deps_(nullptr) {
    ito_tg_init_inline_(&tg_, __builtin_frame_address(0));
  }
  task_group(const task_group &) = delete;
  task_group &operator=(const task_group &) = delete;
  ITO_ALWAYS_INLINE ~task_group() noexcept(false) {
    if (ito_tg_busy_(&tg_)) ito_tg_join_(&tg_, __builtin_frame_address(0));
    delete deps_;
    if (error_) rethrow_error(!std::uncaught_exceptions());
  }

  // Runs f as a child once the earlier children of this group it depends on
  // (by deps: ito::in(x), ito::out(x), ito::inout(x)) have finished. A child
  // that throws still counts as finished for its successors. Children with
  // dependences get a thread of their own (they are meant to be coarse);
  // run(deps, ...) must be called by one thread at a time for a group.
  template <class F>
  void run(std::initializer_list<dep> deps, F &&f) {
    using B = dep_box<std::decay_t<F>>;
    if (!deps_) deps_ = new detail::dep_table;
    detail::dep_node *n = deps_->add(deps);
    n->box = new B{std::forward<F>(f), n, this};
    n->start = &start_dep<B>;
    n->predecessor_done();  // the creator's unit: starts it if nothing comes before
  }

  // Runs f as a child, a thread of its own, on the NUMA node of the hint's
  // bytes: at once when that is the caller's node, else queued there. With
  // one node in use, or bytes on no known node, it starts as a child of
  // run(f) started from another function does.
  template <class F>
  void run(place_hint h, F &&f) {
    using Fn = std::decay_t<F>;
    struct hbox {
      Fn fn;
      task_group *g;
    };
    ito_access a{h.addr, h.size, ITO_ACCESS_IN};
    int node = ito_numa_num_nodes() > 1 ? ito_numa_node_for(&a, 1) : -1;
    hbox *b = new hbox{std::forward<F>(f), this};
    if (node < 0)
      ito_tg_spawn_(&tg_, &invoke_heap<hbox>, b, 0);
    else
      ito_tg_spawn_node_(&tg_, &invoke_heap<hbox>, b, 0, node);
  }

  // Runs f as a child, a thread of its own, on a worker of NUMA node
  // h.node (queued there unless that is the caller's node); with one node
  // in use it starts as run(near) does. A node out of range throws
  // std::out_of_range.
  template <class F>
  void run(node_hint h, F &&f) {
    using Fn = std::decay_t<F>;
    struct hbox {
      Fn fn;
      task_group *g;
    };
    int nodes = ito_numa_num_nodes();
    if (h.node < 0 || h.node >= nodes)
      throw std::out_of_range("ito::task_group::run(on_node(k)): no such NUMA node");
    hbox *b = new hbox{std::forward<F>(f), this};
    if (nodes == 1)
      ito_tg_spawn_(&tg_, &invoke_heap<hbox>, b, 0);
    else
      ito_tg_spawn_node_(&tg_, &invoke_heap<hbox>, b, 0, h.node);
  }

  template <class F>
  ITO_ALWAYS_INLINE void run(F &&f) {
    using Fn = std::decay_t<F>;
    if constexpr (std::is_trivially_copyable_v<Fn> && sizeof(Fn) <= 240) {
      // The runtime copies the closure before the continuation can be stolen.
      if constexpr (sizeof(Fn) <= 2 * sizeof(std::uintptr_t) &&
                    alignof(Fn) <= alignof(std::uintptr_t)) {
        if (tg_.home_fp == __builtin_frame_address(0)) {
          // Small closures travel in registers: nothing is copied through memory.
          std::uintptr_t w[2] = {0, 0};
          Fn c{std::forward<F>(f)};
          std::memcpy(w, &c, sizeof(Fn));
          ito_tg_fork_r2_(&tg_, &invoke_regs<Fn>, w[0], w[1]);
          return;
        }
      }
      constexpr bool words = sizeof(Fn) % 8 == 0 && alignof(Fn) >= 8;
      if (tg_.home_fp == __builtin_frame_address(0) && words && sizeof(Fn) <= 32) {
        // The sized entries hand the child its group: the copy is the closure alone.
        Fn c{std::forward<F>(f)};
        if constexpr (sizeof(Fn) == 8)
          ito_tg_fork_w1_(&tg_, &invoke_sized<Fn>, &c);
        else if constexpr (sizeof(Fn) == 16)
          ito_tg_fork_w2_(&tg_, &invoke_sized<Fn>, &c);
        else if constexpr (sizeof(Fn) == 24)
          ito_tg_fork_w3_(&tg_, &invoke_sized<Fn>, &c);
        else
          ito_tg_fork_w4_(&tg_, &invoke_sized<Fn>, &c);
        return;
      }
      struct box {
        Fn fn;
        task_group *g;
      };
      box b{std::forward<F>(f), this};
      if (tg_.home_fp == __builtin_frame_address(0))
        ito_tg_fork_(&tg_, &invoke_copy<box>, &b, sizeof(box));
      else
        ito_tg_spawn_(&tg_, &invoke_copy<box>, &b, sizeof(box));
    } else {
      // Closures that must be copied by their constructor go to the heap.
      struct hbox {
        Fn fn;
        task_group *g;
      };
      hbox *h = new hbox{std::forward<F>(f), this};
      if (tg_.home_fp == __builtin_frame_address(0))
        ito_tg_fork_(&tg_, &invoke_heap<hbox>, h, 0);
      else
        ito_tg_spawn_(&tg_, &invoke_heap<hbox>, h, 0);
    }
  }

  // Runs f in the caller, then waits for every child (TBB's run_and_wait).
  // An exception from f is rethrown after the children finished (before the
  // children's own, which are then dropped).
  template <class F>
  ITO_ALWAYS_INLINE void run_and_wait(F &&f) {
    std::exception_ptr e = detail::call_catching(f);
    if (ito_tg_busy_(&tg_)) ito_tg_join_(&tg_, __builtin_frame_address(0));
    if (e) {
      if (error_) rethrow_error(false);
      std::rethrow_exception(e);
    }
    if (error_) rethrow_error(true);
  }

  // Waits for every child; rethrows the first exception a child threw.
  ITO_ALWAYS_INLINE void wait() {
    if (ito_tg_busy_(&tg_)) ito_tg_join_(&tg_, __builtin_frame_address(0));
    if (error_) rethrow_error(true);
  }

 private:
  // A task with dependences, started by its creator or by its last
  // predecessor (itself a child, so the group cannot finish in between):
  // the slow path, a thread of its own. The node is finished even if fn
  // throws (invoke_heap records the exception).
  template <class Fn>
  struct dep_box {
    Fn fn_;
    detail::dep_node *n;
    task_group *g;
    void fn() {
      // The task completes (its successors may start) once fn_ returned
      // or threw and the waits it deferred (this_task::defer) are over.
      struct finish_guard {
        detail::dep_node *n;
        detail::deferred d;
        ~finish_guard() {
          ito_setspecific(detail::deferred_key(), nullptr);
          for (auto &w : d.waits) w();
          n->finish();
        }
      } guard{n, {}};
      ito_setspecific(detail::deferred_key(), &guard.d);
      fn_();
    }
  };
  template <class B>
  static void start_dep(detail::dep_node *n) {
    B *b = static_cast<B *>(n->box);
    if (n->node == -2)
      ito_tg_spawn_(&b->g->tg_, &invoke_heap<B>, b, 0);
    else
      ito_tg_spawn_node_(&b->g->tg_, &invoke_heap<B>, b, 0, n->node);
  }

  // The first exception a child threw; the others are dropped.
  __attribute__((noinline)) void record(std::exception_ptr e) noexcept {
    std::exception_ptr *p = new (std::nothrow) std::exception_ptr(std::move(e));
    std::exception_ptr *none = nullptr;
    if (!p) std::terminate();
    if (!__atomic_compare_exchange_n(&error_, &none, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      delete p;
  }
  __attribute__((noinline)) void rethrow_error(bool rethrow) {
    std::exception_ptr e = std::move(*error_);
    delete error_;
    error_ = nullptr;
    if (rethrow) std::rethrow_exception(e);
  }
  // tg_ is the first member of this standard-layout class.
  static task_group *of(ito_tg_t *tg) noexcept { return reinterpret_cast<task_group *>(tg); }
  template <class Fn>
  static void invoke_regs(std::uintptr_t w0, ito_tg_t *tg, std::uintptr_t w1) noexcept {
    std::uintptr_t w[2] = {w0, w1};
    alignas(Fn) unsigned char buf[sizeof(Fn)];
    std::memcpy(buf, w, sizeof(Fn));  // Fn is trivially copyable
    try {
      (*std::launder(reinterpret_cast<Fn *>(buf)))();
    } catch (...) {
      of(tg)->record(std::current_exception());
    }
  }
  template <class Fn>
  static void invoke_sized(void *p, ito_tg_t *tg) noexcept {
    try {
      (*static_cast<Fn *>(p))();
    } catch (...) {
      of(tg)->record(std::current_exception());
    }
  }
  template <class B>
  static void invoke_copy(void *p) noexcept {
    B *b = static_cast<B *>(p);
    try {
      b->fn();
    } catch (...) {
      b->g->record(std::current_exception());
    }
  }
  template <class B>
  static void invoke_heap(void *p) noexcept {
    B *b = static_cast<B *>(p);
    try {
      b->fn();
    } catch (...) {
      b->g->record(std::current_exception());
    }
    delete b;
  }

  ito_tg_t tg_;  // first: of() relies on it
  std::exception_ptr *error_;
  detail::dep_table *deps_;  // made by the first run(deps, f)
};
static_assert(std::is_standard_layout_v<task_group>, "task_group::of needs a standard layout");

namespace detail {
template <class F>
ITO_ALWAYS_INLINE void invoke_rest(task_group &tg, F &&f) {
  tg.run_and_wait(f);
}
template <class F, class G, class... Fs>
ITO_ALWAYS_INLINE void invoke_rest(task_group &tg, F &&f, G &&g, Fs &&...fs) {
  tg.run(std::forward<F>(f));
  invoke_rest(tg, std::forward<G>(g), std::forward<Fs>(fs)...);
}
}  // namespace detail

// Runs every callable in parallel and returns when all have returned.
template <class... Fs>
ITO_ALWAYS_INLINE void parallel_invoke(Fs &&...fs) {
  static_assert(sizeof...(Fs) >= 1, "parallel_invoke needs at least one callable");
  task_group tg;
  detail::invoke_rest(tg, std::forward<Fs>(fs)...);
}

namespace detail {
template <class I, class B>
void for_range(I first, I last, std::size_t grain, const B &body) {
  if (static_cast<std::size_t>(last - first) <= grain) {
    for (I i = first; i < last; ++i) body(i);
    return;
  }
  I mid = first + (last - first) / 2;
  task_group tg;
  tg.run([=, &body] { for_range(mid, last, grain, body); });
  tg.run_and_wait([=, &body] { for_range(first, mid, grain, body); });
}

template <class I, class T, class B, class C>
T reduce_range(I first, I last, std::size_t grain, const T &identity, const B &body,
               const C &combine) {
  if (static_cast<std::size_t>(last - first) <= grain) return body(first, last, identity);
  I mid = first + (last - first) / 2;
  T right = identity;
  T *rp = &right;
  T left = identity;
  T *lp = &left;
  task_group tg;
  tg.run([=, &identity, &body, &combine] {
    *rp = reduce_range(mid, last, grain, identity, body, combine);
  });
  tg.run_and_wait([=, &identity, &body, &combine] {
    *lp = reduce_range(first, mid, grain, identity, body, combine);
  });
  return combine(left, right);
}
}  // namespace detail

// Calls body(i) for every i in [first, last), splitting the range in halves
// down to at most grain iterations per leaf (grain 0 is taken as 1).
template <class I, class B>
void parallel_for(I first, I last, std::size_t grain, const B &body) {
  if (!(first < last)) return;
  detail::for_range(first, last, grain ? grain : 1, body);
}

namespace numa {
// Calls body(i) for every i in [first, last), each a task placed on NUMA
// node node_of(i) (task_group::run(on_node(k), ...)): the parallel loop
// that first-touches memory on the nodes it should live on (docs/numa.md).
// A node out of range throws std::out_of_range once the iterations started
// so far have finished.
template <class I, class N, class B>
void parallel_for(I first, I last, const N &node_of, const B &body) {
  task_group g;
  try {
    for (I i = first; i < last; ++i) g.run(on_node(node_of(i)), [&body, i] { body(i); });
  } catch (...) {
    g.wait();
    throw;
  }
  g.wait();
}
}  // namespace numa

// body(lo, hi, init) reduces [lo, hi) starting from init and returns the
// partial result; combine(a, b) merges two partial results. Leaves hold at
// most grain iterations (grain 0 is taken as 1).
template <class I, class T, class B, class C>
T parallel_reduce(I first, I last, std::size_t grain, const T &identity, const B &body,
                  const C &combine) {
  if (!(first < last)) return identity;
  return detail::reduce_range(first, last, grain ? grain : 1, identity, body, combine);
}

// Lightweight-thread mutex meeting the standard Lockable requirements.
class mutex {
 public:
  mutex() noexcept { ito_mutex_init(&m_); }
  ~mutex() { ito_mutex_destroy(&m_); }
  mutex(const mutex &) = delete;
  mutex &operator=(const mutex &) = delete;
  void lock() { ito_mutex_lock(&m_); }
  bool try_lock() { return ito_mutex_trylock(&m_) == 0; }
  void unlock() { ito_mutex_unlock(&m_); }
  ito_mutex_t *native_handle() { return &m_; }

 private:
  ito_mutex_t m_;
};

class condition_variable {
 public:
  condition_variable() noexcept { ito_cond_init(&c_); }
  ~condition_variable() { ito_cond_destroy(&c_); }
  condition_variable(const condition_variable &) = delete;
  condition_variable &operator=(const condition_variable &) = delete;
  void notify_one() noexcept { ito_cond_signal(&c_); }
  void notify_all() noexcept { ito_cond_broadcast(&c_); }
  void wait(std::unique_lock<mutex> &lk) { ito_cond_wait(&c_, lk.mutex()->native_handle()); }
  template <class P>
  void wait(std::unique_lock<mutex> &lk, P pred) {
    while (!pred()) wait(lk);
  }
  // Timed waits: steady_clock deadlines wait on CLOCK_MONOTONIC,
  // system_clock ones on CLOCK_REALTIME; other clocks are converted to
  // steady_clock at the call.
  template <class Clock, class Duration>
  std::cv_status wait_until(std::unique_lock<mutex> &lk,
                            const std::chrono::time_point<Clock, Duration> &t) {
    using namespace std::chrono;
    clockid_t clk = CLOCK_MONOTONIC;
    nanoseconds ns;
    if constexpr (std::is_same_v<Clock, system_clock>) {
      clk = CLOCK_REALTIME;
      ns = duration_cast<nanoseconds>(t.time_since_epoch());
    } else if constexpr (std::is_same_v<Clock, steady_clock>) {
      ns = duration_cast<nanoseconds>(t.time_since_epoch());
    } else {
      ns =
          duration_cast<nanoseconds>((steady_clock::now() + (t - Clock::now())).time_since_epoch());
    }
    if (ns.count() < 0) ns = nanoseconds(0);
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(ns.count() / 1000000000);
    ts.tv_nsec = static_cast<long>(ns.count() % 1000000000);
    int rc = ito_cond_clockwait(&c_, lk.mutex()->native_handle(), clk, &ts);
    return rc == ETIMEDOUT ? std::cv_status::timeout : std::cv_status::no_timeout;
  }
  template <class Clock, class Duration, class P>
  bool wait_until(std::unique_lock<mutex> &lk, const std::chrono::time_point<Clock, Duration> &t,
                  P pred) {
    while (!pred())
      if (wait_until(lk, t) == std::cv_status::timeout) return pred();
    return true;
  }
  template <class Rep, class Period>
  std::cv_status wait_for(std::unique_lock<mutex> &lk,
                          const std::chrono::duration<Rep, Period> &d) {
    return wait_until(lk, std::chrono::steady_clock::now() + d);
  }
  template <class Rep, class Period, class P>
  bool wait_for(std::unique_lock<mutex> &lk, const std::chrono::duration<Rep, Period> &d, P pred) {
    return wait_until(lk, std::chrono::steady_clock::now() + d, std::move(pred));
  }

 private:
  ito_cond_t c_;
};

namespace this_thread {
// The calling thread sleeps; an ito thread's worker runs other work meanwhile.
template <class Rep, class Period>
void sleep_for(const std::chrono::duration<Rep, Period> &d) {
  using namespace std::chrono;
  nanoseconds ns = duration_cast<nanoseconds>(d);
  if (ns.count() <= 0) return;
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(ns.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(ns.count() % 1000000000);
  ito_nanosleep(&ts);
}
inline void yield() { ito_yield(); }
}  // namespace this_thread

}  // namespace ito

#endif
