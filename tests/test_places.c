/* Places (docs/numa.md, "Places"): ITO_PLACES in OpenMP's forms expanded on
 * hwloc's synthetic topologies (set by ctest), workers on their places and
 * their nodes, and on this machine the binding itself.
 *
 *   test_places expect N C0,C1/C2,...      the places (CPU lists, '/'
 *                                          between places) must be these
 *   test_places nodes                      on each worker, ito_numa_node()
 *                                          is its place's node
 *   test_places bound                      each worker's OS thread is bound
 *                                          to its place's CPUs (this machine) */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/dropin/ito_dropin.h"
#include "check.h"

static void expect(int n, const char *want) {
  CHECK_EQ(ito_init(), 0);
  int got = ito__dropin_place_count();
  if (got != n) {
    fprintf(stderr, "%d places, expected %d\n", got, n);
    CHECK(0);
  }
  char buf[4096] = "";
  size_t k = 0;
  for (int p = 0; p < got; p++) {
    int cpus[1024];
    int m = ito__dropin_place_cpus(p, cpus, 1024);
    CHECK(m >= 1);
    for (int i = 0; i < m && k < sizeof buf - 16; i++)
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%d", i ? "," : (p ? "/" : ""), cpus[i]);
  }
  if (strcmp(buf, want)) {
    fprintf(stderr, "places %s, expected %s\n", buf, want);
    CHECK(0);
  }
  CHECK_EQ(ito__dropin_place_cpus(got, NULL, 0), -1);
  CHECK_EQ(ito_finalize(), 0);
  printf("test_places: %s: OK\n", want);
}

static int wrong;
static void *node_check(void *p) {
  (void)p;
  for (int i = 0; i < 200; i++) {
    int w = ito_worker_id(), node = ito_numa_node();
    int pl = ito__dropin_worker_place(w);
    int cpus[8];
    CHECK(ito__dropin_place_cpus(pl, cpus, 8) >= 1);
    /* numa_domains on the synthetic topology: place i is node i */
    if (node != pl) __atomic_add_fetch(&wrong, 1, __ATOMIC_RELAXED);
    ito_yield();
  }
  return NULL;
}

static void nodes(void) {
  CHECK_EQ(ito_init(), 0);
  ito_thread_t t[8];
  for (int i = 0; i < 8; i++) CHECK_EQ(ito_create(node_check, NULL, &t[i]), 0);
  for (int i = 0; i < 8; i++) CHECK_EQ(ito_join(t[i], NULL), 0);
  CHECK_EQ(wrong, 0);
  CHECK_EQ(ito_finalize(), 0);
  puts("test_places nodes: every worker on its place's node: OK");
}

static int mismatches, checks;
static void *bound_check(void *p) {
  (void)p;
  for (int i = 0; i < 50; i++) {
    int w = ito_worker_id();
    cpu_set_t mine;
    CHECK_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    if (w == ito_worker_id()) { /* (no switch between: the same worker) */
      int cpus[1024];
      int m = ito__dropin_place_cpus(ito__dropin_worker_place(w), cpus, 1024);
      cpu_set_t want;
      CPU_ZERO(&want);
      for (int k = 0; k < m; k++) CPU_SET(cpus[k], &want);
      __atomic_add_fetch(&checks, 1, __ATOMIC_RELAXED);
      if (!CPU_EQUAL(&mine, &want)) __atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
    }
    ito_yield();
  }
  return NULL;
}

static void bound(void) {
  CHECK_EQ(ito_init(), 0);
  CHECK(ito__dropin_place_count() >= 1);
  ito_thread_t t[4];
  for (int i = 0; i < 4; i++) CHECK_EQ(ito_create(bound_check, NULL, &t[i]), 0);
  for (int i = 0; i < 4; i++) CHECK_EQ(ito_join(t[i], NULL), 0);
  CHECK(checks > 0);
  CHECK_EQ(mismatches, 0);
  CHECK_EQ(ito_finalize(), 0);
  printf("test_places bound: %d checks, every worker bound to its place: OK\n", checks);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "expect") && argc > 3) {
#if !TEST_HAVE_HWLOC
    if (getenv("HWLOC_SYNTHETIC")) {
      puts(
          "test_places: SKIPPED: ito was built without hwloc, so synthetic topologies are not "
          "read");
      return TEST_SKIP_STATUS;
    }
#endif
    expect(atoi(argv[2]), argv[3]);
  } else if (!strcmp(mode, "nodes")) {
#if !TEST_HAVE_HWLOC
    puts("test_places: SKIPPED: ito was built without hwloc, so synthetic topologies are not read");
    return TEST_SKIP_STATUS;
#endif
    nodes();
  } else if (!strcmp(mode, "bound")) {
    bound();
  } else {
    fprintf(stderr, "usage: test_places expect N LIST | nodes | bound\n");
    return 2;
  }
  return 0;
}
