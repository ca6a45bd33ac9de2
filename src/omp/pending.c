
/* libito-omp.so: pending tasks, and the waits at task scheduling points
 * that run them. docs/openmp.md, "Explicit tasks".
 *
 * An explicit task runs on the strand of a member of its team, as a call
 * in that strand's frame, and is that member for its whole life:
 * omp_get_thread_num() and the threadprivate variables it sees are the
 * member's (the member's strand carries its TLS block). A deferred task not
 * run at once waits in the list of a member (its creator's, or for a task
 * made ready by a dependence, the member whose task released it) until a
 * strand of the team, waiting at a task scheduling point, takes it:
 *  - at a barrier or the end of a region, any pending task of the team;
 *  - in a taskwait, a taskgroup end, a taskyield or an undeferred task's
 *    wait for its dependences, only descendants of the waiting task (task
 *    scheduling constraint 2: a tied task is suspended only for tasks that
 *    descend from it, so a task waiting with a lock held never lends its
 *    member to a sibling that waits for that lock).
 * A strand in a taskwait takes its own newest task first (depth first,
 * its caches), or else another member's oldest (the largest); at a barrier
 * it takes the oldest (creation order). With priorities, the highest it
 * may run. A waiting strand that finds none announces itself in its
 * member's ident (parked, what it admits, where it parks) and parks; a
 * strand that makes a task pending wakes one announced strand that admits it.
 *
 * Invariants:
 *  1. A task is in at most one list, linked by pnext/pprev, under that
 *     ident's lock; the ident's n counts the tasks in its list.
 *  2. A task taken from a list is run by the strand that took it, and by no
 *     other: its id is that strand's member number from its start to its
 *     end. Two pieces of code running at once for a team never share a
 *     member number (each member's strand runs one thing at a time).
 *  3. An ident's wait fields (lendfor, wq_*) are read only under its lock
 *     while parked is set; the strand clears parked under the lock before
 *     it leaves the wait, so a waker holding the lock may use the queue.
 *  4. Dekker: a pusher counts its task in its ident's n, fences, then
 *     reads nparked; a waiter adds to nparked, then reads the idents' n
 *     (sequentially consistent), so one of them sees the other and no
 *     pending task is left with a strand parked that admits it.
 *  5. Once a task is in a list another strand may take, run and free it:
 *     the pusher reads nothing of it after its ident's unlock. Whom to wake
 *     is decided from the task's parent, read before, which the caller
 *     keeps alive until the push returns.
 *  6. A poke wakes one strand for a task; a strand that was poked and
 *     then leaves its wait (its own wait is over: a cancelled barrier, its
 *     children done) may not have taken that task, so it wakes every
 *     announced strand as it leaves, and those that admit the task look
 *     for it again. Without this a poke can go to a strand on its way out
 *     while the one that would run the task stays parked.
 * Nothing on the path of a task that is made and run by one strand is
 * written by the others (no team-wide count): a team's lists scale with
 * its members. */
#include "omp_int.h"

#include "../core/relax.h"

#include <stdlib.h>
#include <string.h>

/* An ident's lock: a spin lock of the runtime's kind (0 free, 1 held),
 * inline on the paths every task takes. (Code of libito-omp.so is not the
 * program's: a member is not preempted in it, docs/monitor.md.) */
static inline void id_lock(int *l) {
  for (;;) {
    if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) return;
    while (__atomic_load_n(l, __ATOMIC_RELAXED)) cpu_relax();
  }
}
static inline void id_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

void ito__omp_ids_init(team *tm) {
  if (tm->n <= TEAM_IDS_INLINE) {
    tm->ids = tm->ids_in; /* (zeroed with the team) */
    return;
  }
  size_t sz = (size_t)tm->n * sizeof *tm->ids;
  tm->ids = aligned_alloc(_Alignof(struct ident), sz);
  if (!tm->ids) ito__omp_fatal("out of memory for a team of %u threads", tm->n);
  memset(tm->ids, 0, sz);
}

void ito__omp_ids_free(team *tm) {
#if !defined(NDEBUG) || ITO_ASAN || ITO_TSAN
  for (unsigned k = 0; k < tm->n; k++)
    ITO_OMP_ASSERT(!__atomic_load_n(&tm->ids[k].n, __ATOMIC_SEQ_CST));
#endif
  for (unsigned k = 0; k < tm->n; k++) {
    void *b = tm->ids[k].blocks;
    while (b) {
      void *next = *(void **)b;
      free(b);
      b = next;
    }
  }
  if (tm->ids != tm->ids_in) free(tm->ids);
  tm->ids = NULL;
}

team *ito__omp_pend_team(task *cur) {
  if (LIKELY(cur->team != NULL)) return cur->team;
  while (cur->kind != TASK_INITIAL && cur->parent) cur = cur->parent;
  return cur->solo;
}

/* t descends from x (is x, or one of its descendants' children). Safe:
 * a task's record outlives its children. An x that is not a deferred
 * explicit task (implicit, initial, run inline) and is an ancestor of t
 * is t's nearest such ancestor (imp) or one of imp's: the walk starts
 * there, past the deferred tasks between (no step for a member waiting at
 * a barrier or a taskgroup's end, or an inline task waiting for its
 * children, whatever the depth of the tasks under it: a chain of tasks
 * that each make the next costs no walk along the chain). */
static inline bool descends(const task *t, const task *x) {
  ITO_OMP_ASSERT(!t || t->imp);
  if (x->kind != TASK_EXPLICIT) t = t->imp;
  while (t && t->depth > x->depth) t = t->parent;
  return t == x;
}
static inline bool admits(const task *x, const task *t) { return !x || descends(t, x); }
/* admits(x, t) for a pending task t of parent par: t is never a waiting
 * task, so it descends from x exactly when its parent does (t's imp is
 * par's, and the walk from t steps to par unless t is shallower than x). */
static inline bool admits_child(const task *x, const task *par) { return !x || descends(par, x); }

static void unlink_task(struct ident *d, task *t) {
  if (t->pprev)
    t->pprev->pnext = t->pnext;
  else
    d->head = t->pnext;
  if (t->pnext)
    t->pnext->pprev = t->pprev;
  else
    d->tail = t->pprev;
  t->pnext = t->pprev = NULL;
  __atomic_store_n(&d->n, __atomic_load_n(&d->n, __ATOMIC_RELAXED) - 1, __ATOMIC_RELAXED);
}

/* Wakes one announced strand of tm that admits a child of par, starting
 * after member k. */
/* Marks ident d poked and wakes its announced strand (d's lock held by
 * the caller, which checked that d is parked and not yet poked; released
 * here). */
static void poke_ident(struct ident *d) {
  __atomic_store_n(&d->poked, 1, __ATOMIC_RELAXED);
  ito__dropin_lock(d->wq_lock, ITO_DROPIN_LR_QUEUE);
  void *list = ito__dropin_wq_take(d->wq_head, d->wq_tail, -1);
  ito__dropin_unlock(d->wq_lock);
  id_unlock(&d->lock);
  ito__dropin_wq_wake(list);
}

/* Invariant 6: every announced strand of tm looks at the lists again. */
static void poke_all(team *tm) {
  for (unsigned j = 0; j < tm->n; j++) {
    struct ident *d = &tm->ids[j];
    if (!__atomic_load_n(&d->parked, __ATOMIC_RELAXED)) continue;
    id_lock(&d->lock);
    if (d->parked && !d->poked)
      poke_ident(d);
    else
      id_unlock(&d->lock);
  }
}

static void poke(team *tm, unsigned k, const task *par) {
  unsigned n = tm->n;
  for (unsigned i = 1; i <= n; i++) {
    unsigned j = k + i < n ? k + i : k + i - n;
    struct ident *d = &tm->ids[j];
    if (!__atomic_load_n(&d->parked, __ATOMIC_RELAXED)) continue;
    id_lock(&d->lock);
    if (d->parked && !d->poked && admits_child(d->lendfor, par)) {
      poke_ident(d);
      return;
    }
    id_unlock(&d->lock);
  }
}

void ito__omp_push_pending(team *tm, unsigned k, task *t) {
  ITO_OMP_ASSERT(k < tm->n && !t->pnext && !t->pprev && t->kind == TASK_EXPLICIT);
  ITO_OMP_ASSERT(t->imp == t->parent->imp && t->depth == t->parent->depth + 1);
  const task *par = t->parent; /* invariant 5 */
  struct ident *d = &tm->ids[k];
  id_lock(&d->lock);
  t->pprev = d->tail;
  if (d->tail)
    d->tail->pnext = t;
  else
    d->head = t;
  d->tail = t;
  __atomic_store_n(&d->n, __atomic_load_n(&d->n, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
  id_unlock(&d->lock);
  __atomic_thread_fence(__ATOMIC_SEQ_CST); /* invariant 4 */
  if (__atomic_load_n(&tm->nparked, __ATOMIC_RELAXED)) poke(tm, k, par);
}

bool ito__omp_pending_sum(team *tm, unsigned cap) {
  unsigned long sum = 0;
  for (unsigned j = 0; j < tm->n; j++)
    sum += __atomic_load_n(&tm->ids[j].n, __ATOMIC_RELAXED) +
           __atomic_load_n(&tm->ids[j].waiting, __ATOMIC_RELAXED);
  return sum >= (unsigned long)cap * tm->n;
}

/* Takes a pending task of tm that x admits, for member k's strand: in a
 * taskwait (x set) its own newest, else the oldest of the next member that
 * has one; at a barrier the oldest of its own, else of the next member's
 * (libgomp's orders: a task's children last in first out, the team's
 * queue first in first out). */
static task *take(team *tm, unsigned k, const task *x) {
  unsigned n = tm->n;
  bool prio = __atomic_load_n(&tm->has_prio, __ATOMIC_RELAXED);
  for (unsigned i = 0; i < n; i++) {
    unsigned j = k + i < n ? k + i : k + i - n;
    struct ident *d = &tm->ids[j];
    if (!__atomic_load_n(&d->n, __ATOMIC_SEQ_CST)) continue; /* invariant 4 */
    task *best = NULL;
    id_lock(&d->lock);
    bool newest = i == 0 && x; /* (a barrier's wait: oldest first everywhere) */
    for (task *t = newest ? d->tail : d->head; t; t = newest ? t->pprev : t->pnext) {
      if (!admits(x, t)) continue;
      if (!best || t->prio > best->prio) best = t;
      if (!prio) break;
    }
    if (best) unlink_task(d, best);
    id_unlock(&d->lock);
    if (best) return best;
  }
  return NULL;
}

bool ito__omp_run_pending(task *cur, team *tm, const task *x) {
  task *t = take(tm, cur->id, x);
  if (!t) return false;
  ito__omp_run_task(cur, t);
  return true;
}

static void announce(team *tm, struct ident *me, task *x, int *qlock, void **head, void **tail) {
  id_lock(&me->lock);
  me->lendfor = x;
  me->wq_lock = qlock;
  me->wq_head = head;
  me->wq_tail = tail;
  /* a wait nested in a task this strand runs while announced keeps a poke
   * the outer wait got meanwhile: the nested one answers it (invariant 6) */
  if (!me->parked) __atomic_store_n(&me->poked, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&me->parked, 1, __ATOMIC_RELAXED);
  id_unlock(&me->lock);
  __atomic_fetch_add(&tm->nparked, 1, __ATOMIC_SEQ_CST); /* invariant 4 */
}

/* Returns whether the strand was poked while announced. */
static bool unannounce(team *tm, struct ident *me) {
  id_lock(&me->lock); /* invariant 3: no waker is using the queue after this */
  bool poked = __atomic_load_n(&me->poked, __ATOMIC_RELAXED);
  __atomic_store_n(&me->parked, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&me->poked, 0, __ATOMIC_RELAXED);
  id_unlock(&me->lock);
  __atomic_fetch_sub(&tm->nparked, 1, __ATOMIC_RELAXED);
  return poked;
}

void ito__omp_lend_wait(task *cur, task *lendfor, bool any, int *qlock, void **head, void **tail,
                        int (*done)(void *, int), void *arg) {
  team *tm = lendfor || any ? ito__omp_pend_team(cur) : NULL;
  struct ident *me = NULL;
  if (tm) {
    ITO_OMP_ASSERT(cur->id < tm->n);
    me = &tm->ids[cur->id];
  }
  const task *x = any ? NULL : lendfor;
  bool armed = false, poked = false;
  for (;;) {
    if (done(arg, WAIT_CHECK)) break;
    if (me && ito__omp_run_pending(cur, tm, x)) continue;
    if (me) {
      announce(tm, me, (task *)x, qlock, head, tail);
      if (ito__omp_run_pending(cur, tm, x)) { /* one made pending before it saw us */
        poked |= unannounce(tm, me);
        continue;
      }
    }
    ito__dropin_lock(qlock, ITO_DROPIN_LR_QUEUE);
    armed = true;
    if (done(arg, WAIT_ARM)) {
      ito__dropin_unlock(qlock);
      if (me) poked |= unannounce(tm, me);
      break;
    }
    if (me && __atomic_load_n(&me->poked, __ATOMIC_RELAXED)) {
      ito__dropin_unlock(qlock);
      poked |= unannounce(tm, me);
      continue;
    }
    /* whoever makes done true, or pokes us, takes qlock to wake us */
    ito__dropin_wq_wait(qlock, head, tail, 0, CLOCK_MONOTONIC, NULL, NULL, NULL);
    if (me) poked |= unannounce(tm, me);
  }
  if (armed) {
    ito__dropin_lock(qlock, ITO_DROPIN_LR_QUEUE);
    done(arg, WAIT_DISARM);
    ito__dropin_unlock(qlock);
  }
  /* invariant 6 (the lists are read again by those woken: no task is
   * named, so none is read here) */
  if (poked && __atomic_load_n(&tm->nparked, __ATOMIC_SEQ_CST)) poke_all(tm);
}
