/* Placement by data: the node queues, the node of a task's data, and the
 * order in which idle workers look at other nodes. Invariants at the top
 * of nodeq.h; rules and their reasons in docs/numa.md ("Placement"). */
#define _GNU_SOURCE
#include "nodeq.h"

#include "config.h"
#include "forkpart.h"
#include "idle.h"
#include "monitor.h"
#include "places.h"
#include "observe.h"
#include "runtime.h"
#include "sched.h"
#include "timespec.h"
#include "topo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ito__nodeq_on;

/* How long an idle worker looks for work before it takes a task from
 * another node's queue: PATIENCE_NS when that queue holds more tasks than
 * its node has workers, LONG_PATIENCE_NS otherwise (docs/numa.md,
 * "Stealing"). The first covers the wake-up of a sleeping worker of that
 * node (a futex wake-up takes tens of microseconds, more in a VM). */
#define PATIENCE_NS 100000
#define LONG_PATIENCE_NS 400000

struct nodeq {
  struct ready_queue q; /* first: a cache line of its own */
  int nworkers;         /* workers of this start on the node */
  int first;            /* their ids are workers[first .. first + nworkers) */
  int order;            /* the other nodes, nearest first: order_of[order .. + nnodes - 1) */
} __attribute__((aligned(CACHELINE)));

static struct nodeq *nq; /* [topology's nodes], allocated once (the topology never changes) */
static int nnodes;       /* in use at this start */
static int *order_of;    /* [nodes * (nodes - 1)] */
static int *ring_of;     /* [nodes * (nodes - 1)]: how many of the order share its distance */
static int wid_by_node[ITO_MAX_WORKERS];
static short wnode[ITO_MAX_WORKERS];
static unsigned long outside[NQ_KINDS]; /* counted outside the workers (atomic) */

static int nq_workers; /* the configured workers of this start */

int ito__nodeq_worker_node(int id) {
  if (!ito__nodeq_on || id < 0 || id >= ITO_MAX_WORKERS) return 0;
  return wnode[ito__nodeq_counted_as(id, nq_workers)];
}

void ito__nodeq_setup(int nworkers) {
  STORE_RLX(&ito__nodeq_on, 0);
  int n = ito__numa_nodes(); /* (one node: the topology is not even loaded, numa.c) */
  if (n <= 1 || nworkers < 1) return;
  const struct topo *t = ito__topo();
  if (!nq) {
    nq = aligned_alloc(CACHELINE, sizeof *nq * (size_t)t->nodes);
    order_of = malloc(sizeof(int) * (size_t)(t->nodes * t->nodes));
    ring_of = malloc(sizeof(int) * (size_t)(t->nodes * t->nodes));
    if (!nq || !order_of || !ring_of) { /* no memory: placement stays off, nothing else changes */
      free(nq);
      free(order_of);
      free(ring_of);
      nq = NULL;
      return;
    }
  }
  nnodes = n;
  memset(nq, 0, sizeof *nq * (size_t)n);
  /* an extra worker takes the node's queue of the worker it counts as */
  nq_workers = nworkers;
  for (int i = 0; i < nworkers; i++) {
    int node = ito__worker_node(i);
    wnode[i] = (short)(node >= 0 && node < n ? node : 0);
  }
  for (int i = 0; i < nworkers; i++) nq[wnode[i]].nworkers++;
  for (int j = 0, k = 0; j < n; j++) {
    nq[j].first = k;
    k += nq[j].nworkers;
  }
  int fill[n];
  for (int j = 0; j < n; j++) fill[j] = 0;
  for (int i = 0; i < nworkers; i++) wid_by_node[nq[wnode[i]].first + fill[wnode[i]]++] = i;
  /* other nodes by distance, then by how far round from this one (so
   * that nodes at the same distance are shared out evenly) */
  for (int i = 0; i < n; i++) {
    int *o = &order_of[i * (n - 1)];
    int m = 0;
    for (int d = 1; d < n; d++) o[m++] = (i + d) % n;
    for (int a = 1; a < m; a++) { /* insertion sort: stable, so ties keep the round order */
      int x = o[a], b = a;
      for (; b > 0 && t->dist[i * t->nodes + o[b - 1]] > t->dist[i * t->nodes + x]; b--)
        o[b] = o[b - 1];
      o[b] = x;
    }
    for (int a = 0; a < m; a++) {
      int r = 0;
      while (a + r < m && t->dist[i * t->nodes + o[a + r]] == t->dist[i * t->nodes + o[a]]) r++;
      ring_of[i * (n - 1) + a] = r;
    }
    nq[i].order = i * (n - 1);
  }
  STORE_RLX(&ito__nodeq_on, 1);
}

static void nodeq_at_start(void) { ito__nodeq_setup(ito__nworkers); }
ITO_OBSERVE(nodeq_at_setup, OBSERVE_SETUP, OBS_NODEQ, nodeq_at_start);

/* The child of a fork: empty node queues (what they held was the parent's
 * threads), for its one worker. */
static void nodeq_fork_child(worker *w, ithread *self) {
  (void)w, (void)self;
  ito__nodeq_setup(1);
}
ITO_FORK_PART(nodeq_fork, .child_order = FORK_NODEQ, .child = nodeq_fork_child);

/* ---- where data lives ------------------------------------------------------------------- */

int ito__nodeq_score(const struct ito_access *acc, int n, int tie_node) {
  int nodes = ito__numa_nodes();
  if (nodes <= 1 || !acc || n <= 0) return -1;
  uint64_t w[nodes];
  memset(w, 0, sizeof w);
  bool any = false;
  for (int i = 0; i < n; i++) {
    int node = ito_numa_node_of(acc[i].addr);
    if (node < 0 || node >= nodes) continue;
    uint64_t b = acc[i].size ? acc[i].size : 1;
    if (acc[i].mode & ITO_ACCESS_OUT) b *= 2; /* out and inout: written, counted double */
    w[node] += b;
    any = true;
  }
  if (!any) return -1;
  int best = 0;
  for (int j = 1; j < nodes; j++)
    if (w[j] > w[best]) best = j;
  if (tie_node >= 0 && tie_node < nodes && w[tie_node] == w[best]) best = tie_node;
  return best;
}

int ito_numa_node_for(const struct ito_access *acc, int n) {
  if (n < 0 || (n > 0 && !acc)) {
    errno = EINVAL;
    return -1;
  }
  if (ito__ensure() != 0) return -1;
  worker *w = cur_worker();
  return ito__nodeq_score(acc, n, w ? ito__nodeq_worker_node(w->id) : -1);
}

/* ---- the queues ---------------------------------------------------------------------------- */

void ito__nodeq_push(fiber *f) {
  int node = fiber_node(f);
  ITO_ASSERT(ito__nodeq_on && node >= 0 && node < nnodes && !f->home); /* invariants 1, 3 */
  struct nodeq *q = &nq[node];
  rqueue_push(&q->q, f, f, 1);
  /* a sleeper of the node first, so that the task runs where its data is;
   * then the protocol's own check (docs/idle.md, P2 and P3), which wakes
   * somebody (of any node) if nobody spins or was woken here */
  for (int k = 0; k < q->nworkers; k++) {
    worker *v = ito__workers[wid_by_node[q->first + k]];
    if (LOAD_RLX(&v->idle.on_list)) {
      ito__idle_wake(&v->idle);
      break;
    }
  }
  idle_after_publish(q->nworkers ? wid_by_node[q->first] : -1, true);
}

/* The length above which other nodes' workers take from node j's queue
 * after the short patience: as many tasks as the node has workers to
 * start them. */
static int threshold(int j) { return nq[j].nworkers; }

fiber *ito__nodeq_take(worker *w, long long *idle_t0) {
  int me = wnode[ito__nodeq_counted_as(w->id, nq_workers)];
  fiber *f = rqueue_pop(&nq[me].q);
  if (f) return f;
  long long waited = -1; /* not known yet: the clock is read only when it matters */
  const int *o = &order_of[nq[me].order];
  for (int a = 0; a < nnodes - 1; a++) {
    int j = o[a];
    int len = LOAD_RLX(&nq[j].q.len);
    if (!len) continue;
    if (nq[j].nworkers) { /* a node without workers is served as our own */
      if (waited < 0) {
        long long now = clock_ns(CLOCK_MONOTONIC);
        if (!*idle_t0) *idle_t0 = now;
        waited = now - *idle_t0;
      }
      if (waited < (len > threshold(j) ? PATIENCE_NS : LONG_PATIENCE_NS)) continue;
    }
    if ((f = rqueue_pop(&nq[j].q))) return f;
  }
  return NULL;
}

worker *ito__nodeq_victim(worker *w, uint64_t r, bool near) {
  int me = wnode[ito__nodeq_counted_as(w->id, nq_workers)];
  if (near) {
    int k = nq[me].nworkers;
    return k > 1 ? ito__workers[wid_by_node[nq[me].first + (int)(r % (uint64_t)k)]] : NULL;
  }
  const int *o = &order_of[nq[me].order];
  const int *ring = &ring_of[nq[me].order];
  for (int a = 0; a < nnodes - 1; a += ring[a]) {
    /* the nearest ring of nodes that has workers: one of them at random */
    int have = 0;
    for (int b = a; b < a + ring[a]; b++) have += nq[o[b]].nworkers;
    if (!have) continue;
    int pick = (int)(r % (uint64_t)have);
    for (int b = a; b < a + ring[a]; b++) {
      int j = o[b];
      if (pick < nq[j].nworkers) return ito__workers[wid_by_node[nq[j].first + pick]];
      pick -= nq[j].nworkers;
    }
  }
  return NULL;
}

bool ito__nodeq_any(void) {
  for (int j = 0; j < nnodes; j++)
    if (LOAD_RLX(&nq[j].q.len)) return true;
  return false;
}

/* ---- counts (invariant 4) -------------------------------------------------------------------- */

void ito__nodeq_count_run(worker *w, fiber *f) {
  int p = f->placed;
  if (p != PLACED_KNOWN && p != PLACED_UNKNOWN) return;
  f->placed = PLACED_COUNTED;
  int kind = p == PLACED_UNKNOWN                                   ? NQ_UNKNOWN
             : w && fiber_node(f) == ito__nodeq_worker_node(w->id) ? NQ_LOCAL
                                                                   : NQ_REMOTE;
  if (w)
    STORE_RLX(&w->placed[kind], w->placed[kind] + 1);
  else
    __atomic_add_fetch(&outside[kind], 1, __ATOMIC_RELAXED);
}

void ito__nodeq_count(worker *w, int node) {
  int kind = node < 0                                     ? NQ_UNKNOWN
             : w && node == ito__nodeq_worker_node(w->id) ? NQ_LOCAL
                                                          : NQ_REMOTE;
  if (w)
    STORE_RLX(&w->placed[kind], w->placed[kind] + 1);
  else
    __atomic_add_fetch(&outside[kind], 1, __ATOMIC_RELAXED);
}

worker *ito__nodeq_worker_on(int node, unsigned r) {
  if (!LOAD_RLX(&ito__nodeq_on) || node < 0 || node >= nnodes || !nq[node].nworkers) return NULL;
  return ito__workers[wid_by_node[nq[node].first + (int)(r % (unsigned)nq[node].nworkers)]];
}

void ito__nodeq_counts(uint64_t out[NQ_KINDS]) {
  for (int k = 0; k < NQ_KINDS; k++) out[k] = __atomic_load_n(&outside[k], __ATOMIC_RELAXED);
  int n = LOAD_ACQ(&ito__nslots);
  for (int i = 0; i < n; i++) {
    worker *w = ito__workers[i];
    if (!w) continue;
    for (int k = 0; k < NQ_KINDS; k++) out[k] += LOAD_RLX(&w->placed[k]);
  }
}
