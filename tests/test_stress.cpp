// Stress tests. "test_stress CASE" runs one case; ctest registers each case
// separately (some twice, with different ITO_NUM_WORKERS).
#include <ito/ito.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"

// Under ThreadSanitizer every fork gives its child a lightweight thread of
// its own and every switch changes ThreadSanitizer's context
// (docs/fibers.md): a fork costs it microseconds, a fork whose child blocks
// and needs a fresh context hundreds. "tree" and "mix" are sized smaller
// there (kTsan), so that their worst case on a loaded machine of 2 cores
// fits the ctest timeout 5 times over; what they check stays the same.
#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#ifdef STRESS_TSAN
static const bool kTsan = true;
#else
static const bool kTsan = false;
#endif

static void *iptr(std::intptr_t v) { return reinterpret_cast<void *>(v); }

static ito_thread_t spawn(void *(*fn)(void *), void *arg) {
  ito_thread_t t = 0;
  CHECK_EQ(ito_create(fn, arg, &t), 0);
  return t;
}

static std::intptr_t join(ito_thread_t t) {
  void *r = nullptr;
  CHECK_EQ(ito_join(t, &r), 0);
  return reinterpret_cast<std::intptr_t>(r);
}

// ---- millions of tiny tasks ----------------------------------------------
static std::atomic<long> leaves{0};

static void tree(int depth) {
  if (depth == 0) {
    leaves.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ito::task_group tg;
  tg.run([depth] { tree(depth - 1); });
  tree(depth - 1);
  tg.wait();
}

static long fib(int n) {
  if (n < 2) return n;
  long x = -1;
  ito::task_group tg;
  tg.run([&x, n] { x = fib(n - 1); });
  long y = fib(n - 2);
  tg.wait();
  return x + y;
}

static void case_tree() {
  // 4,194,304 leaves (4M tasks) and fib(30) (1.6M forks); under
  // ThreadSanitizer 262,144 leaves and fib(25) (250,000 forks), 16 times
  // fewer: 57 s of CPU with 8 workers on 2 cores otherwise.
  const int depth = kTsan ? 18 : 22;
  tree(depth);
  CHECK_EQ(leaves.load(), 1L << depth);
  CHECK_EQ(kTsan ? fib(25) : fib(30), kTsan ? 75025 : 832040);
}

// ---- random spawn/join trees --------------------------------------------
static std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static const int kMaxDepth = 13;

static int n_children(std::uint64_t h, int depth) {
  return depth >= kMaxDepth ? 0 : int(h % 5);  // 0..4
}

static std::uint64_t child_seed(std::uint64_t seed, int i) {
  return mix(seed ^ (0x1234567ULL * (i + 1)));
}

static std::uint64_t combine(std::uint64_t h, int depth, const std::uint64_t *r, int k) {
  std::uint64_t acc = h ^ std::uint64_t(depth);
  for (int i = 0; i < k; i++) acc = mix(acc * 31 + r[i]);  // order matters
  return acc;
}

static std::uint64_t node_serial(std::uint64_t seed, int depth, long *nodes) {
  ++*nodes;
  std::uint64_t h = mix(seed);
  int k = n_children(h, depth);
  std::uint64_t r[4];
  for (int i = 0; i < k; i++) r[i] = node_serial(child_seed(seed, i), depth + 1, nodes);
  return combine(h, depth, r, k);
}

static std::atomic<long> par_nodes{0};

static std::uint64_t node_par(std::uint64_t seed, int depth) {
  par_nodes.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t h = mix(seed);
  int k = n_children(h, depth);
  std::uint64_t r[4] = {0, 0, 0, 0};
  ito::task_group tg;
  // Sometimes the last child runs inline in the continuation.
  int spawned = ((h >> 20) & 1) ? k - 1 : k;
  for (int i = 0; i < spawned; i++)
    tg.run([&r, seed, depth, i] { r[i] = node_par(child_seed(seed, i), depth + 1); });
  if (spawned < k && k > 0) r[k - 1] = node_par(child_seed(seed, k - 1), depth + 1);
  tg.wait();
  return combine(h, depth, r, k);
}

static void case_random() {
  long total = 0;
  for (std::uint64_t s = 1; s <= 40; s++) {
    long nodes = 0;
    std::uint64_t want = node_serial(s * 7919, 0, &nodes);
    par_nodes = 0;
    std::uint64_t got = node_par(s * 7919, 0);
    CHECK_EQ(got, want);
    CHECK_EQ(par_nodes.load(), nodes);
    total += nodes;
  }
  printf("random trees: %ld nodes\n", total);
  CHECK(total > 100000);  // the trees are not trivially small
}

// ---- deep recursion --------------------------------------------------------
// Depth 100,000 with a task_group per level needs tens of MB of stack in one
// thread (more under ASan), so the chains run in an ito thread and the test
// is registered with ITO_STACK_SIZE=256M.
static const int kDepth = 100000;

static long chain_in_continuation(int d) {
  if (d == 0) return 0;
  long x = 0;
  ito::task_group tg;
  tg.run([&x, d] { x = d; });
  long r = chain_in_continuation(d - 1);
  tg.wait();
  return r + x;
}

static void chain_in_child(int d, long *out) {
  if (d == 0) {
    *out = 0;
    return;
  }
  long r = -1;
  ito::task_group tg;
  tg.run([&r, d] { chain_in_child(d - 1, &r); });
  tg.wait();
  *out = r + d;
}

static void *deep_fn(void *) {
  const long want = long(kDepth) * (kDepth + 1) / 2;
  CHECK_EQ(chain_in_continuation(kDepth), want);
  long got = -1;
  chain_in_child(kDepth, &got);
  CHECK_EQ(got, want);
  return iptr(1);
}

static void case_deep() { CHECK_EQ(join(spawn(deep_fn, nullptr)), 1); }

// ---- mutex stress ----------------------------------------------------------
static ito_mutex_t g_mu = ITO_MUTEX_INITIALIZER;
static long g_counter = 0;

static void *mutex_fn(void *) {
  for (int i = 0; i < 20000; i++) {
    CHECK_EQ(ito_mutex_lock(&g_mu), 0);
    long v = g_counter;
    if (i % 1000 == 0) ito_yield();  // hold the lock across a switch now and then
    g_counter = v + 1;
    CHECK_EQ(ito_mutex_unlock(&g_mu), 0);
  }
  return nullptr;
}

static void case_mutex() {
  std::vector<ito_thread_t> t(64);
  for (auto &x : t) x = spawn(mutex_fn, nullptr);
  for (auto x : t) join(x);
  CHECK_EQ(g_counter, 64L * 20000);
}

// ---- condition variable stress: bounded buffer --------------------------
namespace bb {
const int kProducers = 16, kConsumers = 16, kItems = 100000, kCap = 32;
ito_mutex_t mu = ITO_MUTEX_INITIALIZER;
ito_cond_t not_full = ITO_COND_INITIALIZER, not_empty = ITO_COND_INITIALIZER;
long buf[kCap];
int head = 0, count = 0, taken = 0;

void *producer(void *arg) {
  long id = reinterpret_cast<std::intptr_t>(arg);
  for (int i = 0; i < kItems / kProducers; i++) {
    long item = id * 1000000 + i;
    ito_mutex_lock(&mu);
    while (count == kCap) CHECK_EQ(ito_cond_wait(&not_full, &mu), 0);
    buf[(head + count) % kCap] = item;
    count++;
    CHECK_EQ(ito_cond_signal(&not_empty), 0);
    ito_mutex_unlock(&mu);
  }
  return nullptr;
}

struct result {
  long sum = 0, n = 0;
  std::uint64_t x = 0;
};

void *consumer(void *arg) {
  result *res = static_cast<result *>(arg);
  for (;;) {
    ito_mutex_lock(&mu);
    while (count == 0 && taken < kItems) CHECK_EQ(ito_cond_wait(&not_empty, &mu), 0);
    if (taken == kItems) {
      CHECK_EQ(ito_cond_broadcast(&not_empty), 0);  // release the others
      ito_mutex_unlock(&mu);
      return nullptr;
    }
    long item = buf[head];
    head = (head + 1) % kCap;
    count--;
    taken++;
    CHECK_EQ(ito_cond_signal(&not_full), 0);
    if (taken == kItems) CHECK_EQ(ito_cond_broadcast(&not_empty), 0);
    ito_mutex_unlock(&mu);
    res->sum += item;
    res->x ^= mix(std::uint64_t(item));
    res->n++;
  }
}
}  // namespace bb

static void case_cond() {
  using namespace bb;
  static_assert(kItems % kProducers == 0, "even split");
  long want_sum = 0;
  std::uint64_t want_x = 0;
  for (long p = 0; p < kProducers; p++)
    for (long i = 0; i < kItems / kProducers; i++) {
      want_sum += p * 1000000 + i;
      want_x ^= mix(std::uint64_t(p * 1000000 + i));
    }
  std::vector<result> res(kConsumers);
  std::vector<ito_thread_t> c(kConsumers), p(kProducers);
  for (int i = 0; i < kConsumers; i++) c[i] = spawn(consumer, &res[i]);
  for (int i = 0; i < kProducers; i++) p[i] = spawn(producer, iptr(i));
  for (auto t : p) join(t);
  for (auto t : c) join(t);
  long sum = 0, n = 0;
  std::uint64_t x = 0;
  for (auto &r : res) {
    sum += r.sum;
    n += r.n;
    x ^= r.x;
  }
  CHECK_EQ(n, kItems);
  CHECK_EQ(sum, want_sum);
  CHECK(x == want_x);
  CHECK_EQ(count, 0);
}

// ---- mix: threads using task groups whose children block on a mutex ------
static ito::mutex mix_mu;
static long mix_counter = 0;

// Under ThreadSanitizer a quarter of the work (fewer children, each of
// them a thread there that may block and need a fresh context): 26 s of
// CPU on 2 cores otherwise.
static const int kMixFor = kTsan ? 500 : 2000;
static const long kMixReduce = kTsan ? 25000 : 100000;
static const int kMixFib = kTsan ? 14 : 18;  // fib(14) = 377, fib(18) = 2584

static void *mix_fn(void *arg) {
  long id = reinterpret_cast<std::intptr_t>(arg);
  ito::parallel_for(0, kMixFor, 4, [id](int i) {
    std::lock_guard<ito::mutex> g(mix_mu);
    long v = mix_counter;
    if ((i + id) % 97 == 0) ito_yield();  // others block on mix_mu meanwhile
    mix_counter = v + 1;
  });
  long s = ito::parallel_reduce(
      0L, kMixReduce, 64, 0L,
      [](long lo, long hi, long init) {
        for (long i = lo; i < hi; i++) init += i;
        return init;
      },
      [](long a, long b) { return a + b; });
  CHECK_EQ(s, kMixReduce * (kMixReduce - 1) / 2);
  return iptr(fib(kMixFib) + id);
}

static void case_mix() {
  const int n = 8;
  std::vector<ito_thread_t> t(n);
  for (int i = 0; i < n; i++) t[i] = spawn(mix_fn, iptr(i));
  for (int i = 0; i < n; i++) CHECK_EQ(join(t[i]), (kTsan ? 377 : 2584) + i);
  CHECK_EQ(mix_counter, long(n) * kMixFor);
}

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // progress survives a crash
  struct {
    const char *name;
    void (*fn)();
  } cases[] = {{"tree", case_tree},   {"random", case_random}, {"deep", case_deep},
               {"mutex", case_mutex}, {"cond", case_cond},     {"mix", case_mix}};
  bool ran = false;
  for (auto &c : cases)
    if (argc < 2 || std::strcmp(argv[1], c.name) == 0) {
      c.fn();
      printf("test_stress %s: OK (%d workers)\n", c.name, ito_num_workers());
      ran = true;
    }
  CHECK(ran);
  return 0;
}
