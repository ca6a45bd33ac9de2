/* Data placement for the KASTORS-style benchmarks (jacobi_dep, sparselu_dep,
 * strassen_dep): memory placed block-cyclically over the NUMA nodes with
 * libnuma, the same way whatever OpenMP runtime runs the binary, and the
 * share of tasks that ran on a CPU of the node holding the data they write.
 *
 * Built with libnuma (OMPB_HAVE_LIBNUMA, Debian's libnuma-dev): memory is
 * mapped, then each chunk bound to its node (numa_tonode_memory) before
 * anything touches it. Without libnuma, or where numa_available() says no,
 * everything is one node and nothing is bound. */
#ifndef BENCH_OMP_NUMA_PLACE_H
#define BENCH_OMP_NUMA_PLACE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef OMPB_HAVE_LIBNUMA
#include <numa.h>
#endif

static int np_nodes = 1; /* nodes data is spread over */
static int np_ncpu;      /* CPUs np_cpu_node knows */
static int *np_cpu_node; /* [np_ncpu] */
static atomic_long np_local, np_remote;

static inline void np_init(void) {
  np_ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
  if (np_ncpu < 1) np_ncpu = 1;
  np_cpu_node = calloc((size_t)np_ncpu, sizeof *np_cpu_node);
  if (!np_cpu_node) {
    fprintf(stderr, "numa_place: out of memory\n");
    exit(3);
  }
#ifdef OMPB_HAVE_LIBNUMA
  if (numa_available() >= 0) {
    np_nodes = numa_max_node() + 1;
    for (int c = 0; c < np_ncpu; c++) {
      int n = numa_node_of_cpu(c);
      np_cpu_node[c] = n >= 0 && n < np_nodes ? n : 0;
    }
  }
#endif
}

/* The node of the CPU the caller runs on. */
static inline int np_node_here(void) {
  int c = sched_getcpu();
  return c >= 0 && c < np_ncpu ? np_cpu_node[c] : 0;
}

/* A task that writes data on node `node` runs now: counted local or remote. */
static inline void np_count(int node) {
  atomic_fetch_add_explicit(np_node_here() == node ? &np_local : &np_remote, 1,
                            memory_order_relaxed);
}

static inline void np_reset(void) {
  atomic_store(&np_local, 0);
  atomic_store(&np_remote, 0);
}

/* Percent of the counted tasks that ran on their data's node. */
static inline double np_local_pct(void) {
  long l = atomic_load(&np_local), r = atomic_load(&np_remote);
  return l + r ? 100.0 * (double)l / (double)(l + r) : 100.0;
}

/* The node of chunk k of a block-cyclic placement. */
static inline int np_node_of_chunk(size_t k) { return (int)(k % (size_t)np_nodes); }

static inline size_t np_page(void) { return (size_t)sysconf(_SC_PAGESIZE); }

/* Zeroed memory of bytes, whole pages, not yet touched. */
static inline void *np_map(size_t bytes) {
  size_t ps = np_page(), len = (bytes + ps - 1) / ps * ps;
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "numa_place: out of memory for %zu bytes\n", bytes);
    exit(3);
  }
  return p;
}

/* [p, p + len) on node, before anything touches it (nothing on one node). */
static inline void np_bind(void *p, size_t len, int node) {
#ifdef OMPB_HAVE_LIBNUMA
  if (np_nodes > 1) numa_tonode_memory(p, len, node % np_nodes);
#else
  (void)p;
  (void)len;
  (void)node;
#endif
}

/* bytes of zeroed memory, chunk k of `chunk` bytes (rounded up to pages)
 * on node k % nodes. */
static inline void *np_alloc(size_t bytes, size_t chunk) {
  void *p = np_map(bytes);
  size_t ps = np_page(), len = (bytes + ps - 1) / ps * ps;
  chunk = chunk ? (chunk + ps - 1) / ps * ps : ps;
  for (size_t off = 0, k = 0; np_nodes > 1 && off < len; off += chunk, k++)
    np_bind((char *)p + off, len - off < chunk ? len - off : chunk, np_node_of_chunk(k));
  return p;
}

/* bytes of zeroed memory on node. */
static inline void *np_alloc_on(size_t bytes, int node) {
  void *p = np_map(bytes);
  np_bind(p, bytes, node);
  return p;
}

static inline void np_free(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

#endif
