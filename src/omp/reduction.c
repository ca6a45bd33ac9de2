/* libito-omp.so: task reductions (taskgroup task_reduction, in_reduction,
 * taskloop reduction, the task modifier on parallel and work-sharing
 * reductions). docs/openmp.md, "Task reductions".
 *
 * gcc lays out what it registers as an array of words:
 *   d[0] variables, d[1] bytes of one copy of all of them, d[2] alignment
 *   (we store the copies' base), d[3] allocator, d[4] the next array of the
 *   same registration (we link the last one to what was registered before),
 *   d[5] ours (the team whose slots the copies are, in the first array of a
 *   registration only: unregistering stops at the next nonzero), d[6] ours
 *   (the end of the copies), then per variable: its address, its offset in
 *   a copy, one word ours.
 * The copies are one per team member: n of d[1] bytes each, zeroed, and
 * the code gcc emits combines copies 0 .. omp_get_num_threads() - 1 into the
 * original at the end. A member that has a work-sharing or parallel
 * reduction with the task modifier uses copy number omp_get_thread_num()
 * directly.
 *
 * Slots. Two tasks must never update one copy at once. In libgomp a task
 * uses the copy of the OS thread that runs it, and that thread's own task
 * is suspended meanwhile; here tasks and members are lightweight threads
 * that run wherever, so the copies are leased: slot k of a team is a stack
 * of holders, of which only the top may run; a member with copies of its
 * own holds its slot from the start of the construct; a task holds one from
 * its first remap to the end of its code. A holder that waits (taskwait,
 * taskgroup end, barrier, dependences, the end of a region) lends its slot:
 * a task may push itself on a slot that is empty, whose top waits at a
 * barrier, or whose top waits in a task for that task's descendants (a
 * taskwait, a taskgroup end, an undeferred task's dependences), of which
 * it is one (task scheduling constraint 2: otherwise a task that waits
 * holding a lock would lend its copy to a sibling that waits for that
 * lock, and its own child, which needs the copy, would never run). The holder, once its wait is over, goes on only when it is
 * the top again (a task run as a call inside its creator waits on its
 * creator's behalf: the nearest holder among its undeferred creators
 * lends, ito_omp_red_holder). A task run as a call inside its creator
 * (undeferred) pushes itself on the creator's slot, since the creator
 * cannot run before it returns. A holder's children are queued rather than
 * run first (task.c): the holder goes on with its copy, as a libgomp
 * thread does, and idle workers take the children, each with a free slot.
 * A task that finds no slot to take parks until one is lent or freed.
 *
 * Invariants (under the team's rs_lock):
 *  1. t->rteam == tm and t->rslot == k exactly while t is in slot k's stack
 *     of tm; rs[k] is its top, each holder's rbelow the one under it.
 *  2. Only the top of a stack runs code that may touch copy k; every other
 *     holder is waiting (rwait) or is between the end of its wait and
 *     seeing itself the top again.
 *  3. A holder pops itself only when it is the top.
 *  4. An undeferred task whose creator is the running top of slot k pushes
 *     itself there and pops itself without the lock (quiet_take,
 *     quiet_release): while its creator is suspended in the call that runs
 *     it, the top (the creator, then the task) is never lendable, so no
 *     other task writes rs[k], and what a waiter tests cannot change.
 *     rs[k] is written with release and read with acquire, so a reader
 *     that finds a new top sees its fields. */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- slots -------------------------------------------------------------------------- */

static void rs_alloc(team *tm) {
  ito__dropin_lock(&tm->rs_lock);
  if (!tm->rs) {
    struct rslot *rs = aligned_alloc(_Alignof(struct rslot), tm->n * sizeof *rs);
    if (rs) memset(rs, 0, tm->n * sizeof *rs);
    if (!rs) ito_omp_fatal("out of memory for task reductions");
    tm->rs = rs;
  }
  ito__dropin_unlock(&tm->rs_lock);
}

static inline task *rs_top(team *tm, unsigned k) {
  return __atomic_load_n(&tm->rs[k].top, __ATOMIC_ACQUIRE);
}
static inline void rs_set(team *tm, unsigned k, task *t) {
  __atomic_store_n(&tm->rs[k].top, t, __ATOMIC_RELEASE);
}

/* t descends from x. Safe on t's live ancestors: a task's record outlives
 * its children (task_finish waits for them). */
static bool descends(const task *t, const task *x) {
  for (const task *a = t->parent; a; a = a->parent)
    if (a == x) return true;
  return false;
}

/* t may push itself on a slot whose top is top. */
static inline bool lendable(const task *top, const task *t) {
  if (!top || top->rwait == RED_LEND_ANY) return true;
  return top->rwait == RED_LEND_DESC && descends(t, top->rfor);
}

static void push(team *tm, unsigned k, task *t) {
  t->rbelow = rs_top(tm, k);
  t->rteam = tm;
  t->rslot = k;
  t->rwait = 0;
  rs_set(tm, k, t);
}

/* Invariant 4: t, undeferred, on its creator's slot while the creator is
 * its running top. */
static inline bool quiet_take(task *t, team *tm) {
  task *par = t->parent;
  if (t->kind != TASK_INLINE || !par || par->rteam != tm || par->rwait ||
      rs_top(tm, par->rslot) != par)
    return false;
  push(tm, par->rslot, t);
  return true;
}

struct take {
  team *tm;
  task *t;
};

/* Pushes t on a slot it may take; false if none. Called under cq_lock
 * (ito_omp_team_wait's predicate) or with no lock held. */
static int try_take(void *p) {
  struct take *a = p;
  team *tm = a->tm;
  task *t = a->t;
  ito__dropin_lock(&tm->rs_lock);
  unsigned n = tm->n, start = t->parent ? t->parent->id % n : 0;
  int got = 0;
  task *par = t->parent;
  /* first the creator's slot: it is suspended in the call that runs t
   * (undeferred), or lent it while t runs first (task.c) */
  if (par && par->rteam == tm) {
    task *top = rs_top(tm, par->rslot);
    if ((t->kind == TASK_INLINE && top == par) || lendable(top, t)) {
      push(tm, par->rslot, t);
      got = 1;
    }
  }
  for (unsigned i = 0; !got && i < n; i++) {
    unsigned k = (start + i) % n;
    if (lendable(rs_top(tm, k), t)) {
      push(tm, k, t);
      got = 1;
    }
  }
  ito__dropin_unlock(&tm->rs_lock);
  return got;
}

static unsigned acquire(task *t, team *tm) {
  if (t->rteam == tm) return t->rslot;
  if (t->rteam) ito_omp_fatal("a task uses task reductions of two teams");
  if (!tm->rs) rs_alloc(tm);
  if (quiet_take(t, tm)) return t->rslot;
  struct take a = {tm, t};
  if (!try_take(&a)) ito_omp_team_wait(tm, try_take, &a);
  return t->rslot;
}

/* A member takes its own slot k for the copies it uses directly. */
struct own {
  team *tm;
  task *t;
  unsigned k;
};
static int try_own(void *p) {
  struct own *a = p;
  ito__dropin_lock(&a->tm->rs_lock);
  int got = rs_top(a->tm, a->k) == NULL;
  if (got) push(a->tm, a->k, a->t);
  ito__dropin_unlock(&a->tm->rs_lock);
  return got;
}
static void acquire_own(task *t, team *tm) {
  if (t->rteam == tm) {
    if (t->rslot != t->id) ito_omp_fatal("task reductions: a member holds another's copy");
    return;
  }
  if (!tm->rs) rs_alloc(tm);
  struct own a = {tm, t, t->id};
  if (!try_own(&a)) ito_omp_team_wait(tm, try_own, &a);
}

/* A task of a taskloop with reductions: gcc's code for it indexes the
 * copies with omp_get_thread_num() instead of remapping, so it takes its
 * slot before it runs (omp_get_thread_num answers the slot: omp.c). */
void ito_omp_red_take(task *t) {
  team *tm = t->rtake;
  t->rtake = NULL;
  acquire(t, tm);
}

void ito_omp_red_release(task *t) {
  team *tm = t->rteam;
  ITO_OMP_ASSERT(rs_top(tm, t->rslot) == t && !t->rwait); /* invariant 3 */
  /* an undeferred task on its creator's slot gives it back quietly
   * (invariant 4): no lock, nobody to wake */
  bool quiet = t->kind == TASK_INLINE && t->rbelow == t->parent;
  if (!quiet) ito__dropin_lock(&tm->rs_lock);
  rs_set(tm, t->rslot, t->rbelow);
  t->rteam = NULL;
  t->rbelow = NULL;
  if (!quiet) {
    ito__dropin_unlock(&tm->rs_lock);
    ito_omp_team_notify(tm);
  }
}

void ito_omp_red_lend(task *t, task *waiter) {
  team *tm = t->rteam;
  ito__dropin_lock(&tm->rs_lock);
  t->rfor = waiter;
  t->rwait = waiter ? RED_LEND_DESC : RED_LEND_ANY;
  ito__dropin_unlock(&tm->rs_lock);
  ito_omp_team_notify(tm);
}

static int is_top(void *p) {
  task *t = p;
  ito__dropin_lock(&t->rteam->rs_lock);
  int top = rs_top(t->rteam, t->rslot) == t;
  ito__dropin_unlock(&t->rteam->rs_lock);
  return top;
}

void ito_omp_red_reclaim(task *t) {
  team *tm = t->rteam;
  ito__dropin_lock(&tm->rs_lock);
  t->rwait = 0;
  int top = rs_top(tm, t->rslot) == t;
  ito__dropin_unlock(&tm->rs_lock);
  if (!top) ito_omp_team_wait(tm, is_top, t); /* invariant 2: borrowers above us end first */
}

/* ---- registration --------------------------------------------------------------------- */

/* Sets up the arrays of one registration (data and those linked from it by
 * d[4]) for tm's n members: fresh zeroed copies, or (orig) those of the
 * member that registered the same work-sharing construct first; links the
 * last array to old. */
static void reg(uintptr_t *data, uintptr_t *old, uintptr_t *orig, team *tm, unsigned n) {
  for (uintptr_t *d = data;;) {
    if (orig) {
      d[2] = orig[2];
      d[6] = orig[6];
      orig = (uintptr_t *)orig[4];
    } else {
      size_t align = d[2] < sizeof(void *) ? sizeof(void *) : (size_t)d[2];
      if (align & (align - 1)) ito_omp_fatal("task reductions: alignment %zu is not a power of 2", align);
      if (d[1] && n > SIZE_MAX / d[1]) ito_omp_fatal("task reductions: copies too large");
      size_t sz = (size_t)d[1] * n;
      void *p = aligned_alloc(align, ((sz ? sz : 1) + align - 1) & ~(align - 1));
      if (!p) ito_omp_fatal("out of memory for task reductions (%zu bytes)", sz);
      memset(p, 0, sz);
      d[2] = (uintptr_t)p;
      d[6] = d[2] + sz;
    }
    d[5] = 0;
    if (!d[4]) {
      d[4] = (uintptr_t)old;
      break;
    }
    d = (uintptr_t *)d[4];
  }
  data[5] = (uintptr_t)tm;
}

static inline uintptr_t *visible(task *t) { return t->tg ? t->tg->red : t->red0; }

OMP_API void GOMP_taskgroup_reduction_register(uintptr_t *data) {
  task *me = ito_omp_cur();
  if (!me->tg) ito_omp_fatal("GOMP_taskgroup_reduction_register outside a taskgroup");
  team *tm = ito_omp_ws_team(me);
  reg(data, me->tg->red, NULL, tm, tm->n);
  me->tg->red = data;
}

OMP_API void GOMP_taskgroup_reduction_unregister(uintptr_t *data) {
  uintptr_t *d = data;
  do {
    free((void *)d[2]);
    d = (uintptr_t *)d[4];
  } while (d && !d[5]);
}

/* Work-sharing constructs with the task modifier: the member that enters
 * first makes the copies, the others share them (through a work share of
 * their own, so that each member registers in the same order); every member
 * holds its own slot until GOMP_workshare_task_reduction_unregister. */
void ito_omp_ws_reductions(task *me, uintptr_t *data) {
  team *tm = ito_omp_ws_team(me);
  GOMP_taskgroup_start();
  me->tg->workshare = 1; /* a cancel taskgroup in it is for the one around it (cancel.c) */
  int first;
  struct ws *w = ito_omp_ws_enter(me, &first);
  if (first) {
    reg(data, me->tg->red, NULL, tm, tm->n);
    atomic_store_explicit(&w->copy, data, memory_order_relaxed);
    ito_omp_ws_publish(me, w);
  } else {
    reg(data, me->tg->red, atomic_load_explicit(&w->copy, memory_order_relaxed), tm, tm->n);
  }
  ito_omp_ws_leave(me);
  me->tg->red = data;
  acquire_own(me, tm);
}

OMP_API void GOMP_workshare_task_reduction_unregister(bool cancelled) {
  task *me = ito_omp_cur();
  if (!me->tg || !me->tg->red)
    ito_omp_fatal("GOMP_workshare_task_reduction_unregister without task reductions");
  uintptr_t *data = me->tg->red;
  GOMP_taskgroup_end();
  if (me->rteam) ito_omp_red_release(me);
  if (me->id == 0) GOMP_taskgroup_reduction_unregister(data);
  if (!cancelled) GOMP_barrier();
}

/* parallel with the task modifier: registered for the team's size before
 * the members start; each member holds its slot for the whole region. */
void ito_omp_parallel_reductions(team *tm, uintptr_t *data) {
  reg(data, NULL, NULL, tm, tm->n);
  tm->red = data;
  rs_alloc(tm);
}
void ito_omp_member_reductions(task *t) { acquire_own(t, t->team); }
void ito_omp_team_reductions_end(team *tm) {
  free(tm->rs);
  tm->rs = NULL;
}

/* ---- remapping ------------------------------------------------------------------------ */

static void not_found(void *p) {
  ito_omp_fatal("couldn't find matching task_reduction or reduction with task modifier for %p",
                p);
}

OMP_API void GOMP_task_reduction_remap(size_t cnt, size_t cntorig, void **ptrs) {
  task *me = ito_omp_cur();
  uintptr_t *data = visible(me);
  if (!data) not_found(cnt ? ptrs[0] : NULL);
  unsigned k = acquire(me, (team *)data[5]);
  for (size_t i = 0; i < cnt; i++) {
    uintptr_t p = (uintptr_t)ptrs[i], *hit = NULL, *in = NULL;
    for (uintptr_t *d = data; d && !hit && !in; d = (uintptr_t *)d[4]) {
      for (uintptr_t j = 0; j < d[0]; j++)
        if (d[7 + 3 * j] == p) {
          hit = d;
          ptrs[i] = (void *)(d[2] + k * d[1] + d[8 + 3 * j]);
          if (i < cntorig) ptrs[cnt + i] = (void *)p;
          break;
        }
      if (!hit && p >= d[2] && p < d[6]) in = d; /* an earlier remap's copy */
    }
    if (hit) continue;
    if (!in) not_found((void *)p);
    uintptr_t off = (p - in[2]) % in[1];
    ptrs[i] = (void *)(in[2] + k * in[1] + off);
    if (i < cntorig) {
      uintptr_t j = 0;
      while (j < in[0] && in[8 + 3 * j] != off) j++;
      if (j == in[0]) not_found((void *)p);
      ptrs[cnt + i] = (void *)in[7 + 3 * j];
    }
  }
}
