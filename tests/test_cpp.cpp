// The C++ API (ito.hpp): task_group, parallel_invoke, parallel_for,
// parallel_reduce, exceptions, ito::mutex and ito::condition_variable.
#include <ito/ito.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "check.h"

// Under ThreadSanitizer every fork gives its child a lightweight thread of
// its own (docs/fibers.md) and costs microseconds: the big runs (fib, the
// million-element parallel_for and parallel_reduce) are 10 times smaller
// there, so that the test finishes on a loaded machine of 2 cores with a
// wide margin (105 s of its 120 s otherwise). What they check is the same.
#if defined(__SANITIZE_THREAD__)
#define CPP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CPP_TSAN 1
#endif
#endif
#ifdef CPP_TSAN
static const long kBig = 100000;  // parallel_for's n; parallel_reduce's is kBig + 3
static const int kFib = 22;
#else
static const long kBig = 1000000;
static const int kFib = 27;
#endif

static long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

static long fib(int n) {
  if (n < 2) return n;
  long x = -1;
  ito::task_group tg;
  tg.run([&x, n] { x = fib(n - 1); });
  long y = fib(n - 2);
  tg.wait();
  return x + y;
}

static void test_fib() {
  CHECK_EQ(fib(kFib), fib_serial(kFib));
  CHECK_EQ(fib(kFib), kFib == 27 ? 196418 : 17711);
}

static void test_parallel_invoke() {
  int a = 0, b = 0, c = 0, d = 0, e = 0;
  ito::parallel_invoke([&] { a = 1; }, [&] { b = 2; });
  CHECK(a == 1 && b == 2);
  long f1 = 0, f2 = 0, f3 = 0;
  ito::parallel_invoke([&] { f1 = fib(20); }, [&] { f2 = fib(21); }, [&] { f3 = fib(22); });
  CHECK_EQ(f1, fib_serial(20));
  CHECK_EQ(f2, fib_serial(21));
  CHECK_EQ(f3, fib_serial(22));
  a = b = 0;
  ito::parallel_invoke([&] { a = 11; }, [&] { b = 12; }, [&] { c = 13; }, [&] { d = 14; },
                       [&] { e = 15; });
  CHECK(a == 11 && b == 12 && c == 13 && d == 14 && e == 15);
  int solo = 0;
  ito::parallel_invoke([&] { solo = 5; });
  CHECK_EQ(solo, 5);
}

static void test_parallel_for() {
  const long n = kBig;
  std::unique_ptr<std::atomic<int>[]> hits(new std::atomic<int>[n]);
  for (std::size_t grain : {std::size_t(1), std::size_t(7), std::size_t(1000)}) {
    for (long i = 0; i < n; i++) hits[i].store(0, std::memory_order_relaxed);
    std::atomic<long> calls{0};
    ito::parallel_for(0L, n, grain, [&](long i) {
      hits[i].fetch_add(1, std::memory_order_relaxed);
      calls.fetch_add(1, std::memory_order_relaxed);
    });
    CHECK_EQ(calls.load(), n);
    for (long i = 0; i < n; i++)
      if (hits[i].load(std::memory_order_relaxed) != 1) {
        fprintf(stderr, "grain %zu: index %ld written %d times\n", grain, i, hits[i].load());
        CHECK(!"every index written exactly once");
      }
  }
  // Empty and one-element ranges; grain 0 means 1.
  int touched = 0;
  ito::parallel_for(5, 5, 1, [&](int) { touched++; });
  CHECK_EQ(touched, 0);
  ito::parallel_for(5, 6, 0, [&](int i) { touched += i; });
  CHECK_EQ(touched, 5);
}

static void test_parallel_reduce() {
  for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(1000), std::uint64_t(kBig + 3)}) {
    for (std::size_t grain : {std::size_t(0), std::size_t(1), std::size_t(13), std::size_t(4096),
                              std::size_t(1) << 30}) {
      if (n > 100000 && grain < 13) continue;  // 2M tasks per run is plenty below
      std::uint64_t sum = ito::parallel_reduce(
          std::uint64_t(0), n, grain, std::uint64_t(0),
          [](std::uint64_t lo, std::uint64_t hi, std::uint64_t init) {
            for (std::uint64_t i = lo; i < hi; i++) init += i;
            return init;
          },
          [](std::uint64_t x, std::uint64_t y) { return x + y; });
      CHECK_EQ(sum, n * (n - 1) / 2);
    }
  }
  std::uint64_t big = kBig + 3;
  std::uint64_t s = ito::parallel_reduce(
      std::uint64_t(0), big, 1, std::uint64_t(0),
      [](std::uint64_t lo, std::uint64_t hi, std::uint64_t init) {
        for (std::uint64_t i = lo; i < hi; i++) init += i;
        return init;
      },
      [](std::uint64_t x, std::uint64_t y) { return x + y; });
  CHECK_EQ(s, big * (big - 1) / 2);
  // Empty range returns the identity.
  int e = ito::parallel_reduce(
      3, 3, 1, 77, [](int, int, int init) { return init + 1; }, [](int x, int y) { return x + y; });
  CHECK_EQ(e, 77);
}

static __attribute__((noinline)) void throw_from_helper(ito::task_group &tg) {
  tg.run([] { throw std::out_of_range("slow path"); });
}

static void test_exceptions() {
  // One child throws; wait() rethrows it.
  {
    ito::task_group tg;
    int ok = 0;
    tg.run([] { throw std::runtime_error("child failed: 42"); });
    tg.run([&ok] { ok = 1; });
    bool caught = false;
    try {
      tg.wait();
    } catch (const std::runtime_error &ex) {
      caught = true;
      CHECK(std::string(ex.what()) == "child failed: 42");
    }
    CHECK(caught);
    CHECK_EQ(ok, 1);
    // Reuse after a failed wait: no stale exception, new children run.
    long r = 0;
    tg.run([&r] { r = fib(15); });
    tg.wait();
    CHECK_EQ(r, fib_serial(15));
  }
  // Two children throw: exactly one exception comes out.
  for (int rep = 0; rep < 20; rep++) {
    ito::task_group tg;
    std::atomic<int> ran{0};
    tg.run([&ran] {
      ran++;
      throw std::runtime_error("first");
    });
    tg.run([&ran] {
      ran++;
      throw std::runtime_error("second");
    });
    int caught = 0;
    try {
      tg.wait();
    } catch (const std::runtime_error &ex) {
      caught++;
      std::string m = ex.what();
      CHECK(m == "first" || m == "second");
    }
    CHECK_EQ(caught, 1);
    CHECK_EQ(ran.load(), 2);
    tg.wait();  // nothing pending, nothing rethrown
  }
  // A throwing child that took the slow path.
  {
    ito::task_group tg;
    throw_from_helper(tg);
    bool caught = false;
    try {
      tg.wait();
    } catch (const std::out_of_range &ex) {
      caught = std::string(ex.what()) == "slow path";
    }
    CHECK(caught);
  }
}

// Exceptions from the bodies of the algorithms, including the part each
// level runs inline, come out of the call after every child has finished.
static void test_algorithm_exceptions() {
  for (int round = 0; round < 20; round++) {
    std::atomic<long> visited{0};
    const long n = 200000, bad = (round * 7919) % n;
    bool caught = false;
    try {
      ito::parallel_for(0L, n, 64, [&](long i) {
        visited.fetch_add(1, std::memory_order_relaxed);
        if (i == bad) throw std::runtime_error("bad index");
      });
    } catch (const std::runtime_error &ex) {
      caught = std::string(ex.what()) == "bad index";
    }
    CHECK(caught);
    CHECK(visited.load() >= 1 && visited.load() <= n);
  }
  bool caught = false;
  try {
    ito::parallel_reduce(
        0L, 100000L, 100, 0L,
        [](long lo, long hi, long acc) {
          for (long i = lo; i < hi; i++) {
            if (i == 31337) throw std::logic_error("reduce");
            acc += i;
          }
          return acc;
        },
        [](long a, long b) { return a + b; });
  } catch (const std::logic_error &ex) {
    caught = std::string(ex.what()) == "reduce";
  }
  CHECK(caught);
  // The last callable of parallel_invoke runs inline: its exception too.
  for (int which = 0; which < 3; which++) {
    std::atomic<int> ran{0};
    caught = false;
    try {
      ito::parallel_invoke(
          [&] {
            ran++;
            if (which == 0) throw std::runtime_error("0");
          },
          [&] {
            ran++;
            if (which == 1) throw std::runtime_error("1");
          },
          [&] {
            ran++;
            if (which == 2) throw std::runtime_error("2");
          });
    } catch (const std::runtime_error &ex) {
      caught = std::string(ex.what()) == std::to_string(which);
    }
    CHECK(caught);
    CHECK_EQ(ran.load(), 3);
  }
  // run_and_wait: the inline part's exception wins over a child's.
  {
    ito::task_group tg;
    std::atomic<int> child_done{0};
    tg.run([&] {
      fib(18);
      child_done = 1;
      throw std::runtime_error("child");
    });
    caught = false;
    try {
      tg.run_and_wait([&] {
        fib(16);
        throw std::runtime_error("inline");
      });
    } catch (const std::runtime_error &ex) {
      caught = std::string(ex.what()) == "inline";
    }
    CHECK(caught);
    CHECK_EQ(child_done.load(), 1);
  }
}

static void test_reuse() {
  ito::task_group tg;
  long total = 0;
  for (int round = 0; round < 50; round++) {
    long v[4] = {-1, -1, -1, -1};
    for (int i = 0; i < 4; i++) tg.run([&v, i, round] { v[i] = fib(10 + (i + round) % 6); });
    tg.wait();
    for (int i = 0; i < 4; i++) {
      CHECK_EQ(v[i], fib_serial(10 + (i + round) % 6));
      total += v[i];
    }
  }
  CHECK(total > 0);
}

// run() from a function other than the one that constructed the group.
static __attribute__((noinline)) void spawn_from_helper(ito::task_group &tg, long *out, int n) {
  for (int i = 0; i < n; i++) tg.run([out, i] { out[i] = fib(12 + i % 5); });
}

static void test_slow_path() {
  long out[30];
  for (long &x : out) x = -1;
  long mine = -1;
  {
    ito::task_group tg;
    tg.run([&mine] { mine = fib(20); });
    spawn_from_helper(tg, out, 15);
    spawn_from_helper(tg, out + 15, 15);
    tg.wait();
  }
  CHECK_EQ(mine, fib_serial(20));
  for (int i = 0; i < 15; i++) {
    CHECK_EQ(out[i], fib_serial(12 + i % 5));
    CHECK_EQ(out[15 + i], fib_serial(12 + i % 5));
  }
  // The destructor joins too (no explicit wait()).
  long late = -1;
  {
    ito::task_group tg;
    spawn_from_helper(tg, out, 3);
    tg.run([&late] { late = fib(18); });
  }
  CHECK_EQ(late, fib_serial(18));
  CHECK_EQ(out[2], fib_serial(14));
}

static void test_nontrivial_closures() {
  std::string s = "hello, lightweight threads";
  std::vector<int> v(1000);
  for (int i = 0; i < 1000; i++) v[i] = i;
  auto closure_check = [s, v](long *out) { *out = long(s.size()) * 1000000 + v[999] + v.size(); };
  static_assert(!std::is_trivially_copyable<decltype(closure_check)>::value, "not trivial");
  long results[8];
  {
    ito::task_group tg;
    for (int i = 0; i < 8; i++) {
      tg.run([s, v, i, &results] {
        long sum = 0;
        for (int x : v) sum += x;
        results[i] = sum + long(s.size()) + i;
      });
      // The closure was copied at run(): later changes do not reach it.
      s += "!";
      v.push_back(1);
    }
    tg.wait();
  }
  // Copy i saw 1000 + i elements (i of them 1) and a string of 26 + i chars.
  for (int i = 0; i < 8; i++) CHECK_EQ(results[i], 499526 + 3 * i);
  long r = 0;
  ito::parallel_invoke([&] { closure_check(&r); });
  CHECK_EQ(r, 26 * 1000000L + 999 + 1000);
}

static void test_mutex() {
  ito::mutex m;
  long counter = 0;
  ito::parallel_for(0, 200000, 16, [&](int) {
    std::lock_guard<ito::mutex> g(m);
    counter++;
  });
  CHECK_EQ(counter, 200000);
  CHECK(m.try_lock());
  CHECK(!m.try_lock());
  m.unlock();
}

struct channel {
  ito::mutex m;
  ito::condition_variable cv;
  int slot = 0;
  bool full = false, done = false;
};

static void *producer(void *p) {
  channel *ch = static_cast<channel *>(p);
  for (int i = 1; i <= 2000; i++) {
    std::unique_lock<ito::mutex> lk(ch->m);
    ch->cv.wait(lk, [ch] { return !ch->full; });
    ch->slot = i;
    ch->full = true;
    ch->cv.notify_all();
  }
  std::unique_lock<ito::mutex> lk(ch->m);
  ch->cv.wait(lk, [ch] { return !ch->full; });
  ch->done = true;
  ch->cv.notify_all();
  return nullptr;
}

static void *consumer(void *p) {
  channel *ch = static_cast<channel *>(p);
  long sum = 0;
  int expect = 1;
  for (;;) {
    std::unique_lock<ito::mutex> lk(ch->m);
    ch->cv.wait(lk, [ch] { return ch->full || ch->done; });
    if (!ch->full) break;
    CHECK_EQ(ch->slot, expect);  // in order, none lost, none duplicated
    expect++;
    sum += ch->slot;
    ch->full = false;
    ch->cv.notify_one();
  }
  return reinterpret_cast<void *>(static_cast<std::intptr_t>(sum));
}

static void test_condition_variable() {
  channel ch;
  ito_thread_t c, p;
  CHECK_EQ(ito_create(consumer, &ch, &c), 0);
  CHECK_EQ(ito_create(producer, &ch, &p), 0);
  void *r = nullptr;
  CHECK_EQ(ito_join(p, nullptr), 0);
  CHECK_EQ(ito_join(c, &r), 0);
  CHECK_EQ(reinterpret_cast<std::intptr_t>(r), 2000L * 2001 / 2);
}

// Timed waits on both clocks time out no earlier than their deadlines, a
// notified predicate wait returns true before its deadline, and sleep_for
// sleeps at least as long as asked.
static void *timed_cv_fn(void *) {
  using namespace std::chrono;
  ito::mutex m;
  ito::condition_variable cv;
  std::unique_lock<ito::mutex> lk(m);
  auto t0 = steady_clock::now();
  auto until = t0 + milliseconds(40);
  while (cv.wait_until(lk, until) == std::cv_status::no_timeout) {
  }
  CHECK(steady_clock::now() >= until);
  auto sys_until = system_clock::now() + milliseconds(20);
  CHECK(!cv.wait_until(lk, sys_until, [] { return false; }));
  CHECK(system_clock::now() >= sys_until);
  CHECK(!cv.wait_for(lk, milliseconds(10), [] { return false; }));
  CHECK(cv.wait_for(lk, milliseconds(10), [] { return true; }));
  lk.unlock();
  auto s0 = steady_clock::now();
  ito::this_thread::sleep_for(milliseconds(25));
  CHECK(steady_clock::now() - s0 >= milliseconds(25));
  return nullptr;
}

struct flag_box {
  ito::mutex m;
  ito::condition_variable cv;
  bool set = false;
};
static void *set_flag_fn(void *p) {
  auto *b = static_cast<flag_box *>(p);
  ito::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::lock_guard<ito::mutex> g(b->m);
  b->set = true;
  b->cv.notify_one();
  return nullptr;
}

static void test_timed_waits() {
  ito_thread_t t;
  CHECK_EQ(ito_create(timed_cv_fn, nullptr, &t), 0);
  CHECK_EQ(ito_join(t, nullptr), 0);
  flag_box b;
  CHECK_EQ(ito_create(set_flag_fn, &b, &t), 0);
  {
    std::unique_lock<ito::mutex> lk(b.m);
    CHECK(b.cv.wait_for(lk, std::chrono::seconds(30), [&] { return b.set; }));
  }
  CHECK_EQ(ito_join(t, nullptr), 0);
}

// task_group on a plain OS thread that is not a worker: every closure size
// (in registers, sized copies, heap) takes the path that gives each child a
// lightweight thread, and wait() blocks the OS thread.
static void test_from_plain_thread() {
  long results[3] = {0, 0, 0};
  std::thread th([&] {
    CHECK_EQ(ito_worker_id(), -1);
    long a = 0, b = 0, c = 0;
    int n = 20;
    std::string big(100, 'x');
    ito::task_group tg;
    tg.run([&a, n] { a = fib(n); });                      // two words: registers
    tg.run([&b, &a, n, m = 3L] { b = fib(n - 1) + m; });  // four words: sized copy
    tg.run([&c, big] { c = (long)big.size(); });          // not trivially copyable
    tg.wait();
    results[0] = a;
    results[1] = b;
    results[2] = c;
  });
  th.join();
  CHECK_EQ(results[0], fib_serial(20));
  CHECK_EQ(results[1], fib_serial(19) + 3);
  CHECK_EQ(results[2], 100L);
}

// Dependences: task_group::run(deps, f) orders children as OpenMP's depend.
static void test_dependences() {
  // an inout chain: each task must see the previous one's step
  {
    ito::task_group g;
    long value = 0, bad = 0;
    for (long i = 0; i < 2000; i++)
      g.run({ito::inout(value)}, [&value, &bad, i] {
        if (value != i) bad++;
        value = i + 1;
      });
    g.wait();
    CHECK_EQ(value, 2000);
    CHECK_EQ(bad, 0);
  }
  // writer, readers, writer: the readers see the first value, the second
  // writer waits for all of them
  for (int round = 0; round < 50; round++) {
    ito::task_group g;
    int v = 0;
    std::atomic<int> readers_ok{0}, readers_done{0};
    int seen_by_writer = -1;
    g.run({ito::out(v)}, [&] { v = 7; });
    for (int r = 0; r < 8; r++)
      g.run({ito::in(v)}, [&] {
        if (v == 7) readers_ok++;
        readers_done++;
      });
    g.run({ito::out(v)}, [&] {
      seen_by_writer = readers_done.load();
      v = 8;
    });
    g.wait();
    CHECK_EQ(readers_ok.load(), 8);
    CHECK_EQ(seen_by_writer, 8);
    CHECK_EQ(v, 8);
  }
  // a 2-D wavefront: cell (i, j) after (i-1, j) and (i, j-1)
  {
    constexpr int N = 24;
    static long cell[N][N];
    ito::task_group g;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        auto body = [i, j] {
          long up = i ? cell[i - 1][j] : 1, left = j ? cell[i][j - 1] : 1;
          cell[i][j] = (i && j) ? (up + left) % 1000003 : 1;
        };
        if (i && j)
          g.run({ito::in(cell[i - 1][j]), ito::in(cell[i][j - 1]), ito::out(cell[i][j])}, body);
        else if (i)
          g.run({ito::in(cell[i - 1][j]), ito::out(cell[i][j])}, body);
        else if (j)
          g.run({ito::in(cell[i][j - 1]), ito::out(cell[i][j])}, body);
        else
          g.run({ito::out(cell[i][j])}, body);
      }
    g.wait();
    long want[N][N];
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++)
        want[i][j] = (i && j) ? (want[i - 1][j] + want[i][j - 1]) % 1000003 : 1;
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) CHECK_EQ(cell[i][j], want[i][j]);
  }
  // a task that throws still releases its successors; wait() rethrows
  {
    ito::task_group g;
    int x = 0;
    bool after_ran = false, caught = false;
    g.run({ito::out(x)}, [] { throw std::runtime_error("dep task"); });
    g.run({ito::in(x)}, [&] { after_ran = true; });
    try {
      g.wait();
    } catch (const std::runtime_error &) {
      caught = true;
    }
    CHECK(caught);
    CHECK(after_ran);
  }
  // move-only closures
  {
    ito::task_group g;
    int x = 0;
    auto p = std::make_unique<int>(5);
    g.run({ito::out(x)}, [&x, q = std::move(p)] { x = *q; });
    g.wait();
    CHECK_EQ(x, 5);
  }
  puts("dependences: ok");
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // progress survives a crash
  test_from_plain_thread();
  test_fib();
  test_parallel_invoke();
  test_parallel_for();
  test_algorithm_exceptions();
  test_parallel_reduce();
  test_exceptions();
  test_reuse();
  test_slow_path();
  test_nontrivial_closures();
  test_mutex();
  test_condition_variable();
  test_timed_waits();
  test_dependences();
  puts("test_cpp: OK");
  return 0;
}
