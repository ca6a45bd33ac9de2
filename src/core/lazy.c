/* Lazy task creation: a fork runs its child at once on the forking stack and
 * publishes only a record of the parent's continuation; a stack and a context
 * switch are paid when somebody takes that record. Design and invariants:
 * docs/lazy-tasks.md. */
#define _GNU_SOURCE
#include "internal.h"

#include <alloca.h>
#include <stdlib.h>
#include <string.h>

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

HIDDEN uintptr_t ito__pop_tail(worker *w);
HIDDEN void ito__run_fiber(worker *w, fiber *f) __attribute__((noreturn));
HIDDEN void ito__rq_push_front(worker *w, fiber *f);

void ito_tg_init_(ito_tg_t *tg, void *frame) {
  memset(tg, 0, sizeof *tg);
  ito_tg_init_inline_(tg, frame);
}

/* The taker of a fork record: account for the split and copy the record.
 * Runs while the record is still guaranteed alive (victim's lock held, or
 * the owner itself with the forking fiber not running). */
static void claim_record(const struct ito_rec *rec, struct ito_rec *copy) {
  ito_tg_t *tg = rec->tg;
  if (!tg->stolen) {
    tg->home_sp = (void *)(uintptr_t)rec->regs[REC_SP];
    tg->home_fiber = rec->fiber;
    tg->stolen = 1;
  }
  __atomic_add_fetch(&tg->pending, 1, __ATOMIC_RELAXED);
  *copy = *rec;
}

static fiber *continuation_fiber(worker *w, const struct ito_rec *copy) {
  fiber *nf = fiber_get(w);
  if (!nf) ito__fatal("out of memory for a stack to run a stolen continuation on");
  nf->thread = copy->fiber->thread;
  nf->start = *copy;
  nf->sp = NULL; /* run_fiber resumes nf->start */
  return nf;
}

/* Runs a deque entry taken from victim (whose steal_lock the caller holds;
 * it is released here). Fibers are resumed; records become continuations.
 * A thief passes the entry's slot, cleared here once the split is counted:
 * the fork's return takes a cleared slot to mean "taken" (docs/scheduler.md). */
int ito__run_entry(worker *w, uintptr_t e, worker *victim, uintptr_t *slot) {
  if (e & ENT_FIBER) {
    if (slot) __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
    spin_unlock(&victim->steal_lock);
    found_work(w);
    ito__run_fiber(w, (fiber *)(e & ~(uintptr_t)ENT_TAGS));
  }
  if (e & ENT_CREATE) { /* the creator of a running thread: resume it on its own stack */
    struct ito_rec copy = *(const struct ito_rec *)(e & ~(uintptr_t)ENT_TAGS);
    if (slot) __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
    spin_unlock(&victim->steal_lock);
    found_work(w);
    fiber *parent = copy.fiber;
    w->cur = parent;
    san_enter(parent);
    ito__resume(&copy, (void *)(uintptr_t)copy.regs[REC_SP]);
  }
  struct ito_rec copy;
  claim_record((const struct ito_rec *)e, &copy);
  if (slot) __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
  spin_unlock(&victim->steal_lock);
  found_work(w);
  ito__run_fiber(w, continuation_fiber(w, &copy));
}

/* Fiber f stops running on w (it blocks or yields): the continuations it
 * published on w are taken now, so that a record is always either in the
 * deque of the worker its fiber runs on, or taken (docs/lazy-tasks.md). */
void ito__take_records_of(worker *w, fiber *f) {
  fiber *first = NULL, *last = NULL;
  for (;;) {
    uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
    if (atomic_load_explicit(&w->head, memory_order_relaxed) >= t) break;
    /* a peek, racing with thieves: 0 means a thief just took and cleared it */
    uintptr_t top = __atomic_load_n(&w->slots[(t - 1) & w->mask], __ATOMIC_ACQUIRE);
    if (!top || (top & ENT_TAGS) || ((const struct ito_rec *)top)->fiber != f) break;
    uintptr_t e = ito__pop_tail(w);
    if (!e) break; /* a thief took it */
    struct ito_rec copy;
    claim_record((const struct ito_rec *)e, &copy);
    fiber *nf = continuation_fiber(w, &copy);
    nf->next = NULL;
    if (last)
      last->next = nf;
    else
      first = nf;
    last = nf;
  }
  /* youngest first: it is the one work-first order runs next */
  fiber *rev = NULL;
  while (first) {
    fiber *n = first->next;
    first->next = rev;
    rev = first;
    first = n;
  }
  if (!rev) return;
  for (fiber *x = rev; x;) {
    fiber *n = x->next;
    ito__rq_push_front(w, x);
    x = n;
  }
  publish_check(w, 1);
}

void ito__tg_child_done(ito_tg_t *tg) {
  if (__atomic_sub_fetch(&tg->pending, 1, __ATOMIC_ACQ_REL) == 0) {
    waiter *wt = tg->waiter;
    tg->waiter = NULL;
    ito__make_ready(wt);
  }
}

/* ---- the fork ---------------------------------------------------------------- */

_Static_assert(offsetof(worker, tail) == 0, "asm: W_TAIL");
_Static_assert(offsetof(worker, slots) == 8, "asm: W_SLOTS");
_Static_assert(offsetof(worker, mask) == 16, "asm: W_MASK");
_Static_assert(offsetof(worker, cur) == 24, "asm: W_CUR");
_Static_assert(offsetof(worker, fence_pops) == 52, "asm: W_FENCE");
_Static_assert(offsetof(worker, head) == 64, "asm: W_HEAD");
_Static_assert(offsetof(ito_tg_t, pending) == 24 && offsetof(ito_tg_t, stolen) == 28, "asm: tg");
_Static_assert(offsetof(struct ito_rec, tg) == REC_NREGS * 8, "asm: rec->tg");
_Static_assert(offsetof(struct ito_rec, fiber) == REC_NREGS * 8 + 8, "asm: rec->fiber");

/* The owner's pop of record t met a thief (head > t): settle it under the
 * steal lock. Returns 1 if the record is still the owner's. */
HIDDEN int ito__fork_conflict(worker *w, uint64_t t);
int ito__fork_conflict(worker *w, uint64_t t) {
  spin_lock(&w->steal_lock);
  int ours = atomic_load_explicit(&w->head, memory_order_relaxed) <= t;
  if (!ours) atomic_store_explicit(&w->tail, t + 1, memory_order_relaxed);
  spin_unlock(&w->steal_lock);
  return ours;
}

/* The continuation of a fork of tg was taken and runs elsewhere: this child
 * is done, and its stack is left to the continuation (or freed when it is
 * not the group's home stack). */
HIDDEN void ito__fork_taken(ito_tg_t *tg) __attribute__((noreturn));
void ito__fork_taken(ito_tg_t *tg) { ito__switch_to_sched(cur_worker(), ACT_ABANDON, tg); }

/* The whole fork in C: used on AArch64, and on x86-64 by a fork on a thread
 * that is not a worker (the assembly fast path covers the rest there).
 * kind 0: fn is an ito_task_fn, fn(copy); 1: an ito_task2_fn, fn(copy, tg);
 * 2: an ito_task_r2_fn whose closure words came as arg and size,
 * fn(arg, tg, size), nothing copied. */
static void spawn_child(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, int two);

static inline void call_child(ito_task_fn fn, void *a, ito_tg_t *tg, int kind, uintptr_t w1) {
  if (kind == 2)
    ((ito_task_r2_fn)(void (*)(void))fn)((uintptr_t)a, tg, w1);
  else if (kind == 1)
    ((ito_task2_fn)(void (*)(void))fn)(a, tg);
  else
    fn(a);
}

HIDDEN void ito__fork_c(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, struct ito_rec *rec,
                        int two);
void ito__fork_c(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, struct ito_rec *rec,
                 int two) {
  worker *w = cur_worker();
  if (UNLIKELY(!w)) {
    spawn_child(tg, fn, arg, size, two);
    return;
  }
  uintptr_t w1 = 0;
  if (two == 2) { /* the closure's words are arg and size */
    w1 = (uintptr_t)size;
    size = 0;
  }
  void *a = arg;
  if (size) {
    a = __builtin_alloca(size);
    memcpy(a, arg, size);
  }
  rec->fiber = w->cur;
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  if (UNLIKELY(deque_full(w, t))) {
    call_child(fn, a, tg, two, w1); /* deque full: run the child serially, nothing published */
    return;
  }
  w->slots[t & w->mask] = (uintptr_t)rec;
  atomic_store_explicit(&w->tail, t + 1, memory_order_release);
  publish_check(w, 0);

  call_child(fn, a, tg, two, w1);

  if (LIKELY(cur_worker() == w) && atomic_load_explicit(&w->tail, memory_order_relaxed) == t + 1 &&
      __atomic_load_n(&w->slots[t & w->mask], __ATOMIC_ACQUIRE) == (uintptr_t)rec) {
    atomic_store_explicit(&w->tail, t, memory_order_relaxed);
    deque_owner_barrier(w);
    if (LIKELY(atomic_load_explicit(&w->head, memory_order_relaxed) <= t)) return;
    if (ito__fork_conflict(w, t)) return;
  }
  ito__fork_taken(tg);
}

/* ---- the slow path: a child that gets its own lightweight thread ------------ */

struct spawn_box {
  ito_tg_t *tg;
  ito_task_fn fn;
  void *arg;
  int heap;
  int two;
  uintptr_t w1;
};

static void *spawn_main(void *p) {
  struct spawn_box *b = p;
  ito_tg_t *tg = b->tg;
  call_child(b->fn, b->arg, tg, b->two, b->w1);
  if (b->heap) free(b->arg);
  free(b);
  ito__tg_child_done(tg);
  return NULL;
}

static void spawn_child(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, int two) {
  struct spawn_box *b = malloc(sizeof *b);
  uintptr_t w1 = 0;
  if (two == 2) { /* the closure's words are arg and size: keep them as they are */
    w1 = (uintptr_t)size;
    size = 0;
  }
  void *a = arg;
  if (size) {
    a = malloc(size);
    if (!a || !b) ito__fatal("out of memory spawning a task");
    memcpy(a, arg, size);
  }
  if (!b) ito__fatal("out of memory spawning a task");
  b->tg = tg;
  b->fn = fn;
  b->arg = a;
  b->heap = size != 0;
  b->two = two;
  b->w1 = w1;
  __atomic_add_fetch(&tg->pending, 1, __ATOMIC_RELAXED);
  ithread *t;
  int rc = ito__create_internal(spawn_main, b, &t, 1, NULL);
  if (rc) ito__fatal("cannot create a thread for a task (error %d)", rc);
}

void ito_tg_spawn_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size) {
  spawn_child(tg, fn, arg, size, 0);
}

#if ITO_TSAN
HIDDEN void ito__join_c(ito_tg_t *tg, void *frame, struct ito_rec *rec);
/* ThreadSanitizer builds: every child is a lightweight thread of its own.
 * A stolen continuation would return through frames of another stack, which
 * the sanitizer's per-stack call history cannot follow (docs/fibers.md). */
void ito_tg_fork_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size) {
  spawn_child(tg, fn, arg, size, 0);
}
void ito_tg_fork_w1_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 8, 1);
}
void ito_tg_fork_w2_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 16, 1);
}
void ito_tg_fork_w3_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 24, 1);
}
void ito_tg_fork_w4_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 32, 1);
}
void ito_tg_fork_r2_(ito_tg_t *tg, ito_task_r2_fn fn, uintptr_t w0, uintptr_t w1) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, (void *)w0, (size_t)w1, 2);
}
/* Nothing is ever stolen, so the join only waits for the children (with the
 * sanitizer seeing the acquire that orders their writes before ours). */
void ito_tg_join_(ito_tg_t *tg, void *frame) {
  struct ito_rec rec;
  memset(&rec, 0, sizeof rec);
  ito__join_c(tg, frame, &rec);
}
#endif

/* ---- the join ------------------------------------------------------------------ */

static void free_fiber_post(void *f) { ito__fiber_free(cur_worker(), f); }

HIDDEN void ito__join_c(ito_tg_t *tg, void *frame, struct ito_rec *rec);
void ito__join_c(ito_tg_t *tg, void *frame, struct ito_rec *rec) {
  worker *w = cur_worker();
  void *sp = (void *)(uintptr_t)rec->regs[REC_SP];
  int on_home_stack = tg->stolen && sp == tg->home_sp && w && w->cur != tg->home_fiber;
  if (__atomic_load_n(&tg->pending, __ATOMIC_ACQUIRE) != 1) {
    if (on_home_stack)
      ito__fatal(
          "a function left the code between task_group::run() (or ito_tg_fork) and wait() "
          "through an exception or a jump while a child was still running; with lazy task "
          "creation the child runs on that function's stack. Catch the exception before it "
          "leaves, or call wait() first.");
    if (w) {
      ito__suspend(ACT_JOIN_WAIT, tg, NULL, NULL);
    } else {
      waiter wt;
      memset(&wt, 0, sizeof wt);
      tg->waiter = &wt;
      if (__atomic_sub_fetch(&tg->pending, 1, __ATOMIC_ACQ_REL) != 0) ito__block_os(&wt, CLOCK_MONOTONIC, NULL);
    }
    __atomic_store_n(&tg->pending, 1, __ATOMIC_RELAXED);
    w = cur_worker();
  }
  if (!tg->stolen || frame != tg->home_fp) return;
  /* Back to the home stack: the frame of the joining function lives there and
   * its epilogue addresses it through the stack pointer. */
  fiber *home = tg->home_fiber;
  fiber *f = w->cur;
  tg->stolen = 0;
  if (f == home) return;
  w->cur = home;
  if (on_home_stack) { /* an exception unwound to the home frame; f is dead */
    ito__fiber_free(w, f);
    return;
  }
  w->post_fn = free_fiber_post;
  w->post_arg = f;
#if ITO_ASAN
  /* the frames a child left below home_sp when it abandoned this stack never
   * returned, so their redzones are still poisoned */
  if (home->lo && (char *)tg->home_sp > home->lo)
    ASAN_UNPOISON_MEMORY_REGION(home->lo, (size_t)((char *)tg->home_sp - home->lo));
  ito__asan_start(NULL, home->lo, (size_t)(home->hi - home->lo));
#endif
  ito__resume(rec, tg->home_sp);
}
