/* NUMA memory: allocation on a node, interleaved or block-cyclic, the node
 * of an address and the node of the running worker (the nodes in use,
 * ITO_NUMA, are topo.c's). Design: docs/numa.md.
 *
 * Invariants:
 *  1. Every block ito_numa_alloc* returned and ito_numa_free did not yet
 *     take back is one entry of `blocks`, sorted by address and disjoint;
 *     only this file touches it, under blocks_lock.
 *  2. A block's layout (one node, interleaved, block-cyclic) is what
 *     ito_numa_node_of reports for its addresses; with ITO_NUMA_FAKE=1 it
 *     is only recorded (the memory is not bound), so the placement that
 *     reads it is tested exactly on a machine of one node.
 *  3. With one node in use (topo.h: ITO_NUMA=off, or a topology of one
 *     node) there is one node, 0, and nothing is bound. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include "config.h"
#include "nodeq.h"
#include "os.h"
#include "places.h"
#include "runtime.h"
#include "sched.h"
#include "topo.h"
#include "worker.h"

#include <errno.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ITO_NUMA_FAKE (config.h) */
static struct numa_settings { int fake; /* record nodes, bind nothing (a test aid) */ } numa_cfg;
static const struct ito_cfg numa_rows[] = {
    {.name = "ITO_NUMA_FAKE",
     .kind = ITO_CFG_CHOICE,
     .dst = &numa_cfg.fake,
     .choices = ito__cfg_bits,
     .dflt = "0",
     .what = "1: ito_numa_alloc* record their nodes without binding memory (a test aid)"},
};
ITO_CONFIG_MODULE(numa_config, numa_rows, numa_cfg, NULL, NULL);

enum { LAYOUT_NODE = 0, LAYOUT_INTERLEAVED, LAYOUT_BLOCKED };

struct block {
  uintptr_t lo, hi; /* [lo, hi), whole pages */
  size_t size;      /* as asked */
  size_t stride;    /* LAYOUT_BLOCKED: bytes per block, whole pages */
  int layout, node, nodes;
};

static struct block *blocks;
static int nblocks, cap;
static int blocks_lock;

static size_t page_size(void) {
  static size_t ps;
  if (!ps) ps = (size_t)sysconf(_SC_PAGESIZE);
  return ps;
}

/* ---- binding ------------------------------------------------------------------------ */

struct mask {
  unsigned long w[NODE_MASK_BITS / (8 * sizeof(unsigned long))];
};

static void mask_set(struct mask *m, int bit) {
  if (bit >= 0 && bit < NODE_MASK_BITS)
    m->w[bit / (8 * sizeof(unsigned long))] |= 1UL << (bit % (8 * sizeof(unsigned long)));
}

/* Binds [p, p + len) to node (logical) with mode, unless faked or one node
 * (invariants 2 and 3). 0 or errno. */
static int bind_range(void *p, size_t len, int mode, int node, int nodes) {
  if (numa_cfg.fake || ito__numa_nodes() == 1) return 0;
  const struct topo *t = ito__topo();
  if (!t->real) return 0;
  struct mask m;
  memset(&m, 0, sizeof m);
  if (mode == MPOL_INTERLEAVE)
    for (int i = 0; i < nodes; i++) mask_set(&m, t->os_node[i]);
  else
    mask_set(&m, t->os_node[node]);
  if (syscall(SYS_mbind, p, len, mode, m.w, (unsigned long)NODE_MASK_BITS + 1, 0UL) != 0)
    return errno;
  return 0;
}

/* ---- the table (invariant 1) ------------------------------------------------------- */

static int find(uintptr_t a) { /* the block holding a, or -1; lock held */
  int lo = 0, hi = nblocks - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (a < blocks[mid].lo)
      hi = mid - 1;
    else if (a >= blocks[mid].hi)
      lo = mid + 1;
    else
      return mid;
  }
  return -1;
}

/* The allocator runs with no lock of ito's held (docs/locks.md): a full
 * table grows outside the lock, and whoever finds it still full then
 * installs the larger copy. */
static int insert(const struct block *b) {
  spin_lock(&blocks_lock, LR_LEAF);
  while (nblocks == cap) {
    int ncap = cap ? 2 * cap : 64;
    spin_unlock(&blocks_lock);
    struct block *nb = malloc(sizeof *nb * (size_t)ncap), *old = NULL;
    if (!nb) return ENOMEM;
    spin_lock(&blocks_lock, LR_LEAF);
    if (nblocks == cap && cap < ncap) {
      if (nblocks) memcpy(nb, blocks, sizeof *nb * (size_t)nblocks);
      old = blocks;
      blocks = nb;
      cap = ncap;
      nb = NULL;
    }
    if (nb || old) { /* (free outside the lock too) */
      spin_unlock(&blocks_lock);
      free(nb);
      free(old);
      spin_lock(&blocks_lock, LR_LEAF);
    }
  }
  int i = nblocks;
  while (i > 0 && blocks[i - 1].lo > b->lo) {
    blocks[i] = blocks[i - 1];
    i--;
  }
  blocks[i] = *b;
  nblocks++;
  spin_unlock(&blocks_lock);
  return 0;
}

/* ---- allocation ---------------------------------------------------------------------- */

static void *alloc(size_t size, int layout, int node, size_t stride, int nodes) {
  if (ito__ensure() != 0) return NULL;
  int n = ito__numa_nodes();
  if (size == 0 || (layout == LAYOUT_NODE && (node < 0 || node >= n)) ||
      (layout == LAYOUT_BLOCKED && (stride == 0 || nodes < 1 || nodes > n))) {
    errno = EINVAL;
    return NULL;
  }
  size_t ps = page_size(), len = (size + ps - 1) & ~(ps - 1);
  if (len < size) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL; /* (errno from mmap) */
  struct block b = {(uintptr_t)p, (uintptr_t)p + len, size, 0, layout, node, nodes};
  int rc = 0;
  if (layout == LAYOUT_NODE) {
    rc = bind_range(p, len, MPOL_BIND, node, 1);
  } else if (layout == LAYOUT_INTERLEAVED) {
    b.nodes = n;
    rc = bind_range(p, len, MPOL_INTERLEAVE, 0, n);
  } else {
    b.stride = (stride + ps - 1) & ~(ps - 1);
    for (size_t off = 0, k = 0; off < len && !rc; off += b.stride, k++) {
      size_t l = len - off < b.stride ? len - off : b.stride;
      rc = bind_range((char *)p + off, l, MPOL_BIND, (int)(k % (size_t)nodes), 1);
    }
  }
  if (!rc) rc = insert(&b);
  if (rc) {
    munmap(p, len);
    errno = rc;
    return NULL;
  }
  return p;
}

void *ito_numa_alloc(size_t size, int node) { return alloc(size, LAYOUT_NODE, node, 0, 1); }

void *ito_numa_alloc_interleaved(size_t size) { return alloc(size, LAYOUT_INTERLEAVED, 0, 0, 0); }

void *ito_numa_alloc_blocked(size_t size, size_t block, int nodes) {
  return alloc(size, LAYOUT_BLOCKED, 0, block, nodes);
}

void ito_numa_free(void *p, size_t size) {
  if (!p) return;
  spin_lock(&blocks_lock, LR_LEAF);
  int i = find((uintptr_t)p);
  bool ok = i >= 0 && blocks[i].lo == (uintptr_t)p && blocks[i].size == size;
  struct block b;
  if (ok) {
    b = blocks[i];
    memmove(&blocks[i], &blocks[i + 1], sizeof *blocks * (size_t)(nblocks - i - 1));
    nblocks--;
  }
  spin_unlock(&blocks_lock);
  if (!ok) {
    char msg[200];
    int n = snprintf(msg, sizeof msg,
                     "ito: ito_numa_free(%p, %zu): not a block ito_numa_alloc* returned with "
                     "that size; nothing freed\n",
                     p, size);
    if (n > 0) ito__write_stderr(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    ITO_ASSERT(!"ito_numa_free of a pointer ito_numa_alloc* did not return");
    return;
  }
  munmap((void *)b.lo, b.hi - b.lo);
}

/* ---- where an address lives ------------------------------------------------------------ */

/* The kernel's answers, cached per page: a direct-mapped table of words
 * (page number << 12 | node + 1), read and written whole without a lock.
 * Only pages already placed are cached (a page never touched has no node
 * yet); a page the kernel migrates later keeps its old node here until its
 * entry is replaced: the node is a placement hint, never a correctness
 * matter. */
#define KCACHE 1024
static uint64_t kcache[KCACHE];

static unsigned kslot(uint64_t pn) {
  return (unsigned)((pn * 0x9E3779B97F4A7C15ULL) >> 54) % KCACHE;
}

/* The kernel's node of the page at a (-1: not placed yet, or unknown). */
static int kernel_node(const void *a) {
  uint64_t pn = (uint64_t)(uintptr_t)a / page_size();
  uint64_t e = __atomic_load_n(&kcache[kslot(pn)], __ATOMIC_RELAXED);
  if (e && e >> 12 == pn) return (int)(e & 0xfff) - 1;
  void *page = (void *)(uintptr_t)(pn * page_size());
  int status = -1;
  if (syscall(SYS_move_pages, 0, 1UL, &page, NULL, &status, 0) != 0 || status < 0) return -1;
  int node = ito__topo_node_of_os(status);
  if (node >= 0 && node < 0xffe && pn < (1ULL << 52))
    __atomic_store_n(&kcache[kslot(pn)], pn << 12 | (uint64_t)(node + 1), __ATOMIC_RELAXED);
  return node;
}

int ito_numa_node_of(const void *p) {
  if (!p) return -1;
  int node = -2;
  spin_lock(&blocks_lock, LR_LEAF);
  int i = find((uintptr_t)p);
  if (i >= 0) {
    const struct block *b = &blocks[i];
    size_t off = (uintptr_t)p - b->lo;
    if (b->layout == LAYOUT_NODE)
      node = b->node;
    else if (b->layout == LAYOUT_BLOCKED)
      node = (int)((off / b->stride) % (size_t)b->nodes);
    else if (numa_cfg.fake || !ito__topo()->real || b->nodes == 1)
      node = (int)((off / page_size()) % (size_t)b->nodes); /* as the kernel interleaves */
  }
  spin_unlock(&blocks_lock);
  if (node >= -1) return node;
  /* not a block of ours, or interleaved for real: the kernel says */
  if (numa_cfg.fake || ito__numa_nodes() == 1) return ito__numa_nodes() == 1 ? 0 : -1;
  return kernel_node(p);
}

int ito_numa_num_nodes(void) {
  if (ito__ensure() != 0) return 1;
  return ito__numa_nodes();
}

int ito_numa_node(void) {
  worker *w = cur_worker();
  if (!w) return -1;
  if (ito__numa_nodes() == 1) return 0;
  return ito__worker_node(ito__nodeq_counted_as(w->id, ito__nworkers));
}
