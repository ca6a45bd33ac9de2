/* libito-omp.so: task dependences (depend clauses, taskwait with depend).
 * docs/openmp.md, "Dependences".
 *
 * A task with depend clauses gets a node. Its creator's table maps each
 * address to the last task with out/inout on it and the in tasks since;
 * a new task gets an edge from each of those not yet done. npred counts, in
 * KID_ALIVE units, the predecessors not done plus one for the creator while
 * it adds edges; whoever brings it to zero starts the task (or wakes the
 * creator waiting for an undeferred one). */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

struct dnode {
  int lock;
  int done; /* the task's code finished: no more edges to it */
  int refs; /* the task, table entries naming it, edges to it */
  uint64_t npred;
  struct dnode **succ;
  unsigned nsucc, csucc;
  task *t;   /* a deferred task to start when npred reaches 0 */
  int prio;  /* its priority (a hint: among successors released together,
                the higher start first) */
  int qlock; /* an undeferred task's creator waits here */
  void *qhead, *qtail;
};

struct dentry {
  void *addr;
  struct dnode *last_out;
  struct dnode **readers;
  unsigned nreaders, creaders;
};

struct deptab {
  struct dentry *e;
  size_t cap, used;
};

static void node_unref(struct dnode *n) {
  if (__atomic_fetch_sub(&n->refs, 1, __ATOMIC_ACQ_REL) == 1) {
    free(n->succ);
    free(n);
  }
}

static struct dentry *lookup(struct deptab *tab, void *addr) {
  if (2 * (tab->used + 1) > tab->cap) {
    size_t cap = tab->cap ? 2 * tab->cap : 64;
    struct dentry *e = calloc(cap, sizeof *e);
    if (!e) ito__omp_fatal("out of memory for task dependences");
    for (size_t i = 0; i < tab->cap; i++) {
      if (!tab->e[i].addr) continue;
      size_t h = ((uintptr_t)tab->e[i].addr >> 3) * 0x9E3779B97F4A7C15ULL >> 20;
      while (e[h & (cap - 1)].addr) h++;
      e[h & (cap - 1)] = tab->e[i];
    }
    free(tab->e);
    tab->e = e;
    tab->cap = cap;
  }
  size_t h = ((uintptr_t)addr >> 3) * 0x9E3779B97F4A7C15ULL >> 20;
  for (;; h++) {
    struct dentry *d = &tab->e[h & (tab->cap - 1)];
    if (d->addr == addr) return d;
    if (!d->addr) {
      d->addr = addr;
      tab->used++;
      return d;
    }
  }
}

static void deptab_free(struct deptab *tab) {
  for (size_t i = 0; i < tab->cap; i++) {
    struct dentry *d = &tab->e[i];
    if (!d->addr) continue;
    if (d->last_out) node_unref(d->last_out);
    for (unsigned r = 0; r < d->nreaders; r++) node_unref(d->readers[r]);
    free(d->readers);
  }
  free(tab->e);
  free(tab);
}

void ito__omp_deptab_free(task *t) {
  deptab_free(t->deps);
  t->deps = NULL;
}

static void add_edge(struct dnode *p, struct dnode *n) {
  if (p == n) return;
  ito__dropin_lock(&p->lock, ITO_DROPIN_LR_LEAF);
  /* the allocator runs with no lock of ito's held (docs/locks.md): a full
   * list grows outside the lock */
  while (!p->done && p->nsucc == p->csucc) {
    unsigned ncap = p->csucc ? 2 * p->csucc : 4;
    ito__dropin_unlock(&p->lock);
    struct dnode **ns = malloc(ncap * sizeof *ns), **old = NULL;
    if (!ns) ito__omp_fatal("out of memory for task dependences");
    ito__dropin_lock(&p->lock, ITO_DROPIN_LR_LEAF);
    if (!p->done && p->nsucc == p->csucc && p->csucc < ncap) {
      if (p->nsucc) memcpy(ns, p->succ, p->nsucc * sizeof *ns);
      old = p->succ;
      p->succ = ns;
      p->csucc = ncap;
      ns = NULL;
    }
    ito__dropin_unlock(&p->lock);
    free(ns);
    free(old);
    ito__dropin_lock(&p->lock, ITO_DROPIN_LR_LEAF);
  }
  if (!p->done) {
    p->succ[p->nsucc++] = n;
    __atomic_fetch_add(&n->npred, KID_ALIVE, __ATOMIC_RELAXED);
    /* the edge holds n: the predecessor reads n->t after its release, when an
     * undeferred node's creator may already be done with n */
    __atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
  }
  ito__dropin_unlock(&p->lock);
}

static void reader_add(struct dentry *d, struct dnode *n) {
  if (d->nreaders == d->creaders) {
    d->creaders = d->creaders ? 2 * d->creaders : 4;
    d->readers = realloc(d->readers, d->creaders * sizeof *d->readers);
    if (!d->readers) ito__omp_fatal("out of memory for task dependences");
  }
  __atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
  d->readers[d->nreaders++] = n;
}

/* gcc's depend array: {n, n_out, addr...} with out/inout first, or (when
 * depend[0] is 0) {0, n, n_out, n_mutexinoutset, n_in, addr...} and then
 * depobj entries, each pointing to {addr, kind}. */
enum { DEP_IN = 1, DEP_OUT = 2 };

static void dep_at(void **depend, size_t i, void **addr, int *kind) {
  if (depend[0]) {
    size_t nout = (size_t)(uintptr_t)depend[1];
    *addr = depend[2 + i];
    *kind = i < nout ? DEP_OUT : DEP_IN;
    return;
  }
  size_t nout = (size_t)(uintptr_t)depend[2], nmut = (size_t)(uintptr_t)depend[3],
         nin = (size_t)(uintptr_t)depend[4];
  if (i < nout + nmut + nin) {
    *addr = depend[5 + i];
    /* mutexinoutset runs as inout: ordered in creation order, which is one
     * of the orders the clause allows */
    *kind = i < nout + nmut ? DEP_OUT : DEP_IN;
    return;
  }
  void **obj = depend[5 + i];
  *addr = obj[0];
  *kind = (uintptr_t)obj[1] == DEP_IN ? DEP_IN : DEP_OUT;
}

static size_t dep_count(void **depend) {
  return (size_t)(uintptr_t)(depend[0] ? depend[0] : depend[1]);
}

struct dnode *ito__omp_dep_register(task *parent, void **depend, int prio) {
  struct dnode *n = calloc(1, sizeof *n);
  if (!n) ito__omp_fatal("out of memory for task dependences");
  n->prio = prio;
  __atomic_store_n(&n->refs, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&n->npred, KID_ALIVE, __ATOMIC_RELAXED);
  if (!parent->deps) {
    parent->deps = calloc(1, sizeof *parent->deps);
    if (!parent->deps) ito__omp_fatal("out of memory for task dependences");
  }
  size_t cnt = dep_count(depend);
  for (size_t i = 0; i < cnt; i++) {
    void *addr;
    int kind;
    dep_at(depend, i, &addr, &kind);
    struct dentry *d = lookup(parent->deps, addr);
    if (kind == DEP_IN) {
      if (d->last_out) add_edge(d->last_out, n);
      reader_add(d, n);
      continue;
    }
    if (d->nreaders) {
      for (unsigned r = 0; r < d->nreaders; r++) {
        add_edge(d->readers[r], n);
        node_unref(d->readers[r]);
      }
      d->nreaders = 0;
    } else if (d->last_out) {
      add_edge(d->last_out, n);
    }
    if (d->last_out) node_unref(d->last_out);
    __atomic_fetch_add(&n->refs, 1, __ATOMIC_RELAXED);
    d->last_out = n;
  }
  return n;
}

/* (each dependence counts as one unit, out and inout and mutexinoutset
 * double: OpenMP gives their addresses, not their sizes) */
int ito__omp_dep_numa(void **depend) {
  if (!ito__dropin_numa_on()) return -2;
  size_t cnt = dep_count(depend);
  struct ito_access small[16];
  struct ito_access *acc = cnt <= 16 ? small : malloc(sizeof *acc * cnt);
  if (!acc) return -1;
  for (size_t i = 0; i < cnt; i++) {
    void *addr;
    int kind;
    dep_at(depend, i, &addr, &kind);
    acc[i] = (struct ito_access){addr, 1, kind == DEP_IN ? ITO_ACCESS_IN : ITO_ACCESS_INOUT};
  }
  int node = ito_numa_node_for(acc, (int)cnt);
  if (acc != small) free(acc);
  return node;
}

/* One predecessor (or the creator) is done with n. Whoever brings npred to
 * zero makes a deferred task ready; n->t is read only then: the creator
 * stores it before its own unit goes, so a predecessor that reads it
 * earlier may find it unset yet still be the one to bring the count to
 * zero. An undeferred task's creator (n->t NULL) is woken by the count. */
static void dep_release(struct dnode *n) {
  if (ito__omp_kids_sub(&n->npred, KID_ALIVE, &n->qlock, &n->qhead, &n->qtail) && n->t)
    ito__omp_make_ready(n->t);
}

void ito__omp_dep_defer(struct dnode *n, task *t) {
  n->t = t;
  dep_release(n); /* the creator's unit: ready if nothing comes before */
}

/* The task completed: its successors lose a predecessor. */
void ito__omp_dep_complete(struct dnode *n) {
  ito__dropin_lock(&n->lock, ITO_DROPIN_LR_LEAF);
  n->done = 1;
  struct dnode **succ = n->succ;
  unsigned ns = n->nsucc;
  n->succ = NULL;
  n->nsucc = n->csucc = 0;
  ito__dropin_unlock(&n->lock);
  /* priorities: the highest first, in creation order among equals */
  for (unsigned i = 1; i < ns; i++) {
    struct dnode *x = succ[i];
    unsigned j = i;
    for (; j > 0 && succ[j - 1]->prio < x->prio; j--) succ[j] = succ[j - 1];
    succ[j] = x;
  }
  for (unsigned i = 0; i < ns; i++) {
    dep_release(succ[i]);
    node_unref(succ[i]); /* the edge's reference */
  }
  free(succ);
  node_unref(n);
}

void ito__omp_dep_wait(struct dnode *n, task *waiter) {
  ito__omp_kids_sub(&n->npred, KID_ALIVE, &n->qlock, &n->qhead, &n->qtail);
  ito__omp_word_wait(&n->npred, KID_WAIT_ALIVE, &n->qlock, &n->qhead, &n->qtail, waiter, false);
}
