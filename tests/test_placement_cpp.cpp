// Placement by data in the C++ API (docs/numa.md): task_group::run with
// ito::in/out/inout and with ito::near, and ito::numa's calls, on hwloc's
// synthetic topology of 2 nodes with ITO_NUMA_FAKE=1 (set by ctest). Checks
// the node chosen for the dependences, that every task runs once, in the
// order its dependences ask, on a node that has a worker, and the
// profiler's counts (ITO_PROFILE=1).
#include <ito/ito.hpp>

#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "check.h"

int main() {
  CHECK(ito_init() == 0);
  if (ito::numa::num_nodes() != 2) {
    std::printf("SKIPPED: hwloc gave %d nodes (no HWLOC_SYNTHETIC topology?)\n",
                ito::numa::num_nodes());
    return 77;
  }
  const std::size_t n = 1024;
  double *a = ito::numa::alloc_on<double>(n, 0);
  double *b = ito::numa::alloc_on<double>(n, 1);
  CHECK(ito::numa::node_of(a) == 0 && ito::numa::node_of(b) == 1);
  // bytes decide: 8 KiB read on node 0 against 4.5 KiB written (counted
  // double) on node 1; the same read: node 0
  CHECK(ito::numa::node_for({ito::in(a, n), ito::out(b, n / 2 + 64)}) == 1);
  CHECK(ito::numa::node_for({ito::in(a, n), ito::in(b, n / 2)}) == 0);
  CHECK(ito::numa::node_for({ito::inout(b[0])}) == 1);
  int local = 0;
  CHECK(ito::numa::node_for({ito::inout(local)}) == -1);

  const int rounds = 40;
  std::vector<int> ran_a(rounds, -1), ran_b(rounds, -1);
  std::atomic<int> order_errors{0}, runs{0};
  int near_node = -1;
  {
    ito::task_group g;
    for (int r = 0; r < rounds; r++) {
      // a chain on each array: round r of a runs after round r - 1 of a
      g.run({ito::inout(a, n)}, [&, r] {
        if (r > 0 && ran_a[r - 1] < 0) order_errors++;
        ran_a[r] = ito::numa::node();
        runs++;
      });
      g.run({ito::inout(b, n)}, [&, r] {
        if (r > 0 && ran_b[r - 1] < 0) order_errors++;
        ran_b[r] = ito::numa::node();
        runs++;
      });
    }
    g.run(ito::near(b + 10, 64), [&] {
      near_node = ito::numa::node();
      runs++;
    });
    g.wait();
  }
  // first touch on a chosen node, by the placed parallel loop: each task
  // counted (its node is known)
  int touched[4] = {-1, -1, -1, -1};
  ito::numa::parallel_for(
      0, 4, [](int k) { return k % 2; }, [&touched](int k) { touched[k] = ito::numa::node(); });
  for (int k = 0; k < 4; k++) CHECK(touched[k] == 0 || touched[k] == 1);
  int on_touch = 0;
  for (int k = 0; k < 4; k++) on_touch += touched[k] == k % 2;
  bool threw = false;
  try {
    ito::task_group g;
    g.run(ito::on_node(2), [] {});
  } catch (const std::out_of_range &) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  int first_node = -1; /* the iteration that ran before the bad node */
  try {
    ito::numa::parallel_for(
        0, 2, [](int k) { return k == 1 ? 5 : 0; },
        [&first_node](int) { first_node = ito::numa::node(); });
  } catch (const std::out_of_range &) {
    threw = true;
  }
  CHECK(threw && (first_node == 0 || first_node == 1));
  CHECK(order_errors.load() == 0);
  CHECK(runs.load() == 2 * rounds + 1);
  int on_a = 0, on_b = 0;
  for (int r = 0; r < rounds; r++) {
    CHECK(ran_a[r] == 0 || ran_a[r] == 1);
    CHECK(ran_b[r] == 0 || ran_b[r] == 1);
    on_a += ran_a[r] == 0;
    on_b += ran_b[r] == 1;
  }
  CHECK(near_node == 0 || near_node == 1);
  ito_profile p = ito::profile::get();
  CHECK(p.tasks_local + p.tasks_remote ==
        2 * rounds + 1 + 4 + 1); /* (+1: the loop that threw ran k = 0) */
  CHECK(p.tasks_local ==
        (unsigned long long)(on_a + on_b + (near_node == 1) + on_touch + (first_node == 0)));
  std::printf(
      "C++ placement: of %d tasks on node 0's data %d ran there, of %d on node 1's %d; "
      "the near task on node %d\n",
      rounds, on_a, rounds, on_b, near_node);
  ito::numa::free(a, n);
  ito::numa::free(b, n);
  CHECK(ito_finalize() == 0);
  std::printf("PASS\n");
  return 0;
}
