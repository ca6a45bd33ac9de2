/* OpenMP tasks with `depend` placed by their data (docs/numa.md,
 * "Placement") under libito-omp.so, without a NUMA machine: ctest sets a
 * synthetic topology of 2 nodes (HWLOC_SYNTHETIC), one worker on each, and
 * ITO_NUMA_FAKE=1, so that ito_numa_alloc records the node it was asked
 * for. The program reaches ito's C API through dlsym (it is an unmodified
 * gcc -fopenmp binary; under plain libgomp there is no such API and it
 * says SKIPPED). Checked:
 *  - chains of tasks, `depend(inout)` on a block of each node, made by one
 *    thread: every task runs exactly once, and at least 3 in 4 on the node
 *    of their block (a task moves only when its node's worker was busy or
 *    descheduled long enough for the other to help);
 *  - mixed accesses: `depend(in)` on one node's block and `depend(inout)`
 *    on the other's, as many each way: the inout counts double, so the
 *    inout's node (at least 3 in 4). Each task names bytes of its own, so
 *    that they are independent: ready at once, each on its node's queue
 *    (a chain through both nodes would hand every task to the other node's
 *    worker, and measure how fast a sleeping worker wakes);
 *  - a round whose shares fall short runs again, up to 3 times;
 *  - a task without dependences made inside a task placed on node 1 runs
 *    there too (a child inherits its parent's node; it runs work-first on
 *    its parent's worker);
 *  - the profiler's counts (ITO_PROFILE=1), through ito_profile_get: every
 *    task with data counted once, as local or remote, as the tasks saw.
 *
 *   depend_numa   (OMP_NUM_THREADS=2, ITO_NUM_WORKERS=2, the variables above) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER_NODE 200
#define MIXED 200

static void *(*numa_alloc)(size_t, int);
static int (*numa_node_of)(const void *);
static int (*numa_node)(void);
static int (*numa_num_nodes)(void);

/* (ito's header for struct ito_profile only: the program links nothing
 * of ito) */
#include <ito/ito.h>
static int (*profile_get)(const char *, struct ito_profile *);

#define FAIL(...)                                 \
  do {                                            \
    fprintf(stderr, "depend_numa: " __VA_ARGS__); \
    fputc('\n', stderr);                          \
    exit(1);                                      \
  } while (0)

static int ran[2][PER_NODE], ran_on[2][PER_NODE];
static int mixed_on[MIXED], mixed_ran[MIXED];
static int child_on = -2, parent_on = -2;

static void work(void) {
  volatile unsigned long x = 0;
  for (int i = 0; i < 20000; i++) x += (unsigned long)i;
}

int main(void) {
  numa_alloc = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "ito_numa_alloc");
  numa_node_of = (int (*)(const void *))dlsym(RTLD_DEFAULT, "ito_numa_node_of");
  numa_node = (int (*)(void))dlsym(RTLD_DEFAULT, "ito_numa_node");
  numa_num_nodes = (int (*)(void))dlsym(RTLD_DEFAULT, "ito_numa_num_nodes");
  profile_get = (int (*)(const char *, struct ito_profile *))dlsym(RTLD_DEFAULT, "ito_profile_get");
  if (!numa_alloc || !numa_node_of || !numa_node || !numa_num_nodes) {
    puts("SKIPPED: not under libito-omp.so (no ito_numa_alloc)");
    return 77;
  }
  /* the runtime starts with the first parallel region */
  int nthreads = 0;
#pragma omp parallel
#pragma omp single
  nthreads = omp_get_num_threads();
  if (numa_num_nodes() != 2) {
    printf("SKIPPED: %d nodes (no HWLOC_SYNTHETIC topology of 2 nodes?)\n", numa_num_nodes());
    return 77;
  }
  if (nthreads != 2) FAIL("%d threads, want 2 (OMP_NUM_THREADS=2)", nthreads);
  char *blk[2];
  for (int n = 0; n < 2; n++) {
    blk[n] = numa_alloc(4096, n);
    if (!blk[n] || numa_node_of(blk[n]) != n) FAIL("ito_numa_alloc(4096, %d) not on node %d", n, n);
  }
  struct ito_profile p0 = {0}, p1 = {0};
  int prof = profile_get && profile_get(NULL, &p0) == 0;

  /* a round; a round in which fewer than 3 in 4 ran on their node runs
   * again, up to 3 times (a worker descheduled long enough for the other
   * to help says nothing of the placement; one that ignored the data
   * would give 1 in 2 every time) */
  long local_all = 0, with_data = 0;
  int ok = 0;
  for (int round = 0; round < 3 && !ok; round++) {
    memset(ran, 0, sizeof ran);
    memset(mixed_ran, 0, sizeof mixed_ran);
#pragma omp parallel
#pragma omp single
    {
      for (int i = 0; i < PER_NODE; i++)
        for (int n = 0; n < 2; n++) {
#pragma omp task depend(inout : blk[n][0]) firstprivate(i, n)
          {
            work();
            ran[n][i]++;
            ran_on[n][i] = numa_node();
          }
        }
      /* mixed: `in` on one node's block, `inout` on the other's, as many
       * each way (the nodes get the same load), bytes of their own */
      for (int i = 0; i < MIXED; i++) {
        int w = i % 2; /* the node written */
#pragma omp task depend(in : blk[1 - w][1024 + i]) depend(inout : blk[w][2048 + i]) firstprivate(i)
        {
          work();
          mixed_ran[i]++;
          mixed_on[i] = numa_node();
        }
      }
#pragma omp task depend(inout : blk[1][128])
      {
        parent_on = numa_node();
#pragma omp task
        child_on = numa_node();
#pragma omp taskwait
      }
    }
    int local = 0, total = 0;
    for (int n = 0; n < 2; n++)
      for (int i = 0; i < PER_NODE; i++) {
        if (ran[n][i] != 1) FAIL("chain task %d of node %d ran %d times", i, n, ran[n][i]);
        if (ran_on[n][i] < 0 || ran_on[n][i] > 1) FAIL("a task ran on node %d", ran_on[n][i]);
        local += ran_on[n][i] == n;
        total++;
      }
    printf("depend_numa: %d of %d chain tasks ran on their block's node\n", local, total);
    int mw = 0;
    for (int i = 0; i < MIXED; i++) {
      if (mixed_ran[i] != 1) FAIL("mixed task %d ran %d times", i, mixed_ran[i]);
      mw += mixed_on[i] == i % 2;
    }
    printf(
        "depend_numa: %d of %d mixed tasks (in on one node, inout on the other) ran on the "
        "inout's node\n",
        mw, MIXED);
    printf("depend_numa: parent on node %d, its child without data on node %d\n", parent_on,
           child_on);
    if (child_on != parent_on)
      FAIL("the child ran on node %d, its parent on %d", child_on, parent_on);
    local_all += local + mw + (parent_on == 1);
    with_data += total + MIXED + 1;
    ok = local * 4 >= total * 3 && mw * 4 >= MIXED * 3;
    if (!ok) printf("depend_numa: under 3 in 4 on their node (a worker descheduled?): once more\n");
  }
  if (!ok) FAIL("fewer than 3 in 4 tasks on their data's node in 3 rounds");
  if (prof) {
    if (profile_get(NULL, &p1) != 0) FAIL("ito_profile_get failed");
    unsigned long long counted = (p1.tasks_local + p1.tasks_remote + p1.tasks_unknown) -
                                 (p0.tasks_local + p0.tasks_remote + p0.tasks_unknown);
    unsigned long long l = p1.tasks_local - p0.tasks_local;
    /* the chains, the mixed ones and the parent have data (the child and
     * the implicit tasks do not) */
    printf("depend_numa: the profile counted %llu tasks with data, %llu local\n", counted, l);
    if (counted != (unsigned long long)with_data)
      FAIL("the profile counted %llu tasks with data, want %ld", counted, with_data);
    if (l != (unsigned long long)local_all)
      FAIL("the profile counted %llu local, the tasks saw %ld", l, local_all);
  }
  puts("depend_numa: OK");
  return 0;
}
