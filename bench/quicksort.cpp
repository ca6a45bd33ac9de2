// Quicksort of N integers (the nested-OpenMP paper, figure 14): partition, spawn the left
// part, recurse on the right part, sync. Parts shorter than the cutoff are
// sorted serially with std::sort.
//
//   quicksort_<system> [n=16777216] [cutoff=2048] [reps=3]
//
// The input is the same fixed-seed pseudo-random sequence for every system
// and repetition (made before timing). Prints one CSV line per repetition:
//   system,workers,n,cutoff,rep,serial_s,parallel_s,ratio
// and exits nonzero with a message unless both results are sorted and are a
// permutation of the input (count, sum and sum of hashes).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/spawn.hpp"
#include "common/util.hpp"

namespace {

// Hoare partition of a[lo..hi] (inclusive) around the median of three, moved
// to a[lo]. Returns j with lo <= j < hi: a[lo..j] <= pivot <= a[j+1..hi].
inline long partition(int *a, long lo, long hi) {
  long mid = lo + (hi - lo) / 2;
  if (a[mid] < a[lo]) std::swap(a[mid], a[lo]);
  if (a[hi] < a[lo]) std::swap(a[hi], a[lo]);
  if (a[hi] < a[mid]) std::swap(a[hi], a[mid]);
  std::swap(a[lo], a[mid]);  // the median is the pivot, at a[lo]
  const int pivot = a[lo];
  long i = lo - 1, j = hi + 1;
  for (;;) {
    do i++;
    while (a[i] < pivot);
    do j--;
    while (a[j] > pivot);
    if (i >= j) return j;
    std::swap(a[i], a[j]);
  }
}

// The baseline: the same recursion, plain serial.
__attribute__((noinline)) void qs_serial(int *a, long lo, long hi, long cutoff) {
  while (hi - lo + 1 > cutoff) {
    long p = partition(a, lo, hi);
    qs_serial(a, lo, p, cutoff);
    lo = p + 1;
  }
  std::sort(a + lo, a + hi + 1);
}

// The benchmark: spawn the left part, recurse on the right, sync.
__attribute__((noinline)) void qs_par(int *a, long lo, long hi, long cutoff) {
  if (hi - lo + 1 <= cutoff) {
    std::sort(a + lo, a + hi + 1);
    return;
  }
  long p = partition(a, lo, hi);
  BENCH_TASK_GROUP(tg);
  BENCH_SPAWN(tg, qs_par(a, lo, p, cutoff));
  qs_par(a, p + 1, hi, cutoff);
  BENCH_SYNC(tg);
}

struct digest {
  std::uint64_t sum = 0, hsum = 0;
  bool operator==(const digest &o) const { return sum == o.sum && hsum == o.hsum; }
};

digest digest_of(const std::vector<int> &v) {
  digest d;
  for (int x : v) {
    d.sum += static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
    d.hsum += bench::splitmix64(static_cast<std::uint32_t>(x));
  }
  return d;
}

// Empty string when v is sorted and has the input's digest, else what is wrong.
const char *check(const std::vector<int> &v, const digest &want) {
  if (!std::is_sorted(v.begin(), v.end())) return "not sorted";
  if (!(digest_of(v) == want)) return "not a permutation of the input (checksum differs)";
  return "";
}

}  // namespace

int main(int argc, char **argv) {
  const long n = bench::arg_long(argc, argv, 1, 1L << 24, 1, 1L << 30);
  const long cutoff = bench::arg_long(argc, argv, 2, 2048, 2, 1L << 30);
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 3, 3, 1, 100000));

  std::vector<int> input(static_cast<std::size_t>(n));
  for (long i = 0; i < n; i++)
    input[static_cast<std::size_t>(i)] = static_cast<int>(static_cast<std::uint32_t>(
        bench::splitmix64(0x5EEDull * 1000003 + static_cast<std::uint64_t>(i))));
  const digest want = digest_of(input);
  std::vector<int> ws(input.size()), wp(input.size());

  const int workers = bench::init_workers();
  bench::print_meta("quicksort", BENCH_SYSTEM, workers);
  std::printf("system,workers,n,cutoff,rep,serial_s,parallel_s,ratio\n");
  std::fflush(stdout);

  {  // warm-up on a prefix
    long wn = n < 100000 ? n : 100000;
    std::vector<int> w(input.begin(), input.begin() + wn);
    bench::run_root([&] { qs_par(w.data(), 0, wn - 1, cutoff); });
    if (!std::is_sorted(w.begin(), w.end())) {
      std::fprintf(stderr, "quicksort_%s: WRONG ANSWER warm-up sort of %ld is not sorted\n",
                   BENCH_SYSTEM, wn);
      return 1;
    }
  }

  for (int rep = 0; rep < reps; rep++) {
    ws = input;
    wp = input;
    double ts = bench::seconds([&] {
      int *d = ws.data();
      bench::opaque(d);
      qs_serial(d, 0, n - 1, cutoff);
      bench::keep(d);
    });
    double tp = bench::seconds_on_root([&] {
      int *d = wp.data();
      bench::opaque(d);
      qs_par(d, 0, n - 1, cutoff);
      bench::keep(d);
    });

    const char *es = check(ws, want), *ep = check(wp, want);
    if (*es || *ep) {
      std::fprintf(stderr,
                   "quicksort_%s: WRONG ANSWER sorting %ld integers: serial %s, parallel %s\n",
                   BENCH_SYSTEM, n, *es ? es : "ok", *ep ? ep : "ok");
      return 1;
    }
    std::printf("%s,%d,%ld,%ld,%d,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, n, cutoff, rep, ts, tp,
                ts > 0 ? tp / ts : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
