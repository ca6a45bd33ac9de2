/* libito-omp.so: cancellation (cancel and cancellation point constructs),
 * for parallel, for, sections and taskgroup, when cancel-var is true
 * (OMP_CANCELLATION). What is cancelled is a flag: the team's (parallel),
 * the work share's (for, sections), the taskgroup's. Cancellable barriers
 * (team.c) stop waiting once the team's is set; loops and sections hand
 * out no more work once their work share's is (loop.c, team.c); tasks not
 * yet begun in a cancelled team or taskgroup are discarded (task.c).
 * docs/openmp.md, "Cancellation". */
#include "omp_int.h"

/* gcc's GOMP_CANCEL_* (gomp-constants.h) */
enum { CANCEL_PARALLEL = 1, CANCEL_LOOP = 2, CANCEL_SECTIONS = 4, CANCEL_TASKGROUP = 8 };

static inline bool set(int *flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0; }

/* The taskgroup a cancel taskgroup in task t is about: its innermost open
 * one, else the one whose taskgroup set it is in. */
static inline struct taskgroup *group_of(task *t) { return t->tg ? t->tg : t->cgroup; }

/* A taskgroup opened for a work-sharing construct's task reductions stands
 * for the taskgroup around it (as in libgomp). */
static inline bool group_cancelled(struct taskgroup *g) {
  if (set(&g->cancelled)) return true;
  return g->workshare && g->prev && set(&g->prev->cancelled);
}

bool ito__omp_create_cancelled(task *parent) {
  if (parent->team && set(&parent->team->cancelled)) return true;
  struct taskgroup *g = group_of(parent); /* the new task's cgroup (task.c) */
  return g && group_cancelled(g);
}

bool ito__omp_task_cancelled(task *t) {
  ITO_OMP_ASSERT(t->kind == TASK_EXPLICIT || t->kind == TASK_INLINE);
  if (t->team && set(&t->team->cancelled)) return true;
  return t->cgroup && group_cancelled(t->cgroup);
}

OMP_API bool GOMP_cancellation_point(int which) {
  if (!ito__omp_cancellation) return false;
  task *t = ito__omp_cur();
  if (which & (CANCEL_LOOP | CANCEL_SECTIONS)) {
    /* the member's current work share (an explicit task has none) */
    return t->ws && set(&t->ws->cancelled);
  }
  if (which & CANCEL_TASKGROUP) {
    struct taskgroup *g = group_of(t);
    if (g && group_cancelled(g)) return true;
    /* and a cancelled parallel region cancels its tasks */
  }
  return t->team && set(&t->team->cancelled);
}

/* True: the construct which names is cancelled, and gcc's code goes to its
 * end. With cancel-var false it does nothing (false), as libgomp. */
OMP_API bool GOMP_cancel(int which, bool do_cancel) {
  if (!ito__omp_cancellation) return false;
  /* cancel ... if(false) is a cancellation point */
  if (!do_cancel) return GOMP_cancellation_point(which);
  ITO_OMP_ASSERT(which == CANCEL_PARALLEL || which == CANCEL_LOOP || which == CANCEL_SECTIONS ||
                 which == CANCEL_TASKGROUP);
  task *t = ito__omp_cur();
  if (which & (CANCEL_LOOP | CANCEL_SECTIONS)) {
    /* the other members stop at their next cancellation point, or when
     * they ask for more work; with no work share (an orphaned cancel)
     * only the caller leaves */
    if (t->ws) __atomic_store_n(&t->ws->cancelled, 1, __ATOMIC_RELEASE);
    return true;
  }
  if (which & CANCEL_TASKGROUP) {
    struct taskgroup *g = group_of(t);
    if (g) {
      if (g->workshare && g->prev) g = g->prev;
      __atomic_store_n(&g->cancelled, 1, __ATOMIC_RELEASE);
    }
    return true;
  }
  team *tm = t->team;
  if (!tm) return false; /* outside any region there is nothing to cancel */
  /* the flag first, then the wake under each member's queue lock: a member
   * about to park in a cancellable barrier tests it under that lock (team.c) */
  if (!__atomic_exchange_n(&tm->cancelled, 1, __ATOMIC_ACQ_REL)) ito__omp_barrier_wake(tm);
  return true;
}
