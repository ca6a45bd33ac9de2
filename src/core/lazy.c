/* Lazy task creation: the C halves of the fork and the join, the taking of
 * a record, and the slow path where a child gets a thread of its own.
 * Invariants at the top of lazy.h; design in docs/lazy-tasks.md. */
#define _GNU_SOURCE
#include "lazy.h"

#include "hooks.h"
#include "nodeq.h"
#include "sched.h"
#include "thread.h"
#include "wait.h"

#include <alloca.h>
#include <string.h>

void ito_tg_init_(ito_tg_t *tg, void *frame) {
  memset(tg, 0, sizeof *tg);
  ito_tg_init_inline_(tg, frame);
}

/* ---- a return before the join ----------------------------------------------------------
 * A stolen continuation runs with its stack pointer on a fresh stack while
 * its frame pointer still addresses the home frame. A function that
 * returns before its join then takes its return address either through
 * the frame pointer (an epilogue with `leave`), from the home frame's slot,
 * or through the stack pointer, from the fresh stack. For a checked group
 * (ito_tg_init) the first taker puts the address of ito__tg_return_trap
 * (the assembly), which stops the program with a message, in both places:
 * in the home frame's slot (kept in tg->home_ret and put back when
 * the join returns to the home stack), and on the fresh stack, where the
 * continuation starts low enough for the epilogue to find it at the same
 * offset from the stack pointer as on the home stack. The slot is 8 bytes
 * above the frame pointer on both x86-64 and AArch64. While a continuation
 * of such a group is stolen, a debugger's backtrace stops at the home
 * frame. C++ task groups need none of this: their destructor joins. */
/* A checked group carries bit 0 in tg->waiter, whatever waiter the word
 * holds besides (waiters are aligned). */
#define TG_CHECKED ((uintptr_t)1)
static bool checked(const ito_tg_t *tg) { return (uintptr_t)tg->waiter & TG_CHECKED; }
static waiter *tg_waiter(const ito_tg_t *tg) {
  return (waiter *)((uintptr_t)tg->waiter & ~TG_CHECKED);
}
static void set_tg_waiter(ito_tg_t *tg, waiter *w) {
  tg->waiter = (void *)((uintptr_t)w | ((uintptr_t)tg->waiter & TG_CHECKED));
}

static void **home_slot(ito_tg_t *tg) { return (void **)tg->home_fp + 1; }

/* The first taker of a checked group's record: the home frame's slot. */
static void trap_home(ito_tg_t *tg) {
  if (!checked(tg)) return;
  tg->home_ret = *home_slot(tg);
  *home_slot(tg) = (void *)ito__tg_return_trap;
}

/* The join is back on the home stack: the true return address. */
static void untrap_home(ito_tg_t *tg) {
  if (checked(tg)) *home_slot(tg) = tg->home_ret;
}

/* The stack pointer a continuation of rec starts with on nf: the top, or,
 * for a checked group, low enough to hold the trap where the epilogue
 * would look (and what it reads near it). */
#define TRAP_SLACK 256      /* bytes the epilogue may read above the slot */
#define TRAP_MAX (64 << 10) /* larger frames go without this half of the check */
static void *continuation_sp(const ito_tg_t *tg, const struct ito_rec *rec, fiber *nf) {
  char *top = (char *)((uintptr_t)nf->hi & ~(uintptr_t)15);
  if (!checked(tg)) return top;
  uintptr_t sp = (uintptr_t)rec_sp(rec), slot = (uintptr_t)tg->home_fp + 8;
  if (slot < sp || slot - sp > TRAP_MAX) return top;
  char *start = top - TRAP_SLACK - ((slot - sp + 8 + 15) & ~(uintptr_t)15);
  ito__vg_usable(start, (size_t)(top - start)); /* dead frames of nf's last run */
  *(void **)(start + (slot - sp)) = (void *)ito__tg_return_trap;
  return start;
}

/* Reached from ito__tg_return_trap, on the worker's scheduler stack. */
void ito__tg_returned(void) {
  ito__fatal(
      "a function returned between ito_tg_fork and ito_tg_join after its continuation "
      "was stolen: its children may still run on its stack. Call ito_tg_join before "
      "the function returns (docs/lazy-tasks.md).");
}

/* ---- taking a record --------------------------------------------------------------------- */

void ito__claim_record(const struct ito_rec *rec, fiber *nf) {
  ito_tg_t *tg = rec->tg;
  if (!tg->stolen) {
    tg->home_sp = rec_sp(rec);
    tg->home_fiber = rec->fiber;
    tg->stolen = 1;
    trap_home(tg);
  }
  __atomic_add_fetch(&tg->pending, 1, __ATOMIC_RELAXED);
  nf->thread = rec->fiber->thread;
  nf->node1 = rec->fiber->node1; /* the same work goes on (nodeq.h, invariant 3) */
  nf->placed = 0;
  nf->in_handler = 0;
  nf->start = *rec;
  nf->start.regs[REC_SP] = (uint64_t)(uintptr_t)continuation_sp(tg, rec, nf);
  nf->sp = NULL; /* ito__run_fiber resumes nf->start there */
}

/* The count without the bias: a traced child may add TG_TRACED while the
 * joiner waits (trace_spawn), and the last child must still wake it. */
static int count_of(int pending) { return pending & ~TG_BIAS; }

void ito__tg_child_done(ito_tg_t *tg) {
  if (count_of(__atomic_sub_fetch(&tg->pending, 1, __ATOMIC_ACQ_REL)) == 0) {
    waiter *wt = tg_waiter(tg);
    set_tg_waiter(tg, NULL);
    ito__wake_waiter(wt);
  }
}

bool ito__tg_park(ito_tg_t *tg, fiber *f) {
  memset(&f->w, 0, sizeof f->w);
  f->w.fiber = f;
  set_tg_waiter(tg, &f->w);
  return count_of(__atomic_sub_fetch(&tg->pending, 1, __ATOMIC_ACQ_REL)) == 0;
}

/* ---- tracing (docs/hooks.md) --------------------------------------------------------------- */

/* A recorder is attached: the group's join must reach its hook, so its
 * pending count carries TG_TRACED until then (hooks.h, invariant 2), and
 * the recorder's word of the group (span_word) is 0 from its first
 * fork on. The fork calls this after it published its record, so a thief
 * may have taken the continuation already: that strand may fork the group
 * again (two callers at once: whoever sets TG_TRACING sets the group up,
 * the other waits the few instructions until TG_TRACED) and may reach the
 * join first (the join reads the bias only once its children are done;
 * this child is one of them until it ends, after this). Only the join
 * removes the bias. */
static void trace_group(ito_tg_t *tg) {
  if (!(__atomic_load_n(&tg->pending, __ATOMIC_ACQUIRE) & TG_TRACED)) {
    if (!(__atomic_fetch_or(&tg->pending, TG_TRACING, __ATOMIC_ACQ_REL) & TG_TRACING)) {
      __atomic_store_n(&tg->span_word, 0, __ATOMIC_RELAXED);
      __atomic_fetch_or(&tg->pending, TG_TRACED, __ATOMIC_RELEASE);
    } else {
      while (!(__atomic_load_n(&tg->pending, __ATOMIC_ACQUIRE) & TG_TRACED)) cpu_relax();
    }
  }
}

static void trace_spawn(ito_tg_t *tg, int wid, const struct ito_rec *rec, uint64_t t) {
  trace_group(tg);
  ito__hook_emit_rec(ITO_EV_SPAWN, wid, tg, 0, rec, t);
}

/* P2 and P3 of a fork (docs/idle.md) once the record at t is published,
 * given the idle word x read after it: wake a sleeper, or open a fenced
 * window for a spinner that will try to steal. */
static void fork_counts(worker *w, uint64_t x) {
  x &= ~IDLE_FLAGS;
  if (!x) return;
  if (x < IDLE_SPIN_ONE)
    ito__fork_wake(w);
  else if (!dq_window_open(&w->dq))
    dq_expect_thief(&w->dq); /* a spinner will try to steal from us */
}

/* The assembly fork's .Lfork_hook (the idle word's H bit). */
void ito__fork_hook(ito_tg_t *tg, worker *w, struct ito_rec *rec, uint64_t t) {
  trace_spawn(tg, w->id, rec, t);
  if (!ito__asym_fence) full_fence(); /* M: the publisher fences before it reads (P2) */
  fork_counts(w, idle_fork_read());
}

void ito__fork_back_hook(ito_tg_t *tg, worker *w, struct ito_rec *rec, uint64_t t) {
  ito__hook_emit_rec(ITO_EV_FORK_BACK, w->id, tg, 0, rec, t);
}

void ito__fork_quiet_counts(worker *w) {
  if (!ito__asym_fence) full_fence();
  fork_counts(w, idle_fork_read());
}

/* A quiet fork's group was not set up for the recorder: it is now, before
 * the child is reported (the join it waits for reads the bias once this
 * child is done, which is after this; the same rule as a late bias of
 * trace_spawn's). For a reported fork's group this is one load. */
void ito__fork_taken_hook(ito_tg_t *tg, worker *w, struct ito_rec *rec, uint64_t t) {
  trace_group(tg);
  worker *now = cur_worker();
  ito__hook_emit_rec(ITO_EV_FORK_TAKEN, now->id, tg, w->id, rec, t);
  ito__fork_taken(tg);
}

/* ---- the fork in C ------------------------------------------------------------------------- */
/* kind 0: fn is an ito_task_fn, fn(copy); 1: an ito_task2_fn, fn(copy, tg);
 * 2: an ito_task_r2_fn whose closure words came as arg and size,
 * fn(arg, tg, size), nothing copied. */
static inline void call_child(ito_task_fn fn, void *a, ito_tg_t *tg, int kind, uintptr_t w1) {
  if (kind == 2)
    ((ito_task_r2_fn)(void (*)(void))fn)((uintptr_t)a, tg, w1);
  else if (kind == 1)
    ((ito_task2_fn)(void (*)(void))fn)(a, tg);
  else
    fn(a);
}

/* node: NO_DATA for a child without data, else its data's node (-1: none
 * known; nodeq.h) */
#define NO_DATA (-2)
static void spawn_child(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, int kind, int node);

/* The fork's P2 and P3 (docs/idle.md) as the x86-64 assembly does them:
 * nothing but one load and a branch unless somebody is idle, the mode is
 * symmetric, or a recorder is attached. */
/* A recorder's mark of the record at index t of w's deque (hooks.h,
 * invariant 4). */
static inline uintptr_t *quiet_mark(worker *w, uint64_t t) {
  return (uintptr_t *)((char *)dq_slot(&w->dq, t) + w->hook_mark);
}

/* Returns true for a quiet fork (hooks.h, invariant 4): not reported, its
 * record marked for thieves. */
static __attribute__((noinline)) bool fork_publish_slow(worker *w, ito_tg_t *tg, uint64_t x,
                                                        struct ito_rec *rec, uint64_t t) {
  bool quiet = false;
  if (x & IDLE_HOOKS) {
    if (w->hook_quiet > 1) {
      w->hook_quiet--;
      STORE_REL(quiet_mark(w, t), (uintptr_t)rec + 1);
      quiet = true;
    } else {
      trace_spawn(tg, w->id, rec, t);
    }
  }
  fork_counts(w, x);
  return quiet;
}

/* The continuation of a fork of tg was taken and runs elsewhere: this child
 * is done, and its stack is left to the continuation (or freed when it is
 * not the group's home stack). */
void ito__fork_taken(ito_tg_t *tg) { ito__switch_to_sched(cur_worker(), ACT_ABANDON, tg); }

/* The whole fork in C: used on AArch64, and on x86-64 by a fork on a thread
 * that is not a worker (the assembly fast path covers the rest there). */
void ito__fork_c(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, struct ito_rec *rec,
                 int kind) {
  worker *w = cur_worker();
  if (UNLIKELY(!w)) {
    spawn_child(tg, fn, arg, size, kind, NO_DATA);
    return;
  }
  uintptr_t w1 = 0;
  if (kind == 2) { /* the closure's words are arg and size */
    w1 = (uintptr_t)size;
    size = 0;
  }
  void *a = arg;
  if (size) {
    a = __builtin_alloca(size);
    memcpy(a, arg, size);
  }
  rec->fiber = w->cur;
  uint64_t t = dq_tail(&w->dq);
  if (UNLIKELY(dq_full(&w->dq, t))) {
    call_child(fn, a, tg, kind, w1); /* deque full: run the child serially, nothing published */
    return;
  }
  dq_put(&w->dq, t, (uintptr_t)rec);
  if (!ito__asym_fence)
    full_fence();
  else
    __asm__ volatile("" ::: "memory");
  uint64_t x = idle_fork_read();
  bool quiet = false;
  if (UNLIKELY(x)) quiet = fork_publish_slow(w, tg, x, rec, t);

  call_child(fn, a, tg, kind, w1);

  if (LIKELY(cur_worker() == w) && dq_take_back(&w->dq, t, (uintptr_t)rec)) {
    if (UNLIKELY(quiet))
      STORE_RLX(quiet_mark(w, t), 0);
    else if (UNLIKELY(x & IDLE_HOOKS))
      ito__fork_back_hook(tg, w, rec, t);
    return;
  }
  if (UNLIKELY(x & IDLE_HOOKS)) ito__fork_taken_hook(tg, w, rec, t);
  ito__fork_taken(tg);
}

/* ---- the slow path: a child that gets a thread of its own -------------------------------------
 * The thread runs a copy of this box, followed by a copy of the child's
 * argument, on its own stack (ito__thread_spawn). */
struct spawn_box {
  ito_tg_t *tg;
  ito_task_fn fn;
  const void *src; /* the argument (or, kind 2, the closure's first word) */
  size_t size;     /* bytes of the argument copied after the box */
  uintptr_t w1;
  int kind;
};
#define BOX_SIZE ((sizeof(struct spawn_box) + 15) & ~(size_t)15)

static void box_copy(void *dst, void *src) {
  struct spawn_box *b = src;
  memcpy(dst, b, sizeof *b);
  if (b->size) memcpy((char *)dst + BOX_SIZE, b->src, b->size);
}

static void box_run(void *p) {
  struct spawn_box *b = p;
  void *a = b->size ? (char *)p + BOX_SIZE : (void *)b->src;
  ito_tg_t *tg = b->tg;
  call_child(b->fn, a, tg, b->kind, b->w1);
  if (UNLIKELY(LOAD_RLX(&ito__hooks_on))) { /* the child's end, for the group's join */
    worker *w = cur_worker();
    ito__hook_emit_rec(ITO_EV_FORK_BACK, w ? w->id : -1, tg, 0, NULL, 0);
  }
  ito__tg_child_done(tg);
}

static void spawn_child(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, int kind, int node) {
  struct spawn_box b = {tg, fn, arg, size, 0, kind};
  if (kind == 2) { /* the closure's words are arg and size: kept as they are */
    b.w1 = (uintptr_t)size;
    b.size = 0;
  }
  if (UNLIKELY(LOAD_RLX(&ito__hooks_on))) {
    worker *w = cur_worker();
    trace_spawn(tg, w ? w->id : -1, NULL, 0);
  }
  __atomic_add_fetch(&tg->pending, 1, __ATOMIC_RELAXED);
  int rc = node == NO_DATA
               ? ito__thread_spawn(box_run, &b, BOX_SIZE + b.size, 16, box_copy, NULL, -1)
               : ito__thread_spawn_node(box_run, &b, BOX_SIZE + b.size, 16, box_copy, NULL, node);
  if (rc != 0) {
    /* no memory for a thread: the child runs now, before the caller goes on */
    __atomic_sub_fetch(&tg->pending, 1, __ATOMIC_RELAXED);
    call_child(fn, arg, tg, kind, b.w1);
  }
}

void ito_tg_spawn_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size) {
  spawn_child(tg, fn, arg, size, 0, NO_DATA);
}

void ito_tg_spawn_node_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, int node) {
  spawn_child(tg, fn, arg, size, 0, node < 0 ? -1 : node);
}

#if ITO_TSAN
/* ThreadSanitizer builds: every child is a lightweight thread of its own.
 * A stolen continuation would return through frames of another stack, which
 * the sanitizer's per-stack call history cannot follow (docs/fibers.md). */
void ito_tg_fork_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size) {
  spawn_child(tg, fn, arg, size, 0, NO_DATA);
}
void ito_tg_fork_w1_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 8, 1, NO_DATA);
}
void ito_tg_fork_w2_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 16, 1, NO_DATA);
}
void ito_tg_fork_w3_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 24, 1, NO_DATA);
}
void ito_tg_fork_w4_(ito_tg_t *tg, ito_task2_fn fn, void *arg) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, arg, 32, 1, NO_DATA);
}
void ito_tg_fork_r2_(ito_tg_t *tg, ito_task_r2_fn fn, uintptr_t w0, uintptr_t w1) {
  spawn_child(tg, (ito_task_fn)(void (*)(void))fn, (void *)w0, (size_t)w1, 2, NO_DATA);
}
/* Nothing is ever stolen, so the join only waits for the children (with the
 * sanitizer seeing the acquire that orders their writes before ours). */
void ito_tg_join_(ito_tg_t *tg, void *frame) {
  struct ito_rec rec;
  memset(&rec, 0, sizeof rec);
  ito__join_c(tg, frame, &rec);
}
#endif

/* ---- the join -------------------------------------------------------------------------------- */

static void free_fiber_post(void *f) { ito__fiber_free(&cur_worker()->fibers, f); }

void ito__join_c(ito_tg_t *tg, void *frame, struct ito_rec *rec) {
  worker *w = cur_worker();
  void *sp = rec_sp(rec);
  bool on_home_stack = tg->stolen && sp == tg->home_sp && w && w->cur != tg->home_fiber;
  /* The bias (TG_TRACED) is read, and removed, only once every child is
   * done: a child whose continuation was taken before it traced its fork
   * adds the bias after this join may have started (trace_spawn). Read
   * before the wait, it could be missed, and then added for good while
   * the joiner waits: the last child's count would never reach 0. */
  int p = __atomic_load_n(&tg->pending, __ATOMIC_ACQUIRE);
  if (count_of(p) != 1) {
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
      set_tg_waiter(tg, &wt);
      if (count_of(__atomic_sub_fetch(&tg->pending, 1, __ATOMIC_ACQ_REL)) != 0)
        ito__block_os(&wt, CLOCK_MONOTONIC, NULL);
    }
    p = __atomic_load_n(&tg->pending, __ATOMIC_ACQUIRE);
    ITO_ASSERT(count_of(p) == 0); /* lazy.h, invariant 3: the children and we are done */
    w = cur_worker();
  }
  bool traced = p & TG_TRACED;
  if (p != 1) __atomic_store_n(&tg->pending, 1, __ATOMIC_RELAXED); /* nobody else counts now */
  if (UNLIKELY(traced)) ito__hook_emit(ITO_EV_JOIN, w ? w->id : -1, tg, 0);
  if (!tg->stolen || frame != tg->home_fp) return;
  /* Back to the home stack: the frame of the joining function lives there
   * and its epilogue addresses it through the stack pointer. */
  fiber *home = tg->home_fiber;
  fiber *f = w->cur;
  tg->stolen = 0;
  untrap_home(tg);
  if (f == home) return;
  w->cur = home;
  if (on_home_stack) { /* an exception unwound to the home frame; f is dead */
    ito__fiber_free(&w->fibers, f);
    return;
  }
  w->post_fn = free_fiber_post;
  w->post_arg = f;
  /* the frames a child left below home_sp when it abandoned this stack never
   * returned, so their redzones are still poisoned */
  if (home->lo && (char *)tg->home_sp > home->lo)
    ito__asan_unpoison(home->lo, (size_t)((char *)tg->home_sp - home->lo));
  enter_fiber(home);
  ito__vg_resume_at(tg->home_sp);
  ito__resume(rec, tg->home_sp);
}
