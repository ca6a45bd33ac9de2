// Unbalanced tree search: count the nodes of a geometric tree (UTS "T1"-like
// shape). Every node has an id; the root's is the seed and child i of node x
// has id bench::splitmix64(x ^ bench::splitmix64(i + 1)). A node at depth < d has
// floor(log(u) / log(1 - p)) children, u in (0,1] drawn from its id and
// p = 1 / (1 + mean): geometric with the given mean. Nodes at depth d are leaves.
//
//   uts_<system> [depth=13] [mean=4] [seed=19] [reps=3]
//
// The parallel version spawns one task per child (a chain of spawns, so each
// child's index is a parameter of its own activation, never a loop variable
// the parent goes on changing). Prints one CSV line per repetition:
//   system,workers,depth,mean,seed,rep,serial_s,parallel_s,ratio
// and exits nonzero with a message unless both versions find the same node
// count and id checksum.
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "common/spawn.hpp"
#include "common/util.hpp"

namespace {

struct params {
  int depth;
  double log1mp;  // log(1 - p)
};

inline std::uint64_t child_id(std::uint64_t id, int i) {
  return bench::splitmix64(id ^ bench::splitmix64(static_cast<std::uint64_t>(i) + 1));
}

inline int num_children(const params &pr, std::uint64_t id, int d) {
  if (d >= pr.depth) return 0;
  // u in (0, 1]: 53 bits of a second hash of the id.
  double u = (static_cast<double>(bench::splitmix64(id ^ 0xC0FFEEull) >> 11) + 1.0) * 0x1.0p-53;
  int k = static_cast<int>(std::floor(std::log(u) / pr.log1mp));
  return k < 1000 ? k : 1000;
}

struct result {
  std::uint64_t nodes = 0, idsum = 0;
};

// The baseline: the same traversal, plain serial.
__attribute__((noinline)) void uts_serial(const params &pr, std::uint64_t id, int d, result &r) {
  r.nodes += 1;
  r.idsum += id;
  int k = num_children(pr, id, d);
  for (int i = 0; i < k; i++) uts_serial(pr, child_id(id, i), d + 1, r);
}

result uts_par(const params &pr, std::uint64_t id, int d);

// Spawns child i of (id, d), handles children i+1..k-1 by recursion, syncs.
__attribute__((noinline)) result uts_children(const params &pr, std::uint64_t id, int d, int i,
                                              int k) {
  result a, b;
  BENCH_TASK_GROUP(tg);
  BENCH_SPAWN(tg, a = uts_par(pr, child_id(id, i), d + 1));
  if (i + 1 < k) b = uts_children(pr, id, d, i + 1, k);
  BENCH_SYNC(tg);
  a.nodes += b.nodes;
  a.idsum += b.idsum;
  return a;
}

// The benchmark: one task per child.
__attribute__((noinline)) result uts_par(const params &pr, std::uint64_t id, int d) {
  int k = num_children(pr, id, d);
  result r;
  if (k > 0) r = uts_children(pr, id, d, 0, k);
  r.nodes += 1;
  r.idsum += id;
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  const int depth = static_cast<int>(bench::arg_long(argc, argv, 1, 13, 0, 1000));
  const int mean = static_cast<int>(bench::arg_long(argc, argv, 2, 4, 1, 1000));
  const long seed = bench::arg_long(argc, argv, 3, 19, 0, 1L << 62);
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 4, 3, 1, 100000));
  const params pr{depth, std::log(1.0 - 1.0 / (1.0 + mean))};
  const std::uint64_t root = bench::splitmix64(static_cast<std::uint64_t>(seed));

  const int workers = bench::init_workers();
  bench::print_meta("uts", BENCH_SYSTEM, workers);

  {  // warm-up on a shallow tree, checked against the serial count
    params wpr{depth < 6 ? depth : 6, pr.log1mp};
    result ws, wp;
    uts_serial(wpr, root, 0, ws);
    bench::run_root([&] { wp = uts_par(wpr, root, 0); });
    if (ws.nodes != wp.nodes || ws.idsum != wp.idsum) {
      std::fprintf(stderr, "uts_%s: WRONG ANSWER warm-up: serial %llu nodes, parallel %llu\n",
                   BENCH_SYSTEM, (unsigned long long)ws.nodes, (unsigned long long)wp.nodes);
      return 1;
    }
  }

  bool printed = false;
  for (int rep = 0; rep < reps; rep++) {
    result rs, rp;
    double ts = bench::seconds([&] {
      std::uint64_t id = root;
      bench::opaque(id);
      uts_serial(pr, id, 0, rs);
      bench::keep(rs.nodes);
    });
    double tp = bench::seconds_on_root([&] {
      std::uint64_t id = root;
      bench::opaque(id);
      rp = uts_par(pr, id, 0);
      bench::keep(rp.nodes);
    });

    if (rs.nodes != rp.nodes || rs.idsum != rp.idsum) {
      std::fprintf(
          stderr,
          "uts_%s: WRONG ANSWER depth=%d mean=%d seed=%ld: serial %llu nodes (ids %016llx), "
          "parallel %llu nodes (ids %016llx)\n",
          BENCH_SYSTEM, depth, mean, seed, (unsigned long long)rs.nodes,
          (unsigned long long)rs.idsum, (unsigned long long)rp.nodes, (unsigned long long)rp.idsum);
      return 1;
    }
    if (!printed) {
      std::printf("# nodes=%llu\n", (unsigned long long)rs.nodes);
      std::printf("system,workers,depth,mean,seed,rep,serial_s,parallel_s,ratio\n");
      printed = true;
    }
    std::printf("%s,%d,%d,%d,%ld,%d,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, depth, mean, seed,
                rep, ts, tp, ts > 0 ? tp / ts : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
