/* libito-omp.so: explicit tasks, taskwait, taskgroup, dependences and
 * taskloop. docs/openmp.md. */
#include "omp_int.h"

#include <alloca.h>
#include <stdlib.h>
#include <string.h>

/* Stealable continuations on the worker's deque from which on tasks run
 * inline (docs/openmp.md, "The cut-off"). */
#define INLINE_DEPTH 8
/* Children a reduction slot holder may have queued per team member before
 * more run undeferred (libgomp: 64 queued tasks per thread). */
#define QUEUED_PER_MEMBER 64

#define TASK_FLAG_FINAL 2
#define TASK_FLAG_PRIORITY 16
#define TASK_FLAG_UP 256
#define TASK_FLAG_GRAINSIZE 512
#define TASK_FLAG_IF 1024
#define TASK_FLAG_NOGROUP 2048
#define TASK_FLAG_REDUCTION 4096
#define TASK_FLAG_DETACH 8192

/* ---- detach: completion events -----------------------------------------------------
 * The event is the task's: the handle is its address. Its state is read
 * and written under its lock only, so a fulfiller that took the lock is
 * done with the event once it lets go, and the task, which looks under
 * the same lock, cannot end (and free the event with its stack) before. */
static void event_wait(struct tevent *e) {
  ito__dropin_lock(&e->lock);
  while (e->state != EV_FULFILLED) {
    e->state = EV_WAITING;
    ito__dropin_wq_wait(&e->lock, &e->head, &e->tail, 0, CLOCK_MONOTONIC, NULL, NULL, NULL);
    ito__dropin_lock(&e->lock);
  }
  ito__dropin_unlock(&e->lock);
}

OMP_API void omp_fulfill_event(uintptr_t event) {
  struct tevent *e = (struct tevent *)event;
  if (!e) ito_omp_fatal("omp_fulfill_event: not an event of a task with detach");
  ito__dropin_lock(&e->lock);
  int s = e->state;
  if (s != EV_PENDING && s != EV_WAITING) {
    ito__dropin_unlock(&e->lock);
    ito_omp_fatal("omp_fulfill_event: the event %p was fulfilled already or is not an event "
                  "of a task with detach", (void *)e);
  }
  e->state = EV_FULFILLED;
  void *list = ito__dropin_wq_take(&e->head, &e->tail, -1);
  ito__dropin_unlock(&e->lock);
  ito__dropin_wq_wake(list);
}

/* ---- dependences ------------------------------------------------------------------
 * A task with depend clauses gets a node. Its creator's table maps each
 * address to the last task with out/inout on it and the in tasks since;
 * a new task gets an edge from each of those not yet done. npred counts, in
 * KID_ALIVE units, the predecessors not done plus one for the creator while
 * it adds edges; whoever brings it to zero starts the task (or wakes the
 * creator waiting for an undeferred one). */
struct dnode {
  int lock;
  int done;                    /* the task's code finished: no more edges to it */
  _Atomic int refs;            /* the task, table entries naming it, edges to it */
  int numa;                    /* the node of its data (-1: none known), -2: placement off
                                  (here: it fills the padding before npred) */
  _Atomic uint64_t npred;
  struct dnode **succ;
  unsigned nsucc, csucc;
  task *t;                     /* a deferred task to start when npred reaches 0 */
  int prio;                    /* its priority (a hint: among successors released together,
                                  the higher start first) */
  int qlock;                   /* an undeferred task's creator waits here */
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
  if (atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) == 1) {
    free(n->succ);
    free(n);
  }
}

static struct dentry *lookup(struct deptab *tab, void *addr) {
  if (2 * (tab->used + 1) > tab->cap) {
    size_t cap = tab->cap ? 2 * tab->cap : 64;
    struct dentry *e = calloc(cap, sizeof *e);
    if (!e) ito_omp_fatal("out of memory for task dependences");
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

void ito_omp_deptab_free(task *t) {
  deptab_free(t->deps);
  t->deps = NULL;
}

static void add_edge(struct dnode *p, struct dnode *n) {
  if (p == n) return;
  ito__dropin_lock(&p->lock);
  if (!p->done) {
    if (p->nsucc == p->csucc) {
      p->csucc = p->csucc ? 2 * p->csucc : 4;
      p->succ = realloc(p->succ, p->csucc * sizeof *p->succ);
      if (!p->succ) ito_omp_fatal("out of memory for task dependences");
    }
    p->succ[p->nsucc++] = n;
    atomic_fetch_add_explicit(&n->npred, KID_ALIVE, memory_order_relaxed);
    /* the edge holds n: the predecessor reads n->t after its release, when an
     * undeferred node's creator may already be done with n */
    atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
  }
  ito__dropin_unlock(&p->lock);
}

static void reader_add(struct dentry *d, struct dnode *n) {
  if (d->nreaders == d->creaders) {
    d->creaders = d->creaders ? 2 * d->creaders : 4;
    d->readers = realloc(d->readers, d->creaders * sizeof *d->readers);
    if (!d->readers) ito_omp_fatal("out of memory for task dependences");
  }
  atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
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

/* Registers a node for a task of parent with these dependences; returns it
 * with the creator's unit still in npred. */
static struct dnode *dep_register(task *parent, void **depend) {
  struct dnode *n = calloc(1, sizeof *n);
  if (!n) ito_omp_fatal("out of memory for task dependences");
  atomic_store_explicit(&n->refs, 1, memory_order_relaxed);
  atomic_store_explicit(&n->npred, KID_ALIVE, memory_order_relaxed);
  n->numa = -2;
  if (!parent->deps) {
    parent->deps = calloc(1, sizeof *parent->deps);
    if (!parent->deps) ito_omp_fatal("out of memory for task dependences");
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
    atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
    d->last_out = n;
  }
  return n;
}

static void task_start_deferred(task *t);

/* The node holding most of a task's dependences (docs/numa.md): OpenMP
 * gives their addresses, not their sizes, so each counts as one unit, out
 * and inout (and mutexinoutset) double. -2 while placement by node is off. */
static int dep_numa(void **depend) {
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
 * zero starts a deferred task; n->t is read only then: the creator stores
 * it before its own unit goes, so a predecessor that reads it earlier may
 * find it unset yet still be the one to bring the count to zero. An
 * undeferred task's creator (n->t NULL) is woken by the count. */
static void dep_release(struct dnode *n) {
  if (ito_omp_kids_sub(&n->npred, KID_ALIVE, &n->qlock, &n->qhead, &n->qtail) && n->t)
    task_start_deferred(n->t);
}

/* The task's code finished: its successors lose a predecessor. */
static void dep_complete(struct dnode *n) {
  ito__dropin_lock(&n->lock);
  n->done = 1;
  struct dnode **succ = n->succ;
  unsigned ns = n->nsucc;
  n->succ = NULL;
  n->nsucc = n->csucc = 0;
  ito__dropin_unlock(&n->lock);
  /* priorities: the highest first, in creation order among equals (the
   * first one started runs at once on this worker) */
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

/* Waits for the predecessors of an undeferred node (the creator's unit
 * dropped here). */
static void dep_wait(struct dnode *n) {
  ito_omp_kids_sub(&n->npred, KID_ALIVE, &n->qlock, &n->qhead, &n->qtail);
  ito_omp_word_wait(&n->npred, KID_WAIT_ALIVE, &n->qlock, &n->qhead, &n->qtail);
}

/* ---- the life of a task ---------------------------------------------------------- */

/* An explicit task's fields (the work-sharing ones are for implicit tasks
 * only and stay as they are). Those only a task with a stack of its own
 * uses (rtake, rqueued, ev, node, heap) are set where such tasks are built
 * (build_child, and run_inline for the undeferred ones that may use them). */
static inline void task_init(task *t, task *parent, int final_, int kind) {
  t->parent = parent;
  t->team = parent->team;
  t->id = parent->id;
  t->kind = (unsigned char)kind;
  t->final_ = (unsigned char)(final_ | parent->final_);
  atomic_store_explicit(&t->kids, 0, memory_order_relaxed);
  t->qlock = 0;
  t->qhead = t->qtail = NULL;
  t->tg = NULL;
  /* an inline task is over before the taskgroup can end: not counted */
  t->ingroup = kind == TASK_INLINE ? NULL : parent->tg;
  t->cgroup = parent->tg ? parent->tg : parent->cgroup;
  t->red0 = parent->tg ? parent->tg->red : parent->red0;
  t->rteam = NULL;
  t->deps = NULL;
  t->icv = parent->icv;
  t->team_num = parent->team_num;
  t->num_teams = parent->num_teams;
  t->ws = NULL;
  t->solo = NULL;
}

/* Counts a new deferred child in its parent and taskgroup; uncount_child
 * takes it back when the child runs undeferred after all. */
static void count_child(task *parent) {
  atomic_fetch_add_explicit(&parent->kids, KID_BOTH, memory_order_relaxed);
  if (parent->tg) atomic_fetch_add_explicit(&parent->tg->count, KID_ALIVE, memory_order_relaxed);
}
static void uncount_child(task *parent) {
  atomic_fetch_sub_explicit(&parent->kids, KID_BOTH, memory_order_relaxed);
  if (parent->tg) atomic_fetch_sub_explicit(&parent->tg->count, KID_ALIVE, memory_order_relaxed);
}

/* The task's code returned: dependences, then the parent's taskwait, then
 * (once its own children are over) its lifetime in taskgroup and parent. */
static void task_finish(task *t) {
  if (UNLIKELY(t->rteam)) ito_omp_red_release(t);
  if (UNLIKELY(t->ev.state != EV_NONE)) event_wait(&t->ev); /* detach: complete once fulfilled */
  if (t->node) dep_complete(t->node);
  task *p = t->parent;
  uint64_t k = atomic_load_explicit(&t->kids, memory_order_acquire);
  if ((k & (KID_RUN_MASK | KID_ALIVE_MASK)) == 0 && !t->ingroup && !t->deps) {
    ito_omp_kids_sub(&p->kids, KID_BOTH, &p->qlock, &p->qhead, &p->qtail);
    return;
  }
  ito_omp_kids_sub(&p->kids, KID_RUN, &p->qlock, &p->qhead, &p->qtail);
  ito_omp_wait_kids(t, KID_WAIT_ALIVE);
  if (t->deps) {
    deptab_free(t->deps);
    t->deps = NULL;
  }
  if (t->ingroup) ito_omp_kids_sub(&t->ingroup->count, KID_ALIVE, &p->qlock, &p->qhead, &p->qtail);
  ito_omp_kids_sub(&p->kids, KID_ALIVE, &p->qlock, &p->qhead, &p->qtail);
}

/* Entry of a task whose task and data are on its own stack. */
/* A task whose team or taskgroup was cancelled before its code began is
 * discarded: it ends at once (its dependences released, counted out). */
static inline bool discarded(task *t) {
  return UNLIKELY(ito_omp_cancellation) && ito_omp_task_cancelled(t);
}

/* ---- threadprivate in deferred tasks ----------------------------------------------------
 * With member TLS (omp_g.member_tls) a deferred task runs on a TLS block of
 * its own holding a snapshot of its creator's threadprivate variables (the
 * program's static TLS), made when it is created: it reads the values its
 * creator had then, and its writes stay its own (docs/openmp.md,
 * "threadprivate"). A task run inside its creator uses the creator's. */
static void task_tls_snapshot(task *t) {
  if (!ito_omp_member_tls()) return;
  void *b = ito__dropin_tls_block();
  if (!b) ito_omp_fatal("out of memory for the thread-local storage of a task");
  ito__dropin_tls_copy(b);
  t->tls = b;
}

static void task_tls_begin(task *t) { ito__dropin_tls_use(t->tls); }

static void task_tls_end(task *t) {
  void *was = ito__dropin_tls_use(NULL);
  ITO_OMP_ASSERT(was == t->tls);
  (void)was;
  ito__dropin_tls_free(t->tls);
  t->tls = NULL;
}

static void task_entry(void *arg) {
  task *t = arg; /* already the current task (ITO_DROPIN_CTX_COPY) */
  if (UNLIKELY(t->tls != NULL)) task_tls_begin(t);
  if (UNLIKELY(t->rqueued)) atomic_fetch_sub_explicit(&t->rqueued->rqueued, 1, memory_order_relaxed);
  if (!discarded(t)) {
    if (UNLIKELY(t->rtake)) ito_omp_red_take(t);
    t->fn(t->data);
  }
  if (UNLIKELY(t->tls != NULL)) task_tls_end(t);
  task_finish(t);
}

/* Entry of a task kept on the heap (it waited for dependences). */
static void heap_task_entry(void *arg) {
  task *t = *(task **)arg;
  ito_omp_set_cur(t);
  if (UNLIKELY(t->tls != NULL)) task_tls_begin(t);
  if (!discarded(t)) { /* (its predecessors may have been discarded too) */
    if (UNLIKELY(t->rtake)) ito_omp_red_take(t);
    t->fn(t->data);
  }
  if (UNLIKELY(t->tls != NULL)) task_tls_end(t);
  void *heap = t->heap;
  task_finish(t);
  free(heap);
}

static void task_start_deferred(task *t) {
  struct dnode *n = t->node;
  int rc = n && n->numa != -2
               ? ito__dropin_spawn_node(n->numa, heap_task_entry, &t, sizeof t, _Alignof(task *),
                                        NULL, NULL)
               : ito__dropin_spawn(heap_task_entry, &t, sizeof t, _Alignof(task *), NULL, NULL);
  if (rc) ito_omp_fatal("out of memory starting a task");
}

/* What the copy made by ito__dropin_spawn is built from. */
struct create {
  task *parent;
  int final_;
  void (*fn)(void *);
  void *data;
  void (*cpyfn)(void *, void *);
  size_t size, off;
  int bounds;                 /* taskloop: write lo, hi into the copy's first two words */
  unsigned long long lo, hi;
  uintptr_t *detach;          /* detach: where the creator wants the event's handle */
  int prio;                   /* priority, within [0, max-task-priority-var] */
  struct team *red_tm;        /* taskloop reduction: the team whose copies its tasks use */
  struct team *queued;        /* queued behind a reduction slot holder: counted there */
};

static inline void detach_init(task *t, struct create *c) {
  if (LIKELY(!c->detach)) {
    t->ev.state = EV_NONE;
    return;
  }
  t->ev.lock = 0;
  t->ev.head = t->ev.tail = NULL;
  t->ev.state = EV_PENDING;
  *c->detach = (uintptr_t)&t->ev; /* before the task's code runs */
}

static inline void copy_data(void *dst, struct create *c) {
  if (c->cpyfn)
    c->cpyfn(dst, c->data);
  else if (c->size) /* a task with no data may come with data == NULL */
    memcpy(dst, c->data, c->size);
  if (c->bounds) {
    ((unsigned long long *)dst)[0] = c->lo;
    ((unsigned long long *)dst)[1] = c->hi;
  }
}

static void build_child(void *dst, void *arg) {
  struct create *c = arg;
  task *t = dst;
  task_init(t, c->parent, c->final_, TASK_EXPLICIT);
  t->fn = c->fn;
  t->data = (char *)dst + c->off;
  copy_data(t->data, c);
  detach_init(t, c);
  t->rtake = c->red_tm;
  t->rqueued = c->queued;
  t->node = NULL;
  t->heap = NULL;
  t->tls = NULL;
  if (UNLIKELY(atomic_load_explicit(&omp_g.member_tls, memory_order_relaxed) != 0))
    task_tls_snapshot(t); /* (in the creator, before the task can run) */
}

static inline size_t data_off(size_t align) {
  if (align < _Alignof(task)) align = _Alignof(task);
  return (sizeof(task) + align - 1) & ~(align - 1);
}

/* Runs the task now, in the caller's frame (undeferred, final, or no
 * memory for a stack). */
static void run_inline(struct create *c, size_t align, struct dnode *node, void **slot) {
  task t;
  task_init(&t, c->parent, c->final_, TASK_INLINE);
  detach_init(&t, c);
  t.rtake = c->red_tm;
  void *data = c->data;
  if (c->cpyfn || c->bounds) {
    if (align < 16) align = 16;
    char *buf = alloca(c->size + align);
    data = (void *)(((uintptr_t)buf + align - 1) & ~(uintptr_t)(align - 1));
    copy_data(data, c);
  }
  if (node) dep_wait(node);
  /* the task runs on this stack, so its context word stays this one */
  if (!slot) slot = ito_omp_ctx();
  void *saved = NULL;
  if (slot) {
    saved = *slot;
    *slot = &t;
  } else {
    ito_omp_set_cur(&t);
  }
  if (!discarded(&t)) { /* (cancelled while it waited for dependences) */
    if (UNLIKELY(t.rtake)) ito_omp_red_take(&t);
    c->fn(data);
  }
  if (UNLIKELY(t.rteam)) ito_omp_red_release(&t);
  if (UNLIKELY(t.ev.state != EV_NONE)) event_wait(&t.ev);
  if (node) dep_complete(node);
  if (atomic_load_explicit(&t.kids, memory_order_relaxed)) ito_omp_wait_kids(&t, KID_WAIT_ALIVE);
  if (t.deps) deptab_free(t.deps);
  if (slot)
    *slot = saved;
  else
    ito_omp_set_cur(c->parent);
}

/* The common undeferred task, if(0) with gcc's data used in place (no
 * cpyfn), on an ito thread: run_inline's work without what such a task
 * never has (a copy, dependences, detach, a taskloop's slot). */
/* (Hidden, not static: GOMP_task's x86-64 entry jumps to it by name.) */
__attribute__((noinline, noclone, used)) void ito_omp_undeferred(void (*fn)(void *), void *data,
                                                                 int final_) {
  void **slot = ito_omp_ctx();
  task *parent = ito_omp_cur_at(slot);
  if (UNLIKELY(!slot)) { /* not an ito thread */
    struct create c = {parent, final_, fn, data, NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL};
    run_inline(&c, 1, NULL, NULL);
    return;
  }
  task t;
  task_init(&t, parent, final_, TASK_INLINE);
  void *saved = *slot;
  *slot = &t;
  if (!discarded(&t)) fn(data);
  if (UNLIKELY(t.rteam)) ito_omp_red_release(&t);
  if (UNLIKELY(atomic_load_explicit(&t.kids, memory_order_relaxed)))
    ito_omp_wait_kids(&t, KID_WAIT_ALIVE);
  if (UNLIKELY(t.deps != NULL)) deptab_free(t.deps);
  *slot = saved;
}

static void create_task(struct create *c, size_t align, bool deferred, void **depend) {
  task *parent = c->parent;
  if (!deferred || parent->final_) {
    run_inline(c, align, depend ? dep_register(parent, depend) : NULL, NULL);
    return;
  }
  c->off = data_off(align);
  size_t a = align > _Alignof(task) ? align : _Alignof(task);
  if (depend) {
    struct dnode *n = dep_register(parent, depend);
    n->prio = c->prio;
    n->numa = dep_numa(depend);
    char *blk = aligned_alloc(a < 64 ? 64 : a, (c->off + c->size + 63) & ~(size_t)63);
    if (!blk) ito_omp_fatal("out of memory for a task");
    build_child(blk, c);
    task *t = (task *)blk;
    t->heap = blk;
    t->node = n;
    n->t = t;
    count_child(parent);
    dep_release(n); /* the creator's unit: starts it if nothing comes before */
    return;
  }
  team *rt = parent->rteam;
  if (UNLIKELY(rt != NULL)) {
    /* A holder of a task reduction slot goes on with its copy and queues
     * the child (help-first, libgomp's order): run first, an in_reduction
     * child would find the slot taken, and the holder's continuation, if
     * stolen, would wait for it (reduction.c). Past QUEUED_PER_MEMBER
     * queued children per member, the child runs here, undeferred; and a
     * holder that runs undeferred itself runs all its children so (as
     * libgomp's included tasks do while its queue is full): one that queued
     * them would have to wait for them at its end, its task descriptor
     * being on its creator's stack, lending its slot, parking and taking
     * the slot back (on 2 workers, fib(25) by task reductions spent most
     * of its time there). */
    if (parent->kind == TASK_INLINE ||
        atomic_load_explicit(&rt->rqueued, memory_order_relaxed) >= QUEUED_PER_MEMBER * rt->n) {
      run_inline(c, align, NULL, NULL);
      return;
    }
    atomic_fetch_add_explicit(&rt->rqueued, 1, memory_order_relaxed);
    c->queued = rt;
  }
  count_child(parent);
  int rc = c->queued ? ito__dropin_spawn_queued(task_entry, c, c->off + c->size, a, build_child,
                                                ITO_DROPIN_CTX_COPY)
                     : ito__dropin_spawn(task_entry, c, c->off + c->size, a, build_child,
                                         ITO_DROPIN_CTX_COPY);
  if (rc) {
    if (c->queued) atomic_fetch_sub_explicit(&rt->rqueued, 1, memory_order_relaxed);
    c->queued = NULL;
    /* no memory for a stack: run it here, uncounted */
    uncount_child(parent);
    run_inline(c, align, NULL, NULL);
  }
}

/* Every task but the common undeferred one (GOMP_task's arguments). Hidden,
 * not static: the x86-64 entry below jumps to it by name. */
__attribute__((noinline, noclone, used)) void ito_omp_task_slow(
    void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size,
    long arg_align, bool if_clause, unsigned flags, void **depend, int priority, void *detach);
/* GOMP_task: undeferred (if(0)) without dependences, detach or a copy
 * function, cancellation off, goes to undeferred; everything else to
 * ito_omp_task_slow, both by a jump. In C, gcc loaded the four arguments
 * on the stack at entry and stored them back before the jump to the slow
 * path, on the fast path too (23 instructions where 11 do): on x86-64 the
 * test is written out, reading only flags from the stack (flags & 8:
 * dependences; TASK_FLAG_DETACH; TASK_FLAG_FINAL is bit 1). */
#if defined(__x86_64__)
_Static_assert(TASK_FLAG_FINAL == 2 && (8 | TASK_FLAG_DETACH) == 0x2008, "GOMP_task's entry");
#ifdef __CET__
#define ENDBR "endbr64\n\t"
#else
#define ENDBR ""
#endif
__asm__(".text\n\t"
        ".globl GOMP_task\n\t"
        ".type GOMP_task, @function\n\t"
        ".p2align 4\n"
        "GOMP_task:\n\t" ENDBR
        "testb %r9b, %r9b\n\t"          /* if_clause */
        "jne 1f\n\t"
        "testq %rdx, %rdx\n\t"          /* cpyfn */
        "jne 1f\n\t"
        "movl 8(%rsp), %eax\n\t"        /* flags */
        "testl $0x2008, %eax\n\t"
        "jne 1f\n\t"
        "cmpl $0, ito_omp_cancellation(%rip)\n\t"
        "jne 1f\n\t"
        "shrl %eax\n\t"
        "andl $1, %eax\n\t"
        "movl %eax, %edx\n\t"           /* final_ */
        "jmp ito_omp_undeferred\n"
        "1:\n\t"
        "jmp ito_omp_task_slow\n\t"
        ".size GOMP_task, .-GOMP_task");
#undef ENDBR
#else
OMP_API void GOMP_task(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                       long arg_size, long arg_align, bool if_clause, unsigned flags,
                       void **depend, int priority, void *detach) {
  if (!if_clause && !(flags & (8 | TASK_FLAG_DETACH)) && LIKELY(!cpyfn) &&
      !UNLIKELY(ito_omp_cancellation)) {
    ito_omp_undeferred(fn, data, (flags & TASK_FLAG_FINAL) != 0);
    return;
  }
  ito_omp_task_slow(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority,
                    detach);
}
#endif

void ito_omp_task_slow(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                       long arg_size, long arg_align, bool if_clause, unsigned flags,
                       void **depend, int priority, void *detach) {
  void **slot = ito_omp_ctx();
  task *parent = ito_omp_cur_at(slot);
  /* in a cancelled region or taskgroup a new task is discarded at once */
  if (UNLIKELY(ito_omp_cancellation) && ito_omp_create_cancelled(parent)) return;
  size_t align = arg_align > 0 ? (size_t)arg_align : 1;
  struct create c = {parent, (flags & TASK_FLAG_FINAL) != 0, fn, data, cpyfn,
                     (size_t)arg_size, 0, 0, 0, 0, NULL, 0, NULL, NULL};
  if (!if_clause && !(flags & (8 | TASK_FLAG_DETACH))) {
    run_inline(&c, align, NULL, slot);
    return;
  }
  if (UNLIKELY((flags & TASK_FLAG_DETACH) && detach)) c.detach = (uintptr_t *)detach;
  if (UNLIKELY((flags & TASK_FLAG_PRIORITY) && priority > 0))
    c.prio = priority < omp_g.max_task_priority ? priority : omp_g.max_task_priority;
  /* The cut-off (docs/openmp.md): while this worker's deque already holds
   * INLINE_DEPTH continuations idle workers can take, a deferrable task
   * without dependences runs here as a call (an undeferred task). Never a
   * task with detach: its creator may be the one to fulfill the event. */
  if (LIKELY(if_clause && !(flags & (8 | TASK_FLAG_DETACH)) && !parent->final_) &&
      ito__dropin_stealable() >= INLINE_DEPTH) {
    if (LIKELY(!cpyfn))
      ito_omp_undeferred(fn, data, c.final_);
    else
      run_inline(&c, align, NULL, slot);
    return;
  }
  create_task(&c, align, if_clause, (flags & 8) ? depend : NULL);
}

OMP_API void GOMP_taskwait(void) {
  task *t = ito_omp_cur_at(ito_omp_ctx());
  if (atomic_load_explicit(&t->kids, memory_order_acquire) & KID_RUN_MASK)
    ito_omp_wait_kids(t, KID_WAIT_RUN);
}

OMP_API void GOMP_taskwait_depend(void **depend) {
  task *t = ito_omp_cur();
  struct dnode *n = dep_register(t, depend);
  dep_wait(n);
  dep_complete(n);
}

OMP_API void GOMP_taskyield(void) { ito_yield(); }

OMP_API void GOMP_taskgroup_start(void) {
  task *t = ito_omp_cur();
  struct taskgroup *g = malloc(sizeof *g);
  if (!g) ito_omp_fatal("out of memory for a taskgroup");
  g->prev = t->tg;
  g->red = t->tg ? t->tg->red : t->red0;
  atomic_store_explicit(&g->count, 0, memory_order_relaxed);
  atomic_store_explicit(&g->cancelled, 0, memory_order_relaxed);
  g->workshare = 0;
  t->tg = g;
}

OMP_API void GOMP_taskgroup_end(void) {
  task *t = ito_omp_cur();
  struct taskgroup *g = t->tg;
  if (!g) ito_omp_fatal("GOMP_taskgroup_end without GOMP_taskgroup_start");
  ito_omp_word_wait(&g->count, KID_WAIT_ALIVE, &t->qlock, &t->qhead, &t->qtail);
  t->tg = g->prev;
  free(g);
}

/* ---- taskloop ----------------------------------------------------------------------- */

static void taskloop(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                     long arg_size, long arg_align, unsigned flags, unsigned long num_tasks,
                     bool up, unsigned long long start, unsigned long long end,
                     unsigned long long step, bool is_signed) {
  unsigned long long d;
  bool empty = up ? (is_signed ? (long long)start >= (long long)end : start >= end)
                  : (is_signed ? (long long)start <= (long long)end : start <= end);
  unsigned long long a = up ? step : -step;
  d = up ? end - start : start - end;
  unsigned long long niter = empty ? 0 : d / a + (d % a != 0);
  task *parent = ito_omp_cur();
  bool group = !(flags & TASK_FLAG_NOGROUP);
  /* reductions: the array gcc registers is the third word of the data (after
   * the bounds); its d[2] left 0 tells the caller nothing was registered */
  uintptr_t *red = (flags & TASK_FLAG_REDUCTION) && group ? ((uintptr_t **)data)[2] : NULL;
  if (red && (!niter || (UNLIKELY(ito_omp_cancellation) && ito_omp_create_cancelled(parent)))) {
    red[2] = 0;
    return;
  }
  if (group) GOMP_taskgroup_start();
  if (red) GOMP_taskgroup_reduction_register(red);
  if (niter) {
    unsigned long long ntasks;
    if (flags & TASK_FLAG_GRAINSIZE) {
      ntasks = num_tasks ? niter / num_tasks : niter;
      if (!ntasks) ntasks = 1;
    } else if (num_tasks) {
      ntasks = num_tasks < niter ? num_tasks : niter;
    } else {
      unsigned long long want = 4ULL * (unsigned long long)ito_num_workers();
      ntasks = want < niter ? want : niter;
    }
    unsigned long long q = niter / ntasks, r = niter % ntasks, at = 0;
    for (unsigned long long i = 0; i < ntasks; i++) {
      /* cancelled (by one of its own tasks, say): the rest are discarded */
      if (UNLIKELY(ito_omp_cancellation) && ito_omp_create_cancelled(parent)) break;
      unsigned long long len = q + (i < r);
      struct create c = {parent, (flags & TASK_FLAG_FINAL) != 0, fn, data, cpyfn,
                         (size_t)arg_size, 0, 1, start + at * step, 0, NULL, 0,
                         red ? ito_omp_ws_team(parent) : NULL, NULL};
      at += len;
      c.hi = at == niter ? end : start + at * step;
      create_task(&c, arg_align > 0 ? (size_t)arg_align : 1, (flags & TASK_FLAG_IF) != 0, NULL);
    }
  }
  if (group) GOMP_taskgroup_end();
}

OMP_API void GOMP_taskloop(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                           long arg_size, long arg_align, unsigned flags, unsigned long num_tasks,
                           int priority, long start, long end, long step) {
  (void)priority;
  taskloop(fn, data, cpyfn, arg_size, arg_align, flags, num_tasks, step > 0,
           (unsigned long long)start, (unsigned long long)end, (unsigned long long)step, true);
}

OMP_API void GOMP_taskloop_ull(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                               long arg_size, long arg_align, unsigned flags,
                               unsigned long num_tasks, int priority, unsigned long long start,
                               unsigned long long end, unsigned long long step) {
  (void)priority;
  taskloop(fn, data, cpyfn, arg_size, arg_align, flags, num_tasks, (flags & TASK_FLAG_UP) != 0,
           start, end, step, false);
}
