/* Lightweight threads: creation runs the child at once (work-first) and
 * leaves the parent's context in the deque for thieves; join, detach,
 * exit and yield. Invariants at the top of thread.h; design in
 * docs/scheduler.md, "Threads". */
#define _GNU_SOURCE
#include "thread.h"
#include "forkpart.h"

#include "monitor.h"
#include "nodeq.h"

#include "handle.h"
#include "hooks.h"
#include "runtime.h"
#include "sched.h"
#include "wait.h"
#include "posix_hooks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- descriptors ------------------------------------------------------------------------ */

static ithread *thread_init(fiber *f) {
  ithread *t = &f->th;
  t->flags = 0;
  t->sync = TS_RUNNING;
  t->joiner = NULL;
  t->result = NULL;
  t->keys = NULL;
  t->pin = 0;
  t->joining = NULL;
  t->joining_w = NULL;
  f->thread = t;
  return t;
}

/* The thread is over and nobody will look at it again: its handles fail
 * from now on, and the fiber goes back. It is left as a fresh descriptor
 * (fiber.h, invariant 3) so that the lazy ito_create need not initialise
 * it; the generation moves first (thread.h, invariant 2). */
static inline void thread_release(ithread *t) {
  ITO_ASSERT(t->sync == TS_CLAIMED || (t->flags & TH_DETACHED));
  fiber *f = fiber_of_thread(t);
  /* the creator's record in the header may still be being copied by the
   * worker that took it (fiber.h, invariant 4): a few instructions away */
  while (UNLIKELY(__atomic_load_n(&f->create_worker, __ATOMIC_ACQUIRE))) cpu_relax();
  if (t->keys) {
    ito__keys_free(t->keys);
    t->keys = NULL;
  }
  if (UNLIKELY(f->tls)) ito__tls_thread_release(f); /* reset for the next thread */
  if (f->kind == FIBER_USER) {
    ito__vg_stack_deregister(f->vg_stack);
    ito__handle_unregister(t); /* the memory is the caller's again */
  } else
    ito__handle_retire(t);
  __atomic_store_n(&t->flags, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&t->sync, TS_RUNNING, __ATOMIC_RELEASE);
  __atomic_store_n(&t->joiner, NULL, __ATOMIC_RELAXED); /* an anonymous thread's mark */
  t->detach_refs = 0;
  t->pin = 0;
  t->name[0] = 0;
  t->policy = t->prio = t->explicit_sched = 0;
  f->in_handler = 0; /* (a thread that ended inside a handler: pthread_exit) */
  if (UNLIKELY(ito__sig_on)) ito__sig_thread_release(t);
  worker *w = cur_worker();
  fiber_put(w ? &w->fibers : NULL, f);
}

/* ---- counting threads (invariant 4) ---------------------------------------------------- */

static unsigned long created_outside, ended_outside;

static inline void count_created(worker *w) {
  if (w)
    STORE_RLX(&w->created, w->created + 1);
  else
    __atomic_fetch_add(&created_outside, 1, __ATOMIC_RELAXED);
}

/* Release: a reader that sees this end also sees every creation that
 * happened before it (invariant 4). */
static inline void count_ended(worker *w) {
  if (w)
    __atomic_store_n(&w->ended, w->ended + 1, __ATOMIC_RELEASE);
  else
    __atomic_fetch_add(&ended_outside, 1, __ATOMIC_RELEASE);
}

long ito__live_threads(void) {
  unsigned long ended = __atomic_load_n(&ended_outside, __ATOMIC_ACQUIRE);
  int n = LOAD_ACQ(&ito__slots_counted);
  for (int i = 0; i < n; i++) ended += __atomic_load_n(&ito__workers[i]->ended, __ATOMIC_ACQUIRE);
  return (long)(ito__threads_created() - ended);
}

unsigned long ito__threads_created(void) {
  unsigned long created = __atomic_load_n(&created_outside, __ATOMIC_RELAXED);
  int n = LOAD_ACQ(&ito__slots_counted);
  for (int i = 0; i < n; i++) created += LOAD_RLX(&ito__workers[i]->created);
  return created;
}

/* ---- the end of a thread and its join ------------------------------------------------------
 * The ending side stores EXITING and then loads joiner with only a compiler
 * barrier; the parking side stores joiner, runs the heavy barrier, then
 * loads sync. So at least one sees the other, and a compare-and-swap on
 * joiner settles who wakes (or frees) whom when both do. The common case
 * (the thread ended before the join) has no atomic read-modify-write at
 * all. As with pthread_join, two simultaneous joins of one thread are
 * undefined. */

/* A thread detached while running has two references, the detacher's and
 * its own end's; one created detached has only the latter. The last frees. */
static inline void drop_detach_ref(ithread *t) {
  int left = __atomic_sub_fetch(&t->detach_refs, 1, __ATOMIC_ACQ_REL);
  ITO_ASSERT(left >= 0);
  if (left == 0) thread_release(t);
}

void ito__thread_done(ithread *t) {
  /* TH_ANON is set at birth and never changes, but ito_detach may store to
   * the flags of a handle's thread as it ends: read them atomically */
  if (__atomic_load_n(&t->flags, __ATOMIC_RELAXED) & TH_ANON) { /* nobody to tell */
    thread_release(t);
    return;
  }
  ITO_ASSERT(LOAD_RLX(&t->sync) == TS_RUNNING);
  __atomic_store_n(&t->sync, TS_EXITING, __ATOMIC_RELAXED);
  owner_barrier();
  waiter *j = __atomic_load_n(&t->joiner, __ATOMIC_ACQUIRE);
  if (j &&
      __atomic_compare_exchange_n(&t->joiner, &j, NULL, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    if (j == JOINER_DETACHED) {
      drop_detach_ref(t);
      return;
    }
    __atomic_store_n(&t->sync, TS_DONE, __ATOMIC_RELEASE);
    ito__wake_waiter(j);
    return;
  }
  __atomic_store_n(&t->sync, TS_DONE, __ATOMIC_RELEASE);
}

/* The parking side: returns 1 if j is parked and the ending thread will
 * take it, 0 if the thread is already ending (j was taken back). */
static int park_joiner(ithread *t, waiter *j) {
  /* release: the ending thread that takes j reads what the joiner wrote in it */
  __atomic_store_n(&t->joiner, j, __ATOMIC_RELEASE);
  ito__heavy_barrier();
  if (__atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) == TS_RUNNING) return 1;
  waiter *expect = j;
  return !__atomic_compare_exchange_n(&t->joiner, &expect, NULL, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED);
}

static void wait_done(ithread *t) {
  while (__atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) != TS_DONE) cpu_relax();
}

static void thread_done_post(void *t) { ito__thread_done(t); }

/* Takes the creator's record back if it is still at the tail of this
 * worker's deque (nobody took it). */
static inline bool reclaim_creator(worker *w, fiber *f) {
  if (__atomic_load_n(&f->create_worker, __ATOMIC_RELAXED) != w ||
      !dq_take_back(&w->dq, f->create_idx, (uintptr_t)&f->start | ENT_CREATE))
    return false;
  f->create_worker = NULL; /* nobody else reads the record (fiber.h, invariant 4) */
  HOOK(ITO_EV_CREATE_BACK, w->id, f, 0);
  return true;
}

/* A thread started by ito_create ends away from its first frame (ito_exit):
 * if its creator's record is still ours, continue the creator right here
 * (its stack is untouched); otherwise return and let the caller go to the
 * scheduler. */
static void resume_creator(worker *w, fiber *f) {
  if (!reclaim_creator(w, f)) return;
  fiber *parent = f->start.fiber;
  w->cur = parent;
  w->post_fn = thread_done_post;
  w->post_arg = f->thread;
  enter_fiber(parent);
  ito__vg_resume_at(rec_sp(&f->start));
  ito__resume(&f->start, rec_sp(&f->start));
}

static void thread_ended_in_child(void); /* (fork, below) */
/* The thread's function returned (or it called ito_exit); returns the worker
 * it now runs on (destructors may have moved it). */
static inline worker *thread_end(ithread *t, void *result) {
  /* a signal sent while it ran (its worker was nudged, and the thread got
   * here first) is delivered before it ends, as the kernel delivers one at
   * a thread's next entry to the kernel on its way out */
  if (UNLIKELY(ito__sig_on) && (LOAD_ACQ(&t->sigpend) & ~t->sigmask)) ito__sig_deliver();
  if (t->keys) ito__run_key_destructors(t);
  if (UNLIKELY(ito__tls_mode)) ito__tls_thread_end(cur_worker()->cur); /* thread_local dtors */
  if (UNLIKELY(ito__sig_on)) ito__sig_thread_end(t);                   /* (its code is over) */
  t->result = result;
  worker *w = cur_worker();
  HOOK(ITO_EV_EXIT, w->id, t, 0);
  count_ended(w);
  if (UNLIKELY(LOAD_RLX(&ito__forked))) thread_ended_in_child();
  return w;
}

/* Ends the running thread from anywhere on its stack (ito_exit, and threads
 * not started by the lazy ito_create). */
static void thread_finish(void *result) __attribute__((noreturn));
static void thread_finish(void *result) {
  worker *w = cur_worker();
  ithread *t = w->cur->thread;
  w = thread_end(t, result);
  fiber *f = w->cur;
  if (__atomic_load_n(&f->create_worker, __ATOMIC_RELAXED)) resume_creator(w, f);
  ito__exit_fiber(w, f);
}

static void thread_entry(void *arg) {
  (void)arg;
  if (ASAN_ON) ito__asan_finish(NULL);
  worker *w = cur_worker();
  ito__run_post(w);
  ithread *t = w->cur->thread;
  /* what it took from the process at its start (signal.h) */
  if (UNLIKELY(ito__sig_on) && (LOAD_ACQ(&t->sigpend) & ~t->sigmask)) ito__sig_deliver();
  thread_finish(t->fn(t->arg));
}

/* ---- creation -------------------------------------------------------------------------------- */

static void push_parent_post(void *parent) { ito__push_fiber(cur_worker(), parent); }

/* Placement by data (nodeq.h, invariants 3 and 4), with more than one node
 * in use: f's node is its data's, else its creator's. True if f goes to a
 * node queue: its node is known and it is not the creator's worker's, or
 * it was to be queued anyway. Otherwise it is counted now (where it runs:
 * on the creator's worker, or queued there). */
static bool place_by_node(worker *w, fiber *f, const struct thread_opts *o, bool *queue) {
  int node = o->placed == PLACED_KNOWN ? o->node : w && w->cur ? fiber_node(w->cur) : -1;
  fiber_set_node(f, node);
  f->placed = (uint8_t)o->placed;
  if (node >= 0 && !f->home && (*queue || ito__nodeq_worker_node(w->id) != node)) return true;
  ito__nodeq_count_run(w, f);
  return false;
}

/* A task: detached from birth, never handed out, never a taker of a
 * process signal nor preempted (TH_ANON). */
static inline void mark_anon(ithread *t) {
  t->joiner = JOINER_DETACHED;
  t->detach_refs = 1;
  t->flags = TH_DETACHED | TH_ANON;
  t->preempt = 0; /* (a team member that ended abnormally may have left it set) */
}

int ito__thread_start(fiber *f, void *(*fn)(void *), void *arg, const struct thread_opts *o,
                      ithread **out, ito_thread_t *hout) {
  worker *w = cur_worker();
  ithread *t = thread_init(f);
  t->fn = fn;
  t->arg = arg;
  if (UNLIKELY(ito__sig_on))
    ito__sig_thread_begin(t, o->has_sigmask ? &o->sigmask : NULL, !o->anon);
  if (UNLIKELY(LOAD_RLX(&ito__forked))) ito__monitor_restart();
  if (o->anon) {
    mark_anon(t); /* (as the fast spawn marks its tasks) */
  } else if (o->detached) {
    t->joiner = JOINER_DETACHED;
    t->detach_refs = 1;
    t->flags = TH_DETACHED;
  }
  t->policy = o->policy; /* explicit, or its creator's (the drop-in's) */
  t->prio = o->prio;
  t->explicit_sched = o->explicit_sched;
  if (UNLIKELY(ito__tls_mode) && !o->anon && ito__tls_thread_begin(f)) {
    if (UNLIKELY(ito__sig_on)) { /* what it took of the process's goes back */
      ito__sig_thread_end(t);
      ito__sig_thread_release(t);
    }
    if (f->kind == FIBER_USER) {
      ito__vg_stack_deregister(f->vg_stack);
      ito__handle_unregister(t); /* the caller's memory, as it was */
    } else {
      ito__fiber_free(w ? &w->fibers : NULL, f);
    }
    return EAGAIN;
  }
  f->sp = ito__ctx_make(f->hi, thread_entry);
  count_created(w);
  *out = t;
  if (hout) *hout = ito__handle(t);                /* before the child runs: it may read it */
  HOOK(ITO_EV_CREATE, w ? w->id : -1, t, o->anon); /* (1: a task or a child, not a thread) */
  bool queue = o->queue || !w || !w->cur || w->cur->home; /* a creator with a home must not move */
  if (UNLIKELY(LOAD_RLX(&ito__nodeq_on)) && place_by_node(w, f, o, &queue)) {
    ito__ready(f); /* to its node's queue (sched.c) */
    return 0;
  }
  if (queue) {
    ito__ready(f);
    return 0;
  }
  /* work-first: the child runs now; the parent is published once its
   * context is saved (by push_parent_post, on the child's stack) */
  fiber *me = w->cur;
  w->post_fn = push_parent_post;
  w->post_arg = me;
  ito__switch(w, me, f, 0);
  return 0;
}

/* The slower creation: a context of its own, the parent published by a
 * switch (or the child queued when the caller is not an ito thread). */
static int create_slow(void *(*fn)(void *), void *arg, ito_thread_t *out) {
  worker *w = cur_worker();
  fiber *f = ito__fiber_alloc(w ? &w->fibers : NULL);
  if (!f) return EAGAIN;
  ithread *t;
  struct thread_opts o = {0};
  return ito__thread_start(f, fn, arg, &o, &t, out);
}

int ito_create_near(void *(*fn)(void *), void *arg, const struct ito_access *acc, int n,
                    ito_thread_t *out) {
  if (!fn || n < 0 || (n > 0 && !acc)) return EINVAL;
  for (int i = 0; i < n; i++)
    if (acc[i].mode < ITO_ACCESS_IN || acc[i].mode > ITO_ACCESS_INOUT) return EINVAL;
  if (UNLIKELY(!ito__running())) {
    int rc = ito__ensure();
    if (rc) return rc;
  }
  if (!LOAD_RLX(&ito__nodeq_on) || n == 0) return ito_create(fn, arg, out);
  worker *w = cur_worker();
  int node = ito__nodeq_score(acc, n, w ? ito__nodeq_worker_node(w->id) : -1);
  fiber *f = ito__fiber_alloc(w ? &w->fibers : NULL);
  if (!f) return EAGAIN;
  struct thread_opts o = {.placed = node >= 0 ? PLACED_KNOWN : PLACED_UNKNOWN, .node = node};
  ithread *t;
  return ito__thread_start(f, fn, arg, &o, &t, out);
}

/* First frame of a thread started by ito_create, on its own stack: publish
 * the creator's continuation, run the thread, and return to ito__spawn_on
 * (which goes back to the creator) if the continuation is still ours. */
static void create_body(void *p, void *fnp, void *arg) {
  fiber *f = p;
  void *(*fn)(void *) = (void *(*)(void *))fnp;
  if (ASAN_ON) ito__asan_finish(NULL);
  worker *w = cur_worker();
  f->start.fiber = w->cur;
  uint64_t t = dq_tail(&w->dq);
  f->create_worker = w;
  f->create_idx = t;
  w->cur = f;
  dq_put(&w->dq, t, (uintptr_t)&f->start | ENT_CREATE);
  publish(w, false);
  ithread *th = f->thread;
  void *ret = fn(arg);  /* fn and arg came in registers, not through th */
  ito__lock_handoff(0); /* (a thread ends holding no lock: docs/locks.md) */
  w = thread_end(th, ret);
  if (reclaim_creator(w, f)) {
    fiber *parent = f->start.fiber;
    w->cur = parent;
    enter_fiber(parent); /* the return below switches back to the creator's stack */
    return;
  }
  ito__switch_to_sched(w, ACT_EXIT, NULL);
}

/* Back on the creator's stack after create_body returned: the thread's
 * fiber is no longer in use. */
void ito__spawn_done(struct ito_rec *rec) {
  if (ASAN_ON) ito__asan_finish(NULL);
  fiber *f = (fiber *)((char *)rec - offsetof(fiber, start));
  ito__thread_done(f->thread);
}

/* Work-first creation without a context switch: the creator's registers go
 * into a record in the child's fiber, the child starts with a plain call on
 * its own stack, and the creator is resumed from the record when the child
 * ends, blocks or a thief takes the record (docs/scheduler.md). */
int ito_create(void *(*fn)(void *), void *arg, ito_thread_t *out) {
  if (!fn) return EINVAL;
  if (UNLIKELY(!ito__running())) {
    int rc = ito__ensure();
    if (rc) return rc;
  }
  worker *w = cur_worker();
  if (UNLIKELY(!w || !w->cur || w->cur->home)) return create_slow(fn, arg, out);
  /* capacity: checked when the tail is a multiple of DEQUE_MARGIN, as the
   * assembly fork does (deque.h, invariant 3) */
  if (UNLIKELY(dq_full_at_margin(&w->dq, dq_tail(&w->dq)))) return create_slow(fn, arg, out);
  fiber *f = fiber_get(&w->fibers);
  if (!f) return EAGAIN;
  if (UNLIKELY(ito__tls_mode) && ito__tls_thread_begin(f)) {
    ito__fiber_free(&w->fibers, f);
    return EAGAIN;
  }
  ithread *t = &f->th; /* fresh: fiber.h, invariant 3 */
  ITO_ASSERT(!t->flags && t->sync == TS_RUNNING && !t->joiner && !t->keys && !t->pin);
  f->thread = t;
  f->node1 = w->cur->node1; /* its creator's node (nodeq.h, invariant 3) */
  f->placed = PLACED_NONE;
  t->fn = fn;                  /* (not called through it: for debuggers, debug.c) */
  if (UNLIKELY(ito__sig_on)) { /* the creator's signal mask (signal.h) */
    t->sigmask = t->osmask = w->cur->thread ? w->cur->thread->sigmask : w->os_sigmask;
    STORE_REL(&t->sig_live, 1);
    if (UNLIKELY(LOAD_RLX(&ito__forked))) ito__monitor_restart();
  }
  count_created(w);
  if (out) *out = ito__handle(t); /* before the child runs: it may read it */
  HOOK(ITO_EV_CREATE, w->id, t, 0);
  enter_fiber(f);
  ito__spawn_on(&f->start, (void *)((uintptr_t)f->hi & ~(uintptr_t)15), create_body, f, (void *)fn,
                arg);
  return 0;
}

/* ---- detached spawns ----------------------------------------------------------------------------
 * On the fast path (an ito thread with room in its deque) the copy of the
 * argument sits at the top of the child's own stack, below it a small
 * closure for spawn_entry, and the child starts work-first like
 * ito_create's; otherwise the copy is on the heap and the child queued. */
struct spawn_closure {
  void (*fn)(void *);
  void *data;
  void *heap; /* freed after fn returns (the slow path's copy) */
};

static void *spawn_entry(void *p) {
  struct spawn_closure *c = p;
  void (*fn)(void *) = c->fn;
  void *heap = c->heap;
  fn(c->data);
  free(heap);
  return NULL;
}

static void copy_arg(void *dst, const void *arg, size_t size, void (*cpy)(void *, void *)) {
  if (cpy)
    cpy(dst, (void *)arg);
  else if (size)
    memcpy(dst, arg, size);
}

/* placed, node: a task with data (thread_opts) */
static int spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                 void (*cpy)(void *, void *), void *ctx, int home, int placed, int node) {
  if (UNLIKELY(!ito__running())) {
    int rc = ito__ensure();
    if (rc) return rc;
  }
  if (align < 16) align = 16;
  worker *w = cur_worker();
  bool remote = false; /* placed on another node than the caller's worker's */
  if (UNLIKELY(placed)) {
    int nd = placed == PLACED_KNOWN ? node : w && w->cur ? fiber_node(w->cur) : -1;
    remote = nd >= 0 && (!w || ito__nodeq_worker_node(w->id) != nd);
  }
  if (LIKELY(home == -1 && !remote && w && w->cur && parkable(w) && !w->cur->home && size <= 4096 &&
             align <= 4096 && !dq_full_at_margin(&w->dq, dq_tail(&w->dq)))) {
    fiber *f = fiber_get(&w->fibers);
    if (!f) return EAGAIN;
    uintptr_t top = (uintptr_t)f->hi & ~(uintptr_t)15;
    void *data = (void *)((top - size) & ~(uintptr_t)(align - 1));
    struct spawn_closure *c =
        (struct spawn_closure *)(((uintptr_t)data - sizeof *c) & ~(uintptr_t)15);
    copy_arg(data, arg, size, cpy);
    c->fn = fn;
    c->data = data;
    c->heap = NULL;
    ithread *t = &f->th; /* fresh: fiber.h, invariant 3 */
    f->thread = t;
    f->ctx = ctx == THREAD_CTX_COPY ? data : ctx;
    f->node1 = w->cur->node1; /* its creator's node (nodeq.h, invariant 3) */
    f->placed = (uint8_t)placed;
    if (UNLIKELY(placed)) {
      if (placed == PLACED_KNOWN) fiber_set_node(f, node);
      ito__nodeq_count_run(w, f);
    }
    mark_anon(t);
    count_created(w);
    HOOK(ITO_EV_CREATE, w->id, t, 1);
    enter_fiber(f);
    ito__spawn_on(&f->start, c, create_body, f, (void *)spawn_entry, c);
    return 0;
  }
  /* the closure and the copy on the heap, the child queued (or run by a
   * worker when the caller is not an ito thread) */
  size_t off = (sizeof(struct spawn_closure) + align - 1) & ~(align - 1);
  char *blk = aligned_alloc(align, (off + size + align - 1) & ~(align - 1));
  if (!blk) return EAGAIN;
  struct spawn_closure *c = (struct spawn_closure *)blk;
  copy_arg(blk + off, arg, size, cpy);
  c->fn = fn;
  c->data = blk + off;
  c->heap = blk;
  fiber *f = ito__fiber_alloc(w ? &w->fibers : NULL);
  if (!f) {
    free(blk);
    return EAGAIN;
  }
  f->ctx = ctx == THREAD_CTX_COPY ? c->data : ctx;
  if (home >= 0) {
    f->home = ito__workers[home];
    ito__set_homes();
  }
  ithread *t;
  struct thread_opts o = {
      .detached = 1,
      .queue = (w && w->cur && !parkable(w)) || home != -1 || size > 4096 || align > 4096,
      .anon = 1,
      .placed = placed,
      .node = node,
  };
  return ito__thread_start(f, spawn_entry, c, &o, &t, NULL);
}

int ito__thread_spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                      void (*cpy)(void *, void *), void *ctx, int home) {
  return spawn(fn, arg, size, align, cpy, ctx, home, PLACED_NONE, -1);
}

int ito__thread_spawn_node(void (*fn)(void *), const void *arg, size_t size, size_t align,
                           void (*cpy)(void *, void *), void *ctx, int node) {
  if (!LOAD_RLX(&ito__nodeq_on)) return spawn(fn, arg, size, align, cpy, ctx, -1, PLACED_NONE, -1);
  return spawn(fn, arg, size, align, cpy, ctx, -1, node >= 0 ? PLACED_KNOWN : PLACED_UNKNOWN, node);
}

/* ---- join, detach, exit, yield --------------------------------------------------------------- */

#define JOIN_CANCELLABLE 1 /* the joiner's waiter tag */

/* Takes joiner waiter j of t back for a cancellation (ECANCELED) or a
 * signal's handler (EINTR): true if it was still t's joiner (then nobody
 * else wakes it). */
static bool join_take_back(ithread *t, waiter *j, int result) {
  waiter *expect = j;
  if (!__atomic_compare_exchange_n(&t->joiner, &expect, NULL, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_RELAXED))
    return false;
  j->result = result;
  return true;
}

static bool cancel_due(const ithread *t) {
  return (LOAD_ACQ(&t->cancel) & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_ACTING)) ==
         CANCEL_PENDING;
}

/* A signal the thread takes is pending (its handler runs during a join). */
static bool signal_due(const ithread *t) {
  return UNLIKELY(ito__sig_on) && (LOAD_ACQ(&t->sigpend) & ~LOAD_RLX(&t->sigmask));
}

static void join_interrupt(ithread *j, int result) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the request before the joiner (join_post) */
  spin_lock(&j->ilock, LR_ILOCK);
  ithread *t = j->joining;
  waiter *jw = j->joining_w;
  bool mine = t && join_take_back(t, jw, result);
  spin_unlock(&j->ilock);
  if (mine) ito__ready(jw->fiber); /* (its park may still run: the joiner waits on parking) */
}

void ito__join_cancel(ithread *j) { join_interrupt(j, ECANCELED); }

bool ito__join_signal(ithread *j) {
  if (!LOAD_ACQ(&j->joining)) return false;
  join_interrupt(j, EINTR);
  return true;
}

/* Runs on the scheduler once the joiner's context is saved. */
static void join_post(void *p) {
  ithread *t = p;
  fiber *me = cur_worker()->sched_from;
  int parked = park_joiner(t, &me->w);
  /* a cancellation that came before the joiner was there (ito__join_cancel
   * found none): the heavy barrier in park_joiner orders the two */
  if (parked && me->w.tag == JOIN_CANCELLABLE) {
    if (cancel_due(me->thread) && join_take_back(t, &me->w, ECANCELED))
      parked = 0;
    else if (signal_due(me->thread) && join_take_back(t, &me->w, EINTR))
      parked = 0;
  }
  /* from here on this side touches neither t nor me: the joiner, resumed by
   * the ending thread, may free t once it sees this (invariant 3) */
  __atomic_store_n(&me->w.parking, 0, __ATOMIC_RELEASE);
  if (!parked) ito__ready(me);
}

/* The joined thread is still running: wait for it. Returns 0 or an error. */
static __attribute__((noinline)) int join_wait(ithread *t, bool cancellable) {
again:
  if (__atomic_load_n(&t->joiner, __ATOMIC_RELAXED)) return EINVAL; /* detached or joined */
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread == t) return EDEADLK;
  if (parkable(w)) {
    fiber *me = w->cur;
    ithread *self = me->thread;
    cancellable = cancellable && self;
    memset(&me->w, 0, sizeof me->w);
    me->w.fiber = me;
    me->w.parking = 1;
    if (self) self->sig_self = 1; /* (below, once join_post is done with the waiter) */
    if (cancellable) {
      me->w.tag = JOIN_CANCELLABLE;
      spin_lock(&self->ilock, LR_ILOCK);
      self->joining = t;
      self->joining_w = &me->w;
      spin_unlock(&self->ilock);
    }
    ito__suspend(ACT_BLOCK, NULL, join_post, t);
    /* the ending thread may resume us while join_post still reads t */
    while (__atomic_load_n(&me->w.parking, __ATOMIC_ACQUIRE)) cpu_relax();
    int res = me->w.result;
    if (cancellable) { /* t stays valid while joining names it: nobody claims it */
      spin_lock(&self->ilock, LR_ILOCK);
      self->joining = NULL;
      self->joining_w = NULL;
      spin_unlock(&self->ilock);
    }
    /* signals sent meanwhile, now that nothing reads the waiter (a
     * handler may wait, with it) */
    if (self) self->sig_self = 0;
    if (UNLIKELY(ito__sig_on) && self && (LOAD_ACQ(&self->sigpend) & ~self->sigmask))
      ito__sig_deliver();
    if (cancellable) {
      if (res == ECANCELED) return ECANCELED; /* t is still joinable */
      if (res == EINTR) goto again;           /* a signal's handler ran: the join goes on */
    }
  } else {
    waiter wt;
    memset(&wt, 0, sizeof wt);
    if (park_joiner(t, &wt)) ito__block_os(&wt, CLOCK_MONOTONIC, NULL);
  }
  wait_done(t);
  return 0;
}

int ito_join(ito_thread_t h, void **result) { return ito__join(h, result, false); }

int ito__join(ito_thread_t h, void **result, bool cancellable) {
  ithread *t = ito__thread_of(h);
  if (UNLIKELY(!t)) return h ? EINVAL : ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  if (UNLIKELY(s != TS_DONE)) { /* (neither the root nor a detached thread is ever done) */
    int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
    if (s == TS_CLAIMED || (fl & (TH_ROOT | TH_DETACHED)) || !ito__still_current(t, h))
      return EINVAL;
    if (s == TS_RUNNING) {
      int rc = join_wait(t, cancellable);
      if (rc) return rc;
    } else {
      wait_done(t);
    }
  }
  t->sync = TS_CLAIMED;
  if (result) *result = t->result;
  if (UNLIKELY(LOAD_RLX(&ito__hooks_on))) {
    worker *w = cur_worker();
    ito__hook_emit(ITO_EV_JOIN, w ? w->id : -1, t, 1);
  }
  thread_release(t);
  return 0;
}

int ito_detach(ito_thread_t h) {
  ithread *t = ito__thread_of(h);
  if (!t) return h ? EINVAL : ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
  if (s == TS_CLAIMED || (fl & (TH_ROOT | TH_DETACHED)) || !ito__still_current(t, h)) return EINVAL;
  if (s == TS_RUNNING) {
    if (__atomic_load_n(&t->joiner, __ATOMIC_RELAXED)) return EINVAL;
    /* Once DETACHED is visible the ending thread may take it at any time,
     * while park_joiner still reads t: whichever of the two is last frees
     * t (invariant 3). */
    t->detach_refs = 2;
    __atomic_store_n(&t->flags, fl | TH_DETACHED, __ATOMIC_RELAXED); /* the park publishes it */
    if (park_joiner(t, JOINER_DETACHED)) {
      drop_detach_ref(t);
      return 0;
    }
  }
  wait_done(t);
  t->sync = TS_CLAIMED;
  t->flags = fl | TH_DETACHED; /* released by a detach: its handle says so (handle.h, inv. 4) */
  thread_release(t);
  return 0;
}

ito_thread_t ito_self(void) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread) return 0;
  return ito__handle(w->cur->thread);
}

void ito_exit(void *result) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread)
    ito__fatal("ito_exit called from a thread that is not an ito thread");
  if (w->cur->thread->flags & TH_ROOT)
    ito__fatal("ito_exit called from the program's main thread; return from main instead");
#if ITO_TSAN
  w->cur->tsan_dirty = 1; /* the frames above this call never return */
#endif
  thread_finish(result);
}

int ito_yield(void) {
  worker *w = cur_worker();
  if (!parkable(w)) {
    ito__os.sched_yield();
    return 0;
  }
  ito__suspend(ACT_YIELD, NULL, NULL, NULL);
  return 0;
}

/* ---- the root, pinning ----------------------------------------------------------------------- */

ithread *ito__thread_adopt_root(fiber *f) {
  ithread *t = thread_init(f);
  t->flags = TH_ROOT;
  t->keys = ito__take_os_keys(); /* values main set before the runtime started */
  return t;
}

void ito__thread_pin(void) {
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread) w->cur->thread->pin++;
}

void ito__thread_unpin(void) {
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread && w->cur->thread->pin > 0) w->cur->thread->pin--;
}

/* A home the thread was given while pinned (ito__dropin_home) is taken
 * once it is not: unpinned here, at a point where it may move. */
void ito__thread_unpin_move(void) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread || w->cur->thread->pin == 0) return;
  if (--w->cur->thread->pin > 0) return;
  worker *home = w->cur->home;
  if (UNLIKELY(home && home != w)) ito__suspend(ACT_MIGRATE, home, NULL, NULL);
}

/* ---- fork (atfork.h) --------------------------------------------------------------------- */

static int fork_orphan; /* the child of a fork from a thread other than the root */

static void threads_fork_child(worker *w, ithread *self) {
  (void)w;
  uint32_t n = LOAD_ACQ(&ito__handle_nslots);
  for (uint32_t i = 1; i < n; i++) {
    struct handle_slot *s = handle_slot_at(i);
    ithread *t = s ? s->t : NULL;
    if (!t || t == self || !LOAD_RLX(&t->sig_live)) continue; /* (free descriptors stay fresh) */
    __atomic_fetch_or(&t->flags, TH_GHOST, __ATOMIC_RELAXED);
    STORE_RLX(&t->sig_live, 0);
  }
  fork_orphan = !(self->flags & TH_ROOT);
}
ITO_FORK_PART(threads_fork, .child_order = FORK_THREADS, .child = threads_fork_child);

static void thread_ended_in_child(void) {
  if (fork_orphan && ito__live_threads() == 0) exit(0);
}
