/* libito-omp.so: explicit tasks, taskwait, taskgroup and taskloop (their
 * dependences in depend.c). docs/openmp.md. */
#include "omp_int.h"

#include <alloca.h>
#include <stdlib.h>
#include <string.h>

/* The cut-off (docs/openmp.md): a deferrable task made while its team has
 * this many deferred tasks per member not yet begun runs at once, as a
 * call, after its predecessors (libgomp's: 64 tasks per thread). */
#define PENDING_CUTOFF 64
/* A team of one runs a task at its creation while fewer than this many
 * such tasks are running, each inside the previous one's code, on its
 * strand's stack (create_task). */
#define SOLO_NEST 64

#define TASK_FLAG_FINAL 2
#define TASK_FLAG_PRIORITY 16
#define TASK_FLAG_UP 256
#define TASK_FLAG_GRAINSIZE 512
#define TASK_FLAG_IF 1024
#define TASK_FLAG_NOGROUP 2048
#define TASK_FLAG_REDUCTION 4096
#define TASK_FLAG_DETACH 8192

/* ---- detach: completion events -----------------------------------------------------
 * The event is the task's: the handle is its address. A task with detach
 * counts two units in pendc, its code and its event; the fulfiller drops
 * the event's (its state, read and written under its lock, tells a second
 * fulfilment from the first), and the task is complete once both are gone
 * (complete_unit): neither its strand nor the fulfiller waits. */
static void complete_unit(task *t, task *by);

OMP_API void omp_fulfill_event(uintptr_t event) {
  struct tevent *e = (struct tevent *)event;
  if (!e) ito__omp_fatal("omp_fulfill_event: not an event of a task with detach");
  ito__dropin_lock(&e->lock, ITO_DROPIN_LR_LEAF);
  int s = e->state;
  if (s != EV_PENDING) {
    ito__dropin_unlock(&e->lock);
    ito__omp_fatal(
        "omp_fulfill_event: the event %p was fulfilled already or is not an event "
        "of a task with detach",
        (void *)e);
  }
  e->state = EV_FULFILLED;
  ito__dropin_unlock(&e->lock);
  complete_unit((task *)((char *)e - offsetof(task, ev)), NULL);
}

/* ---- the life of a task ----------------------------------------------------------
 * A deferred task is a block on the heap (its record, then its data),
 * counted in its parent (KID_BOTH) and taskgroup from its creation. It
 * runs on a member's strand (ito__omp_run_task) and is complete once its
 * code has ended and, with detach, its event is fulfilled (pendc); then its
 * dependences are released and the parent's taskwait no longer waits for
 * it. It is over once it is complete and its children are over: its kids'
 * alive half holds a unit of its own until it completes, and whoever
 * brings that half to zero ends it (task_over). Nothing waits at a task's
 * end. A task run as a call inside its creator (undeferred, past the
 * cut-off) lives on the creator's stack and waits for its children there. */

/* An explicit task's fields (the work-sharing ones are for implicit tasks
 * only and stay as they are). Those only a deferred task uses (ev, node,
 * heap, pendc, prio) are set by build_child. */
static inline void task_init(task *t, task *parent, int final_, int kind) {
  t->parent = parent;
  t->team = parent->team;
  t->id = parent->id;
  t->kind = (unsigned char)kind;
  t->final_ = (unsigned char)(final_ | parent->final_);
  __atomic_store_n(&t->kids, 0, __ATOMIC_RELAXED);
  t->qlock = 0;
  t->qhead = t->qtail = NULL;
  t->tg = NULL;
  /* an inline task is over before the taskgroup can end: not counted */
  t->ingroup = kind == TASK_INLINE ? NULL : parent->tg;
  t->cgroup = parent->tg ? parent->tg : parent->cgroup;
  t->red0 = parent->tg ? parent->tg->red : parent->red0;
  t->deps = NULL;
  t->depth = parent->depth + 1;
  t->imp = kind == TASK_INLINE ? t : parent->imp; /* (a parent not deferred is its own) */
  /* a task without data of its own runs on its parent's node */
  t->numa = parent->kind == TASK_EXPLICIT || parent->kind == TASK_INLINE ? parent->numa : -2;
  t->numa_own = 0;
  t->icv = parent->icv;
  t->team_num = parent->team_num;
  t->num_teams = parent->num_teams;
  t->ws = NULL;
  t->solo = NULL;
}

/* Counts a new deferred child in its parent and taskgroup. */
static void count_child(task *parent) {
  __atomic_fetch_add(&parent->kids, KID_BOTH, __ATOMIC_RELAXED);
  if (parent->tg) __atomic_fetch_add(&parent->tg->count, KID_ALIVE, __ATOMIC_RELAXED);
}

/* A deferred task is over: out of its taskgroup and its parent, and freed.
 * Its parent, if a deferred task whose own unit is gone, may be over in
 * turn (a loop, not a recursion: chains of tasks can be long). */
static void task_over(task *t) {
  for (;;) {
    task *p = t->parent;
    struct taskgroup *g = t->ingroup;
    if (t->deps) ito__omp_deptab_free(t);
    free(t->heap);
    /* the group first: p, which frees it, waits for its own unit too */
    if (g) ito__omp_kids_sub(&g->count, KID_ALIVE, &p->qlock, &p->qhead, &p->qtail);
    int zero = ito__omp_kids_sub(&p->kids, KID_ALIVE, &p->qlock, &p->qhead, &p->qtail);
    if (!(zero & KIDS_ALIVE_ZERO) || p->kind != TASK_EXPLICIT) return;
    t = p;
  }
}

/* One of pendc's units goes (its code ended, or its event was fulfilled);
 * the last completes the task: its dependences, its parent's taskwait, its
 * own unit in its kids. A task without detach has one unit: no count. A
 * task with no child alive (none can come: its code ended) is over at
 * once, out of its parent's two halves in one subtraction. */
static void complete_unit(task *t, task *by) {
  if (UNLIKELY(t->ev.state != EV_NONE) && __atomic_fetch_sub(&t->pendc, 1, __ATOMIC_ACQ_REL) != 1)
    return;
  if (t->node) ito__omp_dep_complete(t->node);
  task *p = t->parent;
  if ((__atomic_load_n(&t->kids, __ATOMIC_ACQUIRE) & KID_ALIVE_MASK) == KID_ALIVE) {
    struct taskgroup *g = t->ingroup;
    if (t->deps) ito__omp_deptab_free(t);
    struct ident *d = by && t->block && t->team ? &t->team->ids[by->id] : NULL;
    if (d && d->nblocks < TASK_BLOCKS_KEPT) { /* kept for the next task this strand makes */
      *(void **)t->heap = d->blocks;
      d->blocks = t->heap;
      d->nblocks++;
    } else {
      free(t->heap);
    }
    if (g) ito__omp_kids_sub(&g->count, KID_ALIVE, &p->qlock, &p->qhead, &p->qtail);
    int zero = ito__omp_kids_sub(&p->kids, KID_BOTH, &p->qlock, &p->qhead, &p->qtail);
    if ((zero & KIDS_ALIVE_ZERO) && p->kind == TASK_EXPLICIT) task_over(p);
    return;
  }
  ito__omp_kids_sub(&p->kids, KID_RUN, &p->qlock, &p->qhead, &p->qtail);
  if (ito__omp_kids_sub(&t->kids, KID_ALIVE, &t->qlock, &t->qhead, &t->qtail)) task_over(t);
}

/* A task whose team or taskgroup was cancelled before its code began is
 * discarded: it ends at once (its dependences released, counted out). */
static inline bool discarded(task *t) {
  return UNLIKELY(ito__omp_cancellation) && ito__omp_task_cancelled(t);
}

void ito__omp_run_task(task *cur, task *t) {
  ITO_OMP_ASSERT(t->kind == TASK_EXPLICIT && t->team == cur->team);
  t->id = cur->id; /* invariant 2 of pending.c */
  /* placed by its data: the strand moves to the data's node to run it */
  if (UNLIKELY(t->numa != -2)) ito__dropin_run_on_node(t->numa, t->numa_own);
  void **slot = ito__omp_ctx();
  void *saved = NULL;
  if (LIKELY(slot != NULL)) {
    saved = *slot;
    *slot = t;
  } else {
    ito__omp_set_cur(t);
  }
  if (!discarded(t)) t->fn(t->data);
  if (LIKELY(slot != NULL))
    *slot = saved;
  else
    ito__omp_set_cur(cur);
  complete_unit(t, cur); /* (on cur's strand) */
}

/* The team of one whose list holds the pending tasks made outside any
 * region: its initial task's (made here, by the creator). */
static team *solo_team(task *parent) {
  while (parent->kind != TASK_INITIAL && parent->parent) parent = parent->parent;
  return ito__omp_ws_team(parent);
}

/* A deferred task whose predecessors are done: pending in the list of the
 * member whose strand released it (or, outside the team, its creator's). */
void ito__omp_make_ready(task *t) {
  /* Whoever releases t need not be its parent, which may be over once t is:
   * an alive unit of t's own, held across the push, keeps both (the push
   * reads t's parent, pending.c's invariant 5). */
  __atomic_fetch_add(&t->kids, KID_ALIVE, __ATOMIC_RELAXED); /* (not yet shared) */
  if (!t->team) {
    ito__omp_push_pending(solo_team(t->parent), 0, t);
  } else {
    __atomic_fetch_sub(&t->team->ids[t->maker].waiting, 1, __ATOMIC_RELAXED);
    task *by = ito__omp_cur();
    unsigned k = by->team == t->team ? by->id : t->parent->id;
    ito__omp_push_pending(t->team, k, t);
  }
  if (ito__omp_kids_sub(&t->kids, KID_ALIVE, &t->qlock, &t->qhead, &t->qtail) & KIDS_ALIVE_ZERO)
    task_over(t);
}

/* What a task is built from. */
struct create {
  task *parent;
  int final_;
  void (*fn)(void *);
  void *data;
  void (*cpyfn)(void *, void *);
  size_t size, off;
  int bounds; /* taskloop: write lo, hi into the copy's first two words */
  unsigned long long lo, hi;
  uintptr_t *detach; /* detach: where the creator wants the event's handle */
  int prio;          /* priority, within [0, max-task-priority-var] */
  int numa;          /* with dependences: their node (ito__omp_dep_numa), else -2 */
};

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

static inline size_t data_off(size_t align) {
  if (align < _Alignof(task)) align = _Alignof(task);
  return (sizeof(task) + align - 1) & ~(align - 1);
}

/* A deferred task's block: its record (counted in its parent) and data. */
static task *build_child(struct create *c, size_t align) {
  size_t off = data_off(align), a = align > _Alignof(task) ? align : _Alignof(task);
  if (c->size > SIZE_MAX - off - 63)
    ito__omp_fatal("a task's data is too large (%zu bytes)", c->size);
  /* (malloc's alignment, 16 on the targets, is the common case) */
  size_t sz = off + c->size;
  team *tm = c->parent->team;
  bool small = tm && a <= _Alignof(max_align_t) && sz <= TASK_BLOCK;
  struct ident *d = small ? &tm->ids[c->parent->id] : NULL; /* (the creator's strand's) */
  char *blk;
  if (d && d->blocks) {
    blk = d->blocks;
    d->blocks = *(void **)blk;
    d->nblocks--;
  } else {
    blk = small                        ? malloc(TASK_BLOCK)
          : a <= _Alignof(max_align_t) ? malloc(sz)
                                       : aligned_alloc(a, (sz + a - 1) & ~(a - 1));
  }
  if (!blk) ito__omp_fatal("out of memory for a task (%zu bytes of data)", c->size);
  task *t = (task *)blk;
  task_init(t, c->parent, c->final_, TASK_EXPLICIT);
  t->fn = c->fn;
  t->data = blk + off;
  copy_data(t->data, c);
  t->node = NULL;
  t->heap = blk;
  t->block = small;
  t->prio = c->prio;
  if (c->numa != -2) t->numa = (short)c->numa, t->numa_own = 1;
  t->pnext = t->pprev = NULL;
  __atomic_store_n(&t->kids, KID_ALIVE, __ATOMIC_RELAXED); /* its own unit */
  __atomic_store_n(&t->pendc, c->detach ? 2 : 1, __ATOMIC_RELAXED);
  t->ev.lock = 0;
  t->ev.state = c->detach ? EV_PENDING : EV_NONE;
  if (c->detach) *c->detach = (uintptr_t)&t->ev; /* before the task's code runs */
  count_child(c->parent);
  return t;
}

/* Runs the task now, in the caller's frame (undeferred, final, or past the
 * cut-off): the creator's member, on its stack. Never a task with detach
 * (its completion may come after its code: a deferred task's block). */
static void run_inline(struct create *c, size_t align, struct dnode *node, void **slot) {
  task t;
  task_init(&t, c->parent, c->final_, TASK_INLINE);
  void *data = c->data;
  if (c->cpyfn || c->bounds) {
    if (align < 16) align = 16;
    char *buf = alloca(c->size + align);
    data = (void *)(((uintptr_t)buf + align - 1) & ~(uintptr_t)(align - 1));
    copy_data(data, c);
  }
  if (node) ito__omp_dep_wait(node, c->parent);
  if (UNLIKELY(c->numa != -2)) { /* placed by its data: the strand moves there */
    t.numa = (short)c->numa;
    t.numa_own = 1;
    ito__dropin_run_on_node(c->numa, 1);
  }
  /* the task runs on this stack, so its context word stays this one */
  if (!slot) slot = ito__omp_ctx();
  void *saved = NULL;
  if (slot) {
    saved = *slot;
    *slot = &t;
  } else {
    ito__omp_set_cur(&t);
  }
  if (!discarded(&t)) c->fn(data); /* (cancelled while it waited for dependences) */
  if (node) ito__omp_dep_complete(node);
  if (__atomic_load_n(&t.kids, __ATOMIC_RELAXED)) ito__omp_wait_kids(&t, KID_WAIT_ALIVE, false);
  if (t.deps) ito__omp_deptab_free(&t);
  if (slot)
    *slot = saved;
  else
    ito__omp_set_cur(c->parent);
}

/* The common undeferred task, if(0) with gcc's data used in place (no
 * cpyfn), on an ito thread: run_inline's work without what such a task
 * never has (a copy, dependences, detach). */
/* (Hidden, not static: GOMP_task's x86-64 entry jumps to it by name.) */
__attribute__((noinline, noclone, used)) void ito__omp_undeferred(void (*fn)(void *), void *data,
                                                                  int final_) {
  void **slot = ito__omp_ctx();
  task *parent = ito__omp_cur_at(slot);
  if (UNLIKELY(!slot)) { /* not an ito thread */
    struct create c = {parent, final_, fn, data, NULL, 0, 0, 0, 0, 0, NULL, 0, -2};
    run_inline(&c, 1, NULL, NULL);
    return;
  }
  task t;
  task_init(&t, parent, final_, TASK_INLINE);
  void *saved = *slot;
  *slot = &t;
  if (!discarded(&t)) fn(data);
  if (UNLIKELY(__atomic_load_n(&t.kids, __ATOMIC_RELAXED)))
    ito__omp_wait_kids(&t, KID_WAIT_ALIVE, false);
  if (UNLIKELY(t.deps != NULL)) ito__omp_deptab_free(&t);
  *slot = saved;
}

/* A task: run now as a call (undeferred, final, outside any region as
 * libgomp does, or past the cut-off), else made pending in its creator's
 * list. With dependences it waits for its predecessors first; with detach
 * it is always a block of its own, run at once when it may not wait. */
static void create_task(struct create *c, size_t align, bool deferred, void **depend) {
  task *parent = c->parent;
  team *tm = parent->team;
  bool now = !deferred || parent->final_;
  if (depend) c->numa = ito__omp_dep_numa(depend);
  if (!c->detach) {
    if (now && !depend) {
      run_inline(c, align, NULL, NULL);
      return;
    }
    if (now) {
      run_inline(c, align, ito__omp_dep_register(parent, depend, 0), NULL);
      return;
    }
    if (!depend && !tm) {
      run_inline(c, align, NULL, NULL);
      return;
    }
    /* A team of one: only its own strand could run the task, at its next
     * scheduling point, so it runs now (as LLVM's runtime runs tasks in a
     * serialized team), unless as many such tasks are already running
     * inside one another's code: deferred then, the stack stays bounded
     * (a chain of tasks that each make the next one). */
    if (tm && tm->n == 1 && !depend) {
      struct ident *d = &tm->ids[0];
      if (d->nested < SOLO_NEST) {
        d->nested++;
        run_inline(c, align, NULL, NULL);
        d->nested--;
        return;
      }
    }
    if (tm && ito__omp_pending_many(tm, parent->id, PENDING_CUTOFF)) {
      run_inline(c, align, depend ? ito__omp_dep_register(parent, depend, 0) : NULL, NULL);
      return;
    }
  }
  if (c->prio > 0 && tm) __atomic_store_n(&tm->has_prio, 1, __ATOMIC_RELAXED);
  if (!tm && depend) solo_team(parent); /* (made by the creator, before anyone else may need it) */
  task *t = build_child(c, align);
  if (depend) {
    struct dnode *n = ito__omp_dep_register(parent, depend, c->prio);
    t->node = n;
    if (now) { /* undeferred with detach: its code runs once its predecessors are done */
      ito__omp_dep_wait(n, parent);
      ito__omp_run_task(parent, t);
      return;
    }
    if (tm) {
      t->maker = parent->id;
      __atomic_fetch_add(&tm->ids[parent->id].waiting, 1, __ATOMIC_RELAXED);
    }
    ito__omp_dep_defer(n, t);
    return;
  }
  if (now || !tm)
    ito__omp_run_task(parent, t);
  else
    ito__omp_push_pending(tm, parent->id, t);
}

/* Every task but the common undeferred one (GOMP_task's arguments). Hidden,
 * not static: the x86-64 entry below jumps to it by name. */
__attribute__((noinline, noclone, used)) void ito__omp_task_slow(
    void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
    bool if_clause, unsigned flags, void **depend, int priority, void *detach);
/* GOMP_task: undeferred (if(0)) without dependences, detach or a copy
 * function, cancellation off, goes to undeferred; everything else to
 * ito__omp_task_slow, both by a jump. In C, gcc loaded the four arguments
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
__asm__(
    ".text\n\t"
    ".globl GOMP_task\n\t"
    ".type GOMP_task, @function\n\t"
    ".p2align 4\n"
    "GOMP_task:\n\t" ENDBR
    "testb %r9b, %r9b\n\t" /* if_clause */
    "jne 1f\n\t"
    "testq %rdx, %rdx\n\t" /* cpyfn */
    "jne 1f\n\t"
    "movl 8(%rsp), %eax\n\t" /* flags */
    "testl $0x2008, %eax\n\t"
    "jne 1f\n\t"
    "cmpl $0, ito__omp_cancellation(%rip)\n\t"
    "jne 1f\n\t"
    "shrl %eax\n\t"
    "andl $1, %eax\n\t"
    "movl %eax, %edx\n\t" /* final_ */
    "jmp ito__omp_undeferred\n"
    "1:\n\t"
    "jmp ito__omp_task_slow\n\t"
    ".size GOMP_task, .-GOMP_task");
#undef ENDBR
#else
OMP_API void GOMP_task(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size,
                       long arg_align, bool if_clause, unsigned flags, void **depend, int priority,
                       void *detach) {
  if (!if_clause && !(flags & (8 | TASK_FLAG_DETACH)) && LIKELY(!cpyfn) &&
      !UNLIKELY(ito__omp_cancellation)) {
    ito__omp_undeferred(fn, data, (flags & TASK_FLAG_FINAL) != 0);
    return;
  }
  ito__omp_task_slow(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority,
                     detach);
}
#endif

void ito__omp_task_slow(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                        long arg_size, long arg_align, bool if_clause, unsigned flags,
                        void **depend, int priority, void *detach) {
  void **slot = ito__omp_ctx();
  task *parent = ito__omp_cur_at(slot);
  /* in a cancelled region or taskgroup a new task is discarded at once */
  if (UNLIKELY(ito__omp_cancellation) && ito__omp_create_cancelled(parent)) return;
  size_t align = arg_align > 0 ? (size_t)arg_align : 1;
  struct create c = {parent, (flags & TASK_FLAG_FINAL) != 0,
                     fn,     data,
                     cpyfn,  (size_t)arg_size,
                     0,      0,
                     0,      0,
                     NULL,   0,
                     -2};
  if (!if_clause && !(flags & (8 | TASK_FLAG_DETACH))) {
    run_inline(&c, align, NULL, slot);
    return;
  }
  if (UNLIKELY((flags & TASK_FLAG_DETACH) && detach)) c.detach = (uintptr_t *)detach;
  if (UNLIKELY((flags & TASK_FLAG_PRIORITY) && priority > 0))
    c.prio = priority < ito__omp_g.max_task_priority ? priority : ito__omp_g.max_task_priority;
  create_task(&c, align, if_clause, (flags & 8) ? depend : NULL);
}

OMP_API void GOMP_taskwait(void) {
  task *t = ito__omp_cur_at(ito__omp_ctx());
  if (__atomic_load_n(&t->kids, __ATOMIC_ACQUIRE) & KID_RUN_MASK)
    ito__omp_wait_kids(t, KID_WAIT_RUN, false);
}

OMP_API void GOMP_taskwait_depend(void **depend) {
  task *t = ito__omp_cur();
  struct dnode *n = ito__omp_dep_register(t, depend, 0);
  ito__omp_dep_wait(n, t);
  ito__omp_dep_complete(n);
}

/* A task scheduling point: one pending descendant of the task runs here
 * (task scheduling constraint 2), if there is one; else the strand lets
 * its worker run something else for a while. */
OMP_API void GOMP_taskyield(void) {
  task *t = ito__omp_cur();
  team *tm = ito__omp_pend_team(t);
  if (tm && ito__omp_run_pending(t, tm, t)) return;
  ito_yield();
}

OMP_API void GOMP_taskgroup_start(void) {
  task *t = ito__omp_cur();
  struct taskgroup *g = malloc(sizeof *g);
  if (!g) ito__omp_fatal("out of memory for a taskgroup");
  g->prev = t->tg;
  g->red = t->tg ? t->tg->red : t->red0;
  __atomic_store_n(&g->count, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&g->cancelled, 0, __ATOMIC_RELAXED);
  g->workshare = 0;
  t->tg = g;
}

OMP_API void GOMP_taskgroup_end(void) {
  task *t = ito__omp_cur();
  struct taskgroup *g = t->tg;
  if (!g) ito__omp_fatal("GOMP_taskgroup_end without GOMP_taskgroup_start");
  ito__omp_word_wait(&g->count, KID_WAIT_ALIVE, &t->qlock, &t->qhead, &t->qtail, t, false);
  t->tg = g->prev;
  free(g);
}

/* ---- taskloop ----------------------------------------------------------------------- */

static void taskloop(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size,
                     long arg_align, unsigned flags, unsigned long num_tasks, bool up,
                     unsigned long long start, unsigned long long end, unsigned long long step,
                     bool is_signed) {
  unsigned long long d;
  bool empty = up ? (is_signed ? (long long)start >= (long long)end : start >= end)
                  : (is_signed ? (long long)start <= (long long)end : start <= end);
  unsigned long long a = up ? step : -step;
  d = up ? end - start : start - end;
  unsigned long long niter = empty ? 0 : d / a + (d % a != 0);
  task *parent = ito__omp_cur();
  bool group = !(flags & TASK_FLAG_NOGROUP);
  /* reductions: the array gcc registers is the third word of the data (after
   * the bounds); its d[2] left 0 tells the caller nothing was registered */
  uintptr_t *red = (flags & TASK_FLAG_REDUCTION) && group ? ((uintptr_t **)data)[2] : NULL;
  if (red && (!niter || (UNLIKELY(ito__omp_cancellation) && ito__omp_create_cancelled(parent)))) {
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
      if (UNLIKELY(ito__omp_cancellation) && ito__omp_create_cancelled(parent)) break;
      unsigned long long len = q + (i < r);
      struct create c = {parent,
                         (flags & TASK_FLAG_FINAL) != 0,
                         fn,
                         data,
                         cpyfn,
                         (size_t)arg_size,
                         0,
                         1,
                         start + at * step,
                         0,
                         NULL,
                         0,
                         -2};
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
