/* libito-omp.so: work-sharing loops (GOMP_loop_*), in every schedule, for
 * long and unsigned long long iteration variables. docs/openmp.md. */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* Iterations of start, start + incr, ... before end (up: increasing). */
static unsigned long count(bool up, ull start, ull end, ull incr, bool is_signed) {
  ull d, a;
  if (up) {
    if (is_signed ? (long long)start >= (long long)end : start >= end) return 0;
    d = end - start;
    a = incr;
  } else {
    if (is_signed ? (long long)start <= (long long)end : start <= end) return 0;
    d = start - end;
    a = -incr;
  }
  if (a == 0) ito_omp_fatal("a work-sharing loop with a step of 0");
  return (unsigned long)(d / a + (d % a != 0));
}

void ito_omp_runtime_sched(int *kind, unsigned long *chunk) {
  task *t = ito_omp_cur();
  int k = t->icv.sched & ~(int)SCHED_MONOTONIC;
  *kind = k == SCHED_AUTO ? SCHED_STATIC : k;
  *chunk = (unsigned long)t->icv.chunk;
}

struct loop_args {
  bool up, is_signed;
  ull start, end, incr;
  int kind;
  unsigned long chunk;
  int ordered;
};

static void loop_init(struct ws *w, void *p, unsigned nth) {
  struct loop_args *a = p;
  memset((char *)w + offsetof(struct ws, start), 0, sizeof *w - offsetof(struct ws, start));
  w->start = a->start;
  w->incr = a->incr;
  w->end = a->end;
  w->niter = count(a->up, a->start, a->end, a->incr, a->is_signed);
  w->kind = a->kind == SCHED_AUTO ? SCHED_STATIC : a->kind;
  w->chunk = a->chunk;
  if (w->kind != SCHED_STATIC && w->chunk == 0) w->chunk = 1;
  w->ordered = a->ordered;
  if (w->kind == SCHED_SPLIT) {
    /* each member starts with the block static would give it, in whole
     * chunks: chunk k is [k * chunk, (k + 1) * chunk), as a dynamic
     * schedule's chunks are (only the loop's last may be shorter) */
    w->ranges = aligned_alloc(64, nth * sizeof *w->ranges);
    if (!w->ranges) ito_omp_fatal("out of memory for a work-sharing loop");
    unsigned long c = w->chunk, nch = (w->niter + c - 1) / c;
    unsigned long q = nch / nth, r = nch % nth;
    for (unsigned i = 0; i < nth; i++) {
      unsigned long lo = i < r ? i * (q + 1) : r * (q + 1) + (i - r) * q;
      unsigned long hi = lo + q + (i < r);
      w->ranges[i].lock = 0;
      w->ranges[i].lo = lo * c < w->niter ? lo * c : w->niter;
      w->ranges[i].hi = hi * c < w->niter ? hi * c : w->niter;
    }
  }
}

/* Nonmonotonic dynamic: a member takes chunks from the front of its own
 * range; when it is empty it takes the back half of another member's, in
 * whole chunks (one chunk when one is left), which becomes its own. Every
 * range starts and every split falls at a multiple of the chunk, so every
 * chunk handed out is [k * chunk, (k + 1) * chunk) or the loop's last,
 * run by one member. A member that took the loop's last chunk stops there
 * (take). */
static bool take_split(struct ws *w, unsigned nth, unsigned id, unsigned long *i0,
                       unsigned long *i1) {
  struct range *mine = &w->ranges[id];
  unsigned long c = w->chunk;
  ito__dropin_lock(&mine->lock);
  if (mine->lo < mine->hi) {
    *i0 = mine->lo;
    *i1 = mine->hi - mine->lo > c ? mine->lo + c : mine->hi;
    mine->lo = *i1;
    ito__dropin_unlock(&mine->lock);
    return true;
  }
  ito__dropin_unlock(&mine->lock);
  for (unsigned k = 1; k < nth; k++) {
    struct range *v = &w->ranges[(id + k) % nth];
    if (__atomic_load_n(&v->lo, __ATOMIC_RELAXED) >= __atomic_load_n(&v->hi, __ATOMIC_RELAXED))
      continue;
    ito__dropin_lock(&v->lock);
    unsigned long left = v->hi > v->lo ? v->hi - v->lo : 0;
    if (!left) {
      ito__dropin_unlock(&v->lock);
      continue;
    }
    /* (lo is a multiple of c; hi too, or the loop's end) */
    unsigned long chunks = (left + c - 1) / c, keep = chunks - chunks / 2;
    if (chunks == 1) keep = 0;
    unsigned long a = v->lo + keep * c, b = v->hi;
    v->hi = a;
    ito__dropin_unlock(&v->lock);
    *i0 = a;
    *i1 = b - a > c ? a + c : b;
    ito__dropin_lock(&mine->lock);
    mine->lo = *i1;
    mine->hi = b;
    ito__dropin_unlock(&mine->lock);
    return true;
  }
  return false;
}

/* The member's next chunk [*i0, *i1) of iteration indices. */
static bool take(task *me, struct ws *w, unsigned long *i0, unsigned long *i1) {
  unsigned long n = w->niter;
  team *tm = ito_omp_ws_team(me);
  unsigned nth = tm->n, id = me->id;
  switch (w->kind) {
    case SCHED_SPLIT:
      /* gcc's lastprivate code copies out in the member whose last chunk
       * ends the loop: so whoever takes that chunk takes no other after it */
      if (me->ws_k) return false;
      if (!take_split(w, nth, id, i0, i1)) return false;
      if (*i1 == n) me->ws_k = 1;
      return true;
    case SCHED_STATIC:
      if (w->chunk == 0) { /* one block per member, the first niter % nth one longer */
        if (me->ws_k++) return false;
        unsigned long q = n / nth, r = n % nth;
        unsigned long lo = id < r ? id * (q + 1) : r * (q + 1) + (id - r) * q;
        unsigned long len = q + (id < r);
        if (!len) return false;
        *i0 = lo;
        *i1 = lo + len;
        return true;
      } else { /* chunks dealt round-robin */
        unsigned long c = id + me->ws_k++ * nth;
        if (c >= (n + w->chunk - 1) / w->chunk) return false;
        *i0 = c * w->chunk;
        *i1 = *i0 + w->chunk < n ? *i0 + w->chunk : n;
        return true;
      }
    case SCHED_DYNAMIC: {
      unsigned long lo = atomic_load_explicit(&w->next, memory_order_relaxed);
      if (lo >= n) return false; /* keeps next from running past the end */
      lo = atomic_fetch_add_explicit(&w->next, w->chunk, memory_order_relaxed);
      if (lo >= n) return false;
      *i0 = lo;
      *i1 = n - lo > w->chunk ? lo + w->chunk : n;
      return true;
    }
    default: { /* guided: a share of what is left, at least the chunk */
      unsigned long lo = atomic_load_explicit(&w->next, memory_order_relaxed);
      for (;;) {
        if (lo >= n) return false;
        unsigned long left = n - lo;
        unsigned long q = (left + nth - 1) / nth;
        if (q < w->chunk) q = w->chunk;
        if (q > left) q = left;
        if (atomic_compare_exchange_weak_explicit(&w->next, &lo, lo + q, memory_order_relaxed,
                                                  memory_order_relaxed)) {
          *i0 = lo;
          *i1 = lo + q;
          return true;
        }
      }
    }
  }
}

static bool next(task *me, ull *istart, ull *iend) {
  struct ws *w = me->ws;
  if (!w) ito_omp_fatal("GOMP_loop_*_next called outside a work-sharing loop");
  if (w->ordered) ito_omp_ordered_pass(me);
  unsigned long i0, i1;
  if (!take(me, w, &i0, &i1)) return false;
  me->ord_lo = i0;
  me->ord_hi = i1;
  *istart = w->start + (ull)i0 * w->incr;
  *iend = i1 == w->niter ? w->end : w->start + (ull)i1 * w->incr;
  return true;
}

static bool start(struct loop_args *a, ull *istart, ull *iend) {
  task *me = ito_omp_cur();
  int first;
  struct ws *w = ito_omp_ws_enter(me, &first);
  if (first) {
    loop_init(w, a, ito_omp_ws_team(me)->n);
    ito_omp_ws_publish(me, w);
  }
  if (!istart) return true;
  return next(me, istart, iend);
}

/* ---- long ----------------------------------------------------------------------- */

static bool start_l(long s, long e, long incr, int kind, long chunk, int ordered, long *istart,
                    long *iend) {
  struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, (unsigned long)chunk,
                        ordered};
  return start(&a, (ull *)istart, (ull *)iend);
}
static bool next_l(long *istart, long *iend) {
  return next(ito_omp_cur(), (ull *)istart, (ull *)iend);
}

#define LOOP_L(name, kind, ordered)                                                           \
  OMP_API bool GOMP_loop_##name##_start(long s, long e, long incr, long chunk, long *istart, \
                                        long *iend) {                                         \
    return start_l(s, e, incr, kind, chunk, ordered, istart, iend);                          \
  }                                                                                           \
  OMP_API bool GOMP_loop_##name##_next(long *istart, long *iend) { return next_l(istart, iend); }

LOOP_L(static, SCHED_STATIC, 0)
LOOP_L(dynamic, SCHED_DYNAMIC, 0)
LOOP_L(guided, SCHED_GUIDED, 0)
LOOP_L(nonmonotonic_dynamic, SCHED_SPLIT, 0)
LOOP_L(nonmonotonic_guided, SCHED_GUIDED, 0)
LOOP_L(ordered_static, SCHED_STATIC, 1)
LOOP_L(ordered_dynamic, SCHED_DYNAMIC, 1)
LOOP_L(ordered_guided, SCHED_GUIDED, 1)

#define LOOP_L_RUNTIME(name, ordered)                                                         \
  OMP_API bool GOMP_loop_##name##_start(long s, long e, long incr, long *istart, long *iend) { \
    int kind;                                                                                 \
    unsigned long chunk;                                                                      \
    ito_omp_runtime_sched(&kind, &chunk);                                                     \
    return start_l(s, e, incr, kind, (long)chunk, ordered, istart, iend);                     \
  }                                                                                           \
  OMP_API bool GOMP_loop_##name##_next(long *istart, long *iend) { return next_l(istart, iend); }

LOOP_L_RUNTIME(runtime, 0)
LOOP_L_RUNTIME(nonmonotonic_runtime, 0)
LOOP_L_RUNTIME(maybe_nonmonotonic_runtime, 0)
LOOP_L_RUNTIME(ordered_runtime, 1)

/* gcc 9's generic entries: sched is a GOMP schedule kind, maybe with the
 * monotonic bit; task reductions and shared scratch memory are not
 * supported. */
static int sched_kind(long sched, long *chunk) {
  int k = (int)(sched & ~(long)SCHED_MONOTONIC);
  if (k == SCHED_RUNTIME) {
    unsigned long c;
    ito_omp_runtime_sched(&k, &c);
    *chunk = (long)c;
  }
  return k == SCHED_AUTO ? SCHED_STATIC : k;
}

static void no_extras(const char *name, uintptr_t *reductions, void **mem) {
  if (mem && *mem) ito_omp_fatal("%s with shared scratch memory is not supported", name);
  if (reductions) ito_omp_ws_reductions(ito_omp_cur(), reductions);
}

OMP_API bool GOMP_loop_start(long s, long e, long incr, long sched, long chunk, long *istart,
                             long *iend, uintptr_t *reductions, void **mem) {
  no_extras("GOMP_loop_start", reductions, mem);
  int k = sched_kind(sched, &chunk);
  return start_l(s, e, incr, k, chunk, 0, istart, iend);
}
OMP_API bool GOMP_loop_ordered_start(long s, long e, long incr, long sched, long chunk,
                                     long *istart, long *iend, uintptr_t *reductions, void **mem) {
  no_extras("GOMP_loop_ordered_start", reductions, mem);
  int k = sched_kind(sched, &chunk);
  return start_l(s, e, incr, k, chunk, 1, istart, iend);
}

/* ---- unsigned long long ----------------------------------------------------------- */

static bool start_u(bool up, ull s, ull e, ull incr, int kind, ull chunk, int ordered, ull *istart,
                    ull *iend) {
  struct loop_args a = {up, false, s, e, incr, kind, (unsigned long)chunk, ordered};
  return start(&a, istart, iend);
}

#define LOOP_U(name, kind, ordered)                                                           \
  OMP_API bool GOMP_loop_ull_##name##_start(bool up, ull s, ull e, ull incr, ull chunk,      \
                                            ull *istart, ull *iend) {                         \
    return start_u(up, s, e, incr, kind, chunk, ordered, istart, iend);                      \
  }                                                                                           \
  OMP_API bool GOMP_loop_ull_##name##_next(ull *istart, ull *iend) {                          \
    return next(ito_omp_cur(), istart, iend);                                                 \
  }

LOOP_U(static, SCHED_STATIC, 0)
LOOP_U(dynamic, SCHED_DYNAMIC, 0)
LOOP_U(guided, SCHED_GUIDED, 0)
LOOP_U(nonmonotonic_dynamic, SCHED_SPLIT, 0)
LOOP_U(nonmonotonic_guided, SCHED_GUIDED, 0)
LOOP_U(ordered_static, SCHED_STATIC, 1)
LOOP_U(ordered_dynamic, SCHED_DYNAMIC, 1)
LOOP_U(ordered_guided, SCHED_GUIDED, 1)

#define LOOP_U_RUNTIME(name, ordered)                                                         \
  OMP_API bool GOMP_loop_ull_##name##_start(bool up, ull s, ull e, ull incr, ull *istart,    \
                                            ull *iend) {                                      \
    int kind;                                                                                 \
    unsigned long chunk;                                                                      \
    ito_omp_runtime_sched(&kind, &chunk);                                                     \
    return start_u(up, s, e, incr, kind, chunk, ordered, istart, iend);                      \
  }                                                                                           \
  OMP_API bool GOMP_loop_ull_##name##_next(ull *istart, ull *iend) {                          \
    return next(ito_omp_cur(), istart, iend);                                                 \
  }

LOOP_U_RUNTIME(runtime, 0)
LOOP_U_RUNTIME(nonmonotonic_runtime, 0)
LOOP_U_RUNTIME(maybe_nonmonotonic_runtime, 0)
LOOP_U_RUNTIME(ordered_runtime, 1)

OMP_API bool GOMP_loop_ull_start(bool up, ull s, ull e, ull incr, long sched, ull chunk,
                                 ull *istart, ull *iend, uintptr_t *reductions, void **mem) {
  no_extras("GOMP_loop_ull_start", reductions, mem);
  long c = (long)chunk;
  int k = sched_kind(sched, &c);
  return start_u(up, s, e, incr, k, (ull)c, 0, istart, iend);
}
OMP_API bool GOMP_loop_ull_ordered_start(bool up, ull s, ull e, ull incr, long sched, ull chunk,
                                         ull *istart, ull *iend, uintptr_t *reductions,
                                         void **mem) {
  no_extras("GOMP_loop_ull_ordered_start", reductions, mem);
  long c = (long)chunk;
  int k = sched_kind(sched, &c);
  return start_u(up, s, e, incr, k, (ull)c, 1, istart, iend);
}

/* ---- the end of a loop ----------------------------------------------------------- */

OMP_API void GOMP_loop_end_nowait(void) {
  task *me = ito_omp_cur();
  if (me->ws && me->ws->ordered) ito_omp_ordered_pass(me);
  ito_omp_ws_leave(me);
}
OMP_API void GOMP_loop_end(void) {
  GOMP_loop_end_nowait();
  GOMP_barrier();
}
OMP_API bool GOMP_loop_end_cancel(void) {
  GOMP_loop_end();
  return false;
}

/* ---- combined parallel loops --------------------------------------------------------- */

static void parallel_loop(void (*fn)(void *), void *data, unsigned nthreads, long s, long e,
                          long incr, int kind, long chunk, unsigned flags) {
  struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, (unsigned long)chunk, 0};
  ito_omp_parallel(fn, data, nthreads, flags, loop_init, &a);
}

#define PARALLEL_LOOP(name, kind)                                                              \
  OMP_API void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned nthreads,   \
                                         long s, long e, long incr, long chunk,                \
                                         unsigned flags) {                                     \
    parallel_loop(fn, data, nthreads, s, e, incr, kind, chunk, flags);                         \
  }
PARALLEL_LOOP(static, SCHED_STATIC)
PARALLEL_LOOP(dynamic, SCHED_DYNAMIC)
PARALLEL_LOOP(guided, SCHED_GUIDED)
PARALLEL_LOOP(nonmonotonic_dynamic, SCHED_SPLIT)
PARALLEL_LOOP(nonmonotonic_guided, SCHED_GUIDED)

#define PARALLEL_LOOP_RUNTIME(name)                                                            \
  OMP_API void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned nthreads,   \
                                         long s, long e, long incr, unsigned flags) {          \
    int kind;                                                                                  \
    unsigned long chunk;                                                                       \
    ito_omp_runtime_sched(&kind, &chunk);                                                      \
    parallel_loop(fn, data, nthreads, s, e, incr, kind, (long)chunk, flags);                   \
  }
PARALLEL_LOOP_RUNTIME(runtime)
PARALLEL_LOOP_RUNTIME(nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(maybe_nonmonotonic_runtime)

/* the ABI before gcc 4.9: the master runs fn, then GOMP_parallel_end */
#define PARALLEL_LOOP_START(name, kind)                                                        \
  OMP_API void GOMP_parallel_loop_##name##_start(void (*fn)(void *), void *data,              \
                                                 unsigned nthreads, long s, long e, long incr, \
                                                 long chunk) {                                 \
    struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind,                     \
                          (unsigned long)chunk, 0};                                            \
    ito_omp_parallel_start_ws(fn, data, nthreads, loop_init, &a);                              \
  }
PARALLEL_LOOP_START(static, SCHED_STATIC)
PARALLEL_LOOP_START(dynamic, SCHED_DYNAMIC)
PARALLEL_LOOP_START(guided, SCHED_GUIDED)

OMP_API void GOMP_parallel_loop_runtime_start(void (*fn)(void *), void *data, unsigned nthreads,
                                              long s, long e, long incr) {
  int kind;
  unsigned long chunk;
  ito_omp_runtime_sched(&kind, &chunk);
  struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, chunk, 0};
  ito_omp_parallel_start_ws(fn, data, nthreads, loop_init, &a);
}
