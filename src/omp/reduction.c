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
 * Two tasks never update one copy at once: a task uses the copy of the
 * member it runs as (omp_get_thread_num()), and each member's strand runs
 * one task at a time, the others it began being suspended at task
 * scheduling points (pending.c), as in libgomp, where a task uses the copy
 * of the thread that runs it. */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

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
      if (align & (align - 1))
        ito__omp_fatal("task reductions: alignment %zu is not a power of 2", align);
      if (d[1] && n > SIZE_MAX / d[1]) ito__omp_fatal("task reductions: copies too large");
      size_t sz = (size_t)d[1] * n;
      void *p = aligned_alloc(align, ((sz ? sz : 1) + align - 1) & ~(align - 1));
      if (!p) ito__omp_fatal("out of memory for task reductions (%zu bytes)", sz);
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
  task *me = ito__omp_cur();
  if (!me->tg) ito__omp_fatal("GOMP_taskgroup_reduction_register outside a taskgroup");
  team *tm = ito__omp_ws_team(me);
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
 * their own, so that each member registers in the same order). */
void ito__omp_ws_reductions(task *me, uintptr_t *data) {
  team *tm = ito__omp_ws_team(me);
  GOMP_taskgroup_start();
  me->tg->workshare = 1; /* a cancel taskgroup in it is for the one around it (cancel.c) */
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) {
    reg(data, me->tg->red, NULL, tm, tm->n);
    __atomic_store_n(&w->copy, data, __ATOMIC_RELAXED);
    ito__omp_ws_publish(me, w);
  } else {
    reg(data, me->tg->red, __atomic_load_n(&w->copy, __ATOMIC_RELAXED), tm, tm->n);
  }
  ito__omp_ws_leave(me);
  me->tg->red = data;
}

OMP_API void GOMP_workshare_task_reduction_unregister(bool cancelled) {
  task *me = ito__omp_cur();
  if (!me->tg || !me->tg->red)
    ito__omp_fatal("GOMP_workshare_task_reduction_unregister without task reductions");
  uintptr_t *data = me->tg->red;
  GOMP_taskgroup_end();
  if (me->id == 0) GOMP_taskgroup_reduction_unregister(data);
  if (!cancelled) GOMP_barrier();
}

/* parallel with the task modifier: registered for the team's size before
 * the members start. */
void ito__omp_parallel_reductions(team *tm, uintptr_t *data) {
  reg(data, NULL, NULL, tm, tm->n);
  tm->red = data;
}

/* ---- remapping ------------------------------------------------------------------------ */

static void not_found(void *p) {
  ito__omp_fatal("couldn't find matching task_reduction or reduction with task modifier for %p", p);
}

OMP_API void GOMP_task_reduction_remap(size_t cnt, size_t cntorig, void **ptrs) {
  task *me = ito__omp_cur();
  uintptr_t *data = visible(me);
  if (!data) not_found(cnt ? ptrs[0] : NULL);
  team *tm = (team *)data[5];
  /* (a region's tasks see only their team's registrations: implicit
   * tasks start from the region's; outside any region, a team of one's) */
  if (me->team ? tm != me->team : tm->n != 1)
    ito__omp_fatal("task reductions: a task uses the copies of another team's reduction");
  unsigned k = me->id;
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
