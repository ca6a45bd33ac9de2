/* NUMA memory and topology (docs/numa.md) without a NUMA machine: hwloc's
 * synthetic topologies (HWLOC_SYNTHETIC, set by ctest) give 2, 4 and 8
 * nodes on this machine, and ITO_NUMA_FAKE=1 makes ito_numa_alloc* record
 * the node asked for instead of binding memory, so the layouts are checked
 * exactly. On the machine itself ("real"), memory really is bound and the
 * kernel says where a page lives.
 *
 *   test_numa fake N   the topology has N nodes; every layout and bad input
 *   test_numa real     this machine's topology (one node here)
 *   test_numa off      ITO_NUMA=off on a topology of several nodes: one node
 *   test_numa badfree  frees a pointer ito did not return (check.sh reads
 *                      the message) */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static size_t page;

static void bad_inputs(int n) {
  errno = 0;
  CHECK(ito_numa_alloc(4096, -1) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(ito_numa_alloc(4096, n) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(ito_numa_alloc(0, 0) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(ito_numa_alloc_blocked(4096, 0, 1) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(ito_numa_alloc_blocked(4096, 4096, 0) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(ito_numa_alloc_blocked(4096, 4096, n + 1) == NULL && errno == EINVAL);
  errno = 0;
  CHECK(ito_numa_alloc_interleaved(0) == NULL && errno == EINVAL);
  CHECK_EQ(ito_numa_node_of(NULL), -1);
}

static void fake(int n) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_numa_num_nodes(), n);
  CHECK_EQ(ito_numa_node(), 0); /* worker 0 follows the first unit, on node 0 */
  for (int k = 0; k < n; k++) {
    size_t size = 3 * page + 100;
    char *p = ito_numa_alloc(size, k);
    CHECK(p);
    memset(p, 1, size);
    CHECK_EQ(ito_numa_node_of(p), k);
    CHECK_EQ(ito_numa_node_of(p + size - 1), k);
    ito_numa_free(p, size);
  }
  size_t pages = 4 * (size_t)n + 3;
  char *q = ito_numa_alloc_interleaved(pages * page);
  CHECK(q);
  for (size_t i = 0; i < pages; i++)
    CHECK_EQ(ito_numa_node_of(q + i * page + 7), (int)(i % (size_t)n));
  ito_numa_free(q, pages * page);
  int use = n > 1 ? n - 1 : 1; /* block-cyclic over the first n-1 nodes */
  char *b = ito_numa_alloc_blocked(pages * page, 2 * page - 1, use); /* rounds up to 2 pages */
  CHECK(b);
  for (size_t i = 0; i < pages; i++)
    CHECK_EQ(ito_numa_node_of(b + i * page), (int)((i / 2) % (size_t)use));
  ito_numa_free(b, pages * page);
  /* an address of nobody's block is unknown here: nothing is bound */
  int local = 0;
  CHECK_EQ(ito_numa_node_of(&local), -1);
  bad_inputs(n);
  CHECK_EQ(ito_finalize(), 0);
  printf("test_numa fake: %d nodes: one node, interleaved, block-cyclic, bad inputs: OK\n", n);
}

static void real(void) {
  CHECK_EQ(ito_init(), 0);
  int n = ito_numa_num_nodes();
  CHECK(n >= 1);
  for (int k = 0; k < n; k++) {
    char *p = ito_numa_alloc(page * 4, k);
    CHECK(p);
    memset(p, 1, page * 4); /* touched: the kernel places the pages now */
    CHECK_EQ(ito_numa_node_of(p), k);
    ito_numa_free(p, page * 4);
  }
  char *q = ito_numa_alloc_interleaved(page * 8);
  CHECK(q);
  memset(q, 1, page * 8);
  for (int i = 0; i < 8; i++) {
    int node = ito_numa_node_of(q + i * page);
    CHECK(node >= 0 && node < n);
  }
  ito_numa_free(q, page * 8);
  /* memory ito did not place: the kernel says, once it is touched */
  char *m = malloc(page * 2);
  CHECK(m);
  memset(m, 1, page * 2);
  int node = ito_numa_node_of(m);
  CHECK(node >= 0 && node < n);
  free(m);
  bad_inputs(n);
  CHECK_EQ(ito_finalize(), 0);
  printf("test_numa real: %d node%s, memory bound and found there: OK\n", n, n == 1 ? "" : "s");
}

static void off(void) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_numa_num_nodes(), 1);
  char *p = ito_numa_alloc(page, 0);
  CHECK(p);
  CHECK_EQ(ito_numa_node_of(p), 0);
  ito_numa_free(p, page);
  errno = 0;
  CHECK(ito_numa_alloc(page, 1) == NULL && errno == EINVAL);
  CHECK_EQ(ito_finalize(), 0);
  puts("test_numa off: one node: OK");
}

int main(int argc, char **argv) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  const char *mode = argc > 1 ? argv[1] : "real";
  if (!strcmp(mode, "fake") && argc > 2) {
#if !TEST_HAVE_HWLOC
    puts("test_numa: SKIPPED: ito was built without hwloc, so synthetic topologies are not read");
    return TEST_SKIP_STATUS;
#endif
    fake(atoi(argv[2]));
  } else if (!strcmp(mode, "real")) {
    real();
  } else if (!strcmp(mode, "off")) {
    off();
  } else if (!strcmp(mode, "badfree")) {
    CHECK_EQ(ito_init(), 0);
    char *p = ito_numa_alloc(page, 0);
    CHECK(p);
    ito_numa_free(p + page / 2, page); /* not what it returned */
    ito_numa_free(p, page);
    puts("test_numa badfree: returned");
  } else {
    fprintf(stderr, "usage: test_numa fake N | real | off | badfree\n");
    return 2;
  }
  return 0;
}
