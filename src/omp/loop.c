/* libito-omp.so: work-sharing loops (GOMP_loop_*), in every schedule, for
 * long and unsigned long long iteration variables. docs/openmp.md. */
#include "omp_int.h"

#include <stdarg.h>
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
  if (a == 0) ito__omp_fatal("a work-sharing loop with a step of 0");
  return (unsigned long)(d / a + (d % a != 0));
}

void ito__omp_runtime_sched(int *kind, unsigned long *chunk) {
  task *t = ito__omp_cur();
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
    if (!w->ranges) ito__omp_fatal("out of memory for a work-sharing loop");
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
  ito__dropin_lock(&mine->lock, ITO_DROPIN_LR_LEAF);
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
    ito__dropin_lock(&v->lock, ITO_DROPIN_LR_LEAF);
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
    ito__dropin_lock(&mine->lock, ITO_DROPIN_LR_LEAF);
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
  team *tm = ito__omp_ws_team(me);
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
      unsigned long lo = __atomic_load_n(&w->next, __ATOMIC_RELAXED);
      if (lo >= n) return false; /* keeps next from running past the end */
      lo = __atomic_fetch_add(&w->next, w->chunk, __ATOMIC_RELAXED);
      if (lo >= n) return false;
      *i0 = lo;
      *i1 = n - lo > w->chunk ? lo + w->chunk : n;
      return true;
    }
    default: { /* guided: a share of what is left, at least the chunk */
      unsigned long lo = __atomic_load_n(&w->next, __ATOMIC_RELAXED);
      for (;;) {
        if (lo >= n) return false;
        unsigned long left = n - lo;
        unsigned long q = (left + nth - 1) / nth;
        if (q < w->chunk) q = w->chunk;
        if (q > left) q = left;
        if (__atomic_compare_exchange_n(&w->next, &lo, lo + q, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
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
  if (!w) ito__omp_fatal("GOMP_loop_*_next called outside a work-sharing loop");
  if (w->ordered) ito__omp_ordered_pass(me);
  /* cancel for: no more chunks are handed out (an ordered or doacross
   * loop, which may not be cancelled, hands all out: every chunk must pass
   * its turn on, every iteration be posted) */
  if (UNLIKELY(__atomic_load_n(&w->cancelled, __ATOMIC_RELAXED)) && !w->ordered && !w->da)
    return false;
  unsigned long i0, i1;
  if (!take(me, w, &i0, &i1)) return false;
  me->ord_lo = i0;
  me->ord_hi = i1;
  *istart = w->start + (ull)i0 * w->incr;
  *iend = i1 == w->niter ? w->end : w->start + (ull)i1 * w->incr;
  return true;
}

/* mem: gcc's request for shared scratch memory (ito__omp_ws_mem_init), or
 * NULL. istart NULL: gcc computes a static schedule itself (scan loops,
 * static lastprivate(conditional:) loops) and wants only the work share. */
static bool start(struct loop_args *a, void **mem, ull *istart, ull *iend) {
  task *me = ito__omp_cur();
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) {
    loop_init(w, a, ito__omp_ws_team(me)->n);
    if (mem) ito__omp_ws_mem_init(w, (size_t)(uintptr_t)*mem);
    ito__omp_ws_publish(me, w);
  }
  if (mem) *mem = w->mem;
  if (!istart) return true;
  return next(me, istart, iend);
}

/* ---- long ----------------------------------------------------------------------- */

static bool start_l(long s, long e, long incr, int kind, long chunk, int ordered, void **mem,
                    long *istart, long *iend) {
  struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, (unsigned long)chunk,
                        ordered};
  return start(&a, mem, (ull *)istart, (ull *)iend);
}
static bool next_l(long *istart, long *iend) {
  return next(ito__omp_cur(), (ull *)istart, (ull *)iend);
}

#define LOOP_L(name, kind, ordered)                                                          \
  OMP_API bool GOMP_loop_##name##_start(long s, long e, long incr, long chunk, long *istart, \
                                        long *iend) {                                        \
    return start_l(s, e, incr, kind, chunk, ordered, NULL, istart, iend);                    \
  }                                                                                          \
  OMP_API bool GOMP_loop_##name##_next(long *istart, long *iend) { return next_l(istart, iend); }

LOOP_L(static, SCHED_STATIC, 0)
LOOP_L(dynamic, SCHED_DYNAMIC, 0)
LOOP_L(guided, SCHED_GUIDED, 0)
LOOP_L(nonmonotonic_dynamic, SCHED_SPLIT, 0)
LOOP_L(nonmonotonic_guided, SCHED_GUIDED, 0)
LOOP_L(ordered_static, SCHED_STATIC, 1)
LOOP_L(ordered_dynamic, SCHED_DYNAMIC, 1)
LOOP_L(ordered_guided, SCHED_GUIDED, 1)

#define LOOP_L_RUNTIME(name, ordered)                                                          \
  OMP_API bool GOMP_loop_##name##_start(long s, long e, long incr, long *istart, long *iend) { \
    int kind;                                                                                  \
    unsigned long chunk;                                                                       \
    ito__omp_runtime_sched(&kind, &chunk);                                                     \
    return start_l(s, e, incr, kind, (long)chunk, ordered, NULL, istart, iend);                \
  }                                                                                            \
  OMP_API bool GOMP_loop_##name##_next(long *istart, long *iend) { return next_l(istart, iend); }

LOOP_L_RUNTIME(runtime, 0)
LOOP_L_RUNTIME(nonmonotonic_runtime, 0)
LOOP_L_RUNTIME(maybe_nonmonotonic_runtime, 0)
LOOP_L_RUNTIME(ordered_runtime, 1)

/* gcc 9's generic entries: sched is a GOMP schedule kind, maybe with the
 * monotonic bit; reductions: task reductions (reduction.c); mem: a request
 * for shared scratch memory (ito__omp_ws_mem_init), as for scan and
 * lastprivate(conditional:). */
static int sched_kind(long sched, long *chunk) {
  int k = (int)(sched & ~(long)SCHED_MONOTONIC);
  if (k == SCHED_RUNTIME) {
    unsigned long c;
    ito__omp_runtime_sched(&k, &c);
    *chunk = (long)c;
  }
  return k == SCHED_AUTO ? SCHED_STATIC : k;
}

OMP_API bool GOMP_loop_start(long s, long e, long incr, long sched, long chunk, long *istart,
                             long *iend, uintptr_t *reductions, void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  int k = sched_kind(sched, &chunk);
  return start_l(s, e, incr, k, chunk, 0, mem, istart, iend);
}
OMP_API bool GOMP_loop_ordered_start(long s, long e, long incr, long sched, long chunk,
                                     long *istart, long *iend, uintptr_t *reductions, void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  int k = sched_kind(sched, &chunk);
  return start_l(s, e, incr, k, chunk, 1, mem, istart, iend);
}

/* ---- unsigned long long ----------------------------------------------------------- */

static bool start_u(bool up, ull s, ull e, ull incr, int kind, ull chunk, int ordered, void **mem,
                    ull *istart, ull *iend) {
  struct loop_args a = {up, false, s, e, incr, kind, (unsigned long)chunk, ordered};
  return start(&a, mem, istart, iend);
}

#define LOOP_U(name, kind, ordered)                                                     \
  OMP_API bool GOMP_loop_ull_##name##_start(bool up, ull s, ull e, ull incr, ull chunk, \
                                            ull *istart, ull *iend) {                   \
    return start_u(up, s, e, incr, kind, chunk, ordered, NULL, istart, iend);           \
  }                                                                                     \
  OMP_API bool GOMP_loop_ull_##name##_next(ull *istart, ull *iend) {                    \
    return next(ito__omp_cur(), istart, iend);                                          \
  }

LOOP_U(static, SCHED_STATIC, 0)
LOOP_U(dynamic, SCHED_DYNAMIC, 0)
LOOP_U(guided, SCHED_GUIDED, 0)
LOOP_U(nonmonotonic_dynamic, SCHED_SPLIT, 0)
LOOP_U(nonmonotonic_guided, SCHED_GUIDED, 0)
LOOP_U(ordered_static, SCHED_STATIC, 1)
LOOP_U(ordered_dynamic, SCHED_DYNAMIC, 1)
LOOP_U(ordered_guided, SCHED_GUIDED, 1)

#define LOOP_U_RUNTIME(name, ordered)                                                     \
  OMP_API bool GOMP_loop_ull_##name##_start(bool up, ull s, ull e, ull incr, ull *istart, \
                                            ull *iend) {                                  \
    int kind;                                                                             \
    unsigned long chunk;                                                                  \
    ito__omp_runtime_sched(&kind, &chunk);                                                \
    return start_u(up, s, e, incr, kind, chunk, ordered, NULL, istart, iend);             \
  }                                                                                       \
  OMP_API bool GOMP_loop_ull_##name##_next(ull *istart, ull *iend) {                      \
    return next(ito__omp_cur(), istart, iend);                                            \
  }

LOOP_U_RUNTIME(runtime, 0)
LOOP_U_RUNTIME(nonmonotonic_runtime, 0)
LOOP_U_RUNTIME(maybe_nonmonotonic_runtime, 0)
LOOP_U_RUNTIME(ordered_runtime, 1)

OMP_API bool GOMP_loop_ull_start(bool up, ull s, ull e, ull incr, long sched, ull chunk,
                                 ull *istart, ull *iend, uintptr_t *reductions, void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  long c = (long)chunk;
  int k = sched_kind(sched, &c);
  return start_u(up, s, e, incr, k, (ull)c, 0, mem, istart, iend);
}
OMP_API bool GOMP_loop_ull_ordered_start(bool up, ull s, ull e, ull incr, long sched, ull chunk,
                                         ull *istart, ull *iend, uintptr_t *reductions,
                                         void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  long c = (long)chunk;
  int k = sched_kind(sched, &c);
  return start_u(up, s, e, incr, k, (ull)c, 1, mem, istart, iend);
}

/* ---- doacross loops ---------------------------------------------------------------
 * ordered(n) with depend(sink: ...) and depend(source): gcc shares the first
 * of the n loops as a loop over its logical iterations [0, counts[0]) and
 * runs the other n - 1 inside each of them; post and wait take iteration
 * vectors of logical iteration numbers (counts[d] each). Rows (first-loop
 * iterations) are grouped into entries, each run by one member in
 * increasing order: a member's block or its round-robin chunks (static),
 * a chunk (dynamic), a row (guided, whose chunks are not known in advance).
 * Within an entry iterations therefore run in lexicographic order, so one
 * word per entry says how far it got: 1 + the linear index (mixed radix
 * over counts) of the last iteration posted there. A wait for v returns
 * once v's entry holds more than v's linear index (v and every iteration
 * of the entry before it are done). docs/openmp.md, "Doacross loops". */
#define DA_WAITING (1ULL << 63)  /* an entry's waiter bit */
#define DA_MAX_ITER (1ULL << 62) /* iterations a doacross loop may have */

struct da_queue {
  int lock;
  void *head, *tail;
} __attribute__((aligned(64)));

struct doacross {
  uint64_t *posted;        /* entry e at posted[e * stride]; NULL: nothing to order */
  struct da_queue *queues; /* entry e's waiters park on queues[e & (nq - 1)] */
  unsigned long stride;    /* words from one entry to the next */
  unsigned nq;             /* queues: a power of two */
  unsigned ncounts;
  int kind; /* the loop's schedule: how rows map to entries */
  unsigned long chunk, nth;
  unsigned long q, r;          /* static blocks: the first r have q + 1 rows, the others q */
  unsigned long long counts[]; /* iterations of each of the ncounts loops */
};

/* Sets up the doacross state of w (the first member in it, under its lock,
 * after loop_init). */
static void da_init(struct ws *w, unsigned ncounts, const ull *counts, unsigned nth) {
  if (ncounts == 0) ito__omp_fatal("a doacross loop with no loops");
  bool order = nth > 1;
  ull total = 1;
  for (unsigned i = 0; i < ncounts; i++) {
    if (counts[i] == 0)
      order = false; /* no iteration runs: no post, no wait */
    else if (__builtin_mul_overflow(total, counts[i], &total) || total > DA_MAX_ITER)
      ito__omp_fatal("a doacross loop of more than 2^62 iterations");
  }
  unsigned long nent = 0, stride = 8; /* a cache line per entry */
  if (order) {
    if (w->kind == SCHED_STATIC)
      nent = nth;
    else if (w->kind == SCHED_DYNAMIC)
      nent = (w->niter + w->chunk - 1) / w->chunk;
    else
      nent = w->niter, stride = 1; /* guided: neighbouring rows are mostly one member's */
  }
  unsigned nq = 1;
  while (nq < 2 * nth && nq < 1024) nq *= 2;
  size_t head = (sizeof(struct doacross) + ncounts * sizeof(ull) + 63) & ~(size_t)63;
  size_t qsz = order ? nq * sizeof(struct da_queue) : 0;
  size_t psz = ((nent * stride * sizeof(uint64_t)) + 63) & ~(size_t)63;
  char *m = aligned_alloc(64, head + qsz + psz);
  if (!m) ito__omp_fatal("out of memory for a doacross loop");
  memset(m, 0, head + qsz + psz); /* queues empty, entries 0 (nothing posted) */
  struct doacross *d = (struct doacross *)m;
  d->queues = order ? (struct da_queue *)(m + head) : NULL;
  d->posted = order ? (uint64_t *)(m + head + qsz) : NULL;
  d->stride = stride;
  d->nq = nq;
  d->ncounts = ncounts;
  d->kind = w->kind;
  d->chunk = w->chunk;
  d->nth = nth;
  d->q = w->niter / nth;
  d->r = w->niter % nth;
  memcpy(d->counts, counts, ncounts * sizeof(ull));
  w->da = d;
}

/* The entry of row i0: whose iterations the take() of w's schedule runs
 * together, in order. */
static unsigned long da_entry(const struct doacross *d, ull i0) {
  switch (d->kind) {
    case SCHED_STATIC:
      if (d->chunk == 0) { /* the member's block (take: the first r have q + 1 rows) */
        ull big = d->r * (d->q + 1);
        return i0 < big ? i0 / (d->q + 1) : d->r + (i0 - big) / d->q;
      }
      return (i0 / d->chunk) % d->nth; /* the member dealt that chunk */
    case SCHED_DYNAMIC:
      return i0 / d->chunk;
    default:
      return i0;
  }
}

/* Adds logical iteration number v of loop i to the linear index lin of the
 * loops before it. */
static uint64_t da_index(const struct doacross *d, uint64_t lin, unsigned i, ull v,
                         const char *who) {
  if (v >= d->counts[i])
    ito__omp_fatal("%s: iteration %llu of loop %u of a doacross loop of %llu", who, v, i + 1,
                   d->counts[i]);
  return lin * d->counts[i] + v;
}

/* The doacross state of the caller's loop, or NULL when there is nothing
 * to order (a team of one, a loop with no iteration). */
static struct doacross *da_cur(const char *who) {
  struct ws *w = ito__omp_cur()->ws;
  struct doacross *d = w ? w->da : NULL;
  if (!d) {
    if (!w) ito__omp_fatal("%s called outside a doacross loop", who);
    return NULL; /* (a loop without ordered(n) reaches here only by a compiler bug) */
  }
  return d->posted ? d : NULL;
}

/* Iteration lin of entry e is done: publish it (release: the iteration's
 * writes, and those of the entry's iterations before it) and wake the
 * entry's waiters if one set the waiter bit. */
static void da_post(struct doacross *d, unsigned long e, uint64_t lin) {
  uint64_t *p = &d->posted[e * d->stride];
  uint64_t old = __atomic_exchange_n(p, lin + 1, __ATOMIC_RELEASE);
  /* an entry's iterations run, and post, in increasing order */
  if (UNLIKELY((old & ~DA_WAITING) > lin + 1))
    ito__omp_fatal("doacross post out of order (iteration index %llu after %llu)", (ull)lin,
                   (ull)((old & ~DA_WAITING) - 1));
  if (LIKELY(!(old & DA_WAITING))) return;
  /* a waiter set the bit under the queue's lock and parks before it lets
   * the lock go: it is on the queue now, or it saw the new value */
  struct da_queue *q = &d->queues[e & (d->nq - 1)];
  ito__dropin_lock(&q->lock, ITO_DROPIN_LR_QUEUE);
  void *list = ito__dropin_wq_take(&q->head, &q->tail, -1);
  ito__dropin_unlock(&q->lock);
  ito__dropin_wq_wake(list);
}

/* Waits until iteration lin of entry e is done (acquire: its writes are
 * visible after). Parks the member; never spins. */
static void da_wait(struct doacross *d, unsigned long e, uint64_t lin) {
  uint64_t *p = &d->posted[e * d->stride];
  if ((__atomic_load_n(p, __ATOMIC_ACQUIRE) & ~DA_WAITING) > lin) return;
  struct da_queue *q = &d->queues[e & (d->nq - 1)];
  ito__dropin_lock(&q->lock, ITO_DROPIN_LR_QUEUE);
  /* the bit stays set after we leave: a later post then takes the lock
   * for nothing, which is cheaper than counting waiters per entry */
  uint64_t v = __atomic_fetch_or(p, DA_WAITING, __ATOMIC_ACQ_REL);
  while ((v & ~DA_WAITING) <= lin) {
    /* woken by a post to e or to an entry sharing the queue: test again */
    ito__dropin_wq_wait(&q->lock, &q->head, &q->tail, 0, CLOCK_MONOTONIC, NULL, NULL, NULL);
    ito__dropin_lock(&q->lock, ITO_DROPIN_LR_QUEUE);
    v = __atomic_fetch_or(p, DA_WAITING, __ATOMIC_ACQ_REL);
  }
  ito__dropin_unlock(&q->lock);
}

OMP_API void GOMP_doacross_post(long *counts) {
  struct doacross *d = da_cur("GOMP_doacross_post");
  if (!d) return;
  uint64_t lin = 0;
  for (unsigned i = 0; i < d->ncounts; i++)
    lin = da_index(d, lin, i, (ull)counts[i], "GOMP_doacross_post");
  da_post(d, da_entry(d, (ull)counts[0]), lin);
}

OMP_API void GOMP_doacross_ull_post(ull *counts) {
  struct doacross *d = da_cur("GOMP_doacross_ull_post");
  if (!d) return;
  uint64_t lin = 0;
  for (unsigned i = 0; i < d->ncounts; i++)
    lin = da_index(d, lin, i, counts[i], "GOMP_doacross_ull_post");
  da_post(d, da_entry(d, counts[0]), lin);
}

OMP_API void GOMP_doacross_wait(long first, ...) {
  struct doacross *d = da_cur("GOMP_doacross_wait");
  if (!d) return;
  uint64_t lin = da_index(d, 0, 0, (ull)first, "GOMP_doacross_wait");
  va_list ap;
  va_start(ap, first);
  for (unsigned i = 1; i < d->ncounts; i++)
    lin = da_index(d, lin, i, (ull)va_arg(ap, long), "GOMP_doacross_wait");
  va_end(ap);
  da_wait(d, da_entry(d, (ull)first), lin);
}

OMP_API void GOMP_doacross_ull_wait(ull first, ...) {
  struct doacross *d = da_cur("GOMP_doacross_ull_wait");
  if (!d) return;
  uint64_t lin = da_index(d, 0, 0, first, "GOMP_doacross_ull_wait");
  va_list ap;
  va_start(ap, first);
  for (unsigned i = 1; i < d->ncounts; i++)
    lin = da_index(d, lin, i, va_arg(ap, ull), "GOMP_doacross_ull_wait");
  va_end(ap);
  da_wait(d, da_entry(d, first), lin);
}

/* The loop over the first loop's logical iterations [0, counts[0]) in
 * kind (a nonmonotonic dynamic schedule is run monotonic: ordered loops
 * are), with the doacross state made by the first member in. */
static bool doacross_start(unsigned ncounts, const ull *counts, int kind, ull chunk, void **mem,
                           ull *istart, ull *iend) {
  task *me = ito__omp_cur();
  if (kind == SCHED_SPLIT) kind = SCHED_DYNAMIC;
  struct loop_args a = {true, false, 0, ncounts ? counts[0] : 0, 1, kind, (unsigned long)chunk, 0};
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) {
    unsigned nth = ito__omp_ws_team(me)->n;
    loop_init(w, &a, nth);
    da_init(w, ncounts, counts, nth);
    if (mem) ito__omp_ws_mem_init(w, (size_t)(uintptr_t)*mem);
    ito__omp_ws_publish(me, w);
  }
  if (mem) *mem = w->mem;
  return next(me, istart, iend);
}

static bool doacross_start_l(unsigned ncounts, long *counts, int kind, long chunk, void **mem,
                             long *istart, long *iend) {
  ull c[ncounts ? ncounts : 1];
  for (unsigned i = 0; i < ncounts; i++) c[i] = counts[i] > 0 ? (ull)counts[i] : 0;
  return doacross_start(ncounts, c, kind, (ull)chunk, mem, (ull *)istart, (ull *)iend);
}

#define DOACROSS_L(name, kind)                                                               \
  OMP_API bool GOMP_loop_doacross_##name##_start(unsigned ncounts, long *counts, long chunk, \
                                                 long *istart, long *iend) {                 \
    return doacross_start_l(ncounts, counts, kind, chunk, NULL, istart, iend);               \
  }
DOACROSS_L(static, SCHED_STATIC)
DOACROSS_L(dynamic, SCHED_DYNAMIC)
DOACROSS_L(guided, SCHED_GUIDED)

OMP_API bool GOMP_loop_doacross_runtime_start(unsigned ncounts, long *counts, long *istart,
                                              long *iend) {
  int kind;
  unsigned long chunk;
  ito__omp_runtime_sched(&kind, &chunk);
  return doacross_start_l(ncounts, counts, kind, (long)chunk, NULL, istart, iend);
}

OMP_API bool GOMP_loop_doacross_start(unsigned ncounts, long *counts, long sched, long chunk,
                                      long *istart, long *iend, uintptr_t *reductions, void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  int k = sched_kind(sched, &chunk);
  return doacross_start_l(ncounts, counts, k, chunk, mem, istart, iend);
}

#define DOACROSS_U(name, kind)                                                                 \
  OMP_API bool GOMP_loop_ull_doacross_##name##_start(unsigned ncounts, ull *counts, ull chunk, \
                                                     ull *istart, ull *iend) {                 \
    return doacross_start(ncounts, counts, kind, chunk, NULL, istart, iend);                   \
  }
DOACROSS_U(static, SCHED_STATIC)
DOACROSS_U(dynamic, SCHED_DYNAMIC)
DOACROSS_U(guided, SCHED_GUIDED)

OMP_API bool GOMP_loop_ull_doacross_runtime_start(unsigned ncounts, ull *counts, ull *istart,
                                                  ull *iend) {
  int kind;
  unsigned long chunk;
  ito__omp_runtime_sched(&kind, &chunk);
  return doacross_start(ncounts, counts, kind, chunk, NULL, istart, iend);
}

OMP_API bool GOMP_loop_ull_doacross_start(unsigned ncounts, ull *counts, long sched, ull chunk,
                                          ull *istart, ull *iend, uintptr_t *reductions,
                                          void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  long c = (long)chunk;
  int k = sched_kind(sched, &c);
  return doacross_start(ncounts, counts, k, (ull)c, mem, istart, iend);
}

/* ---- the end of a loop ----------------------------------------------------------- */

OMP_API void GOMP_loop_end_nowait(void) {
  task *me = ito__omp_cur();
  if (me->ws && me->ws->ordered) ito__omp_ordered_pass(me);
  ito__omp_ws_leave(me);
}
OMP_API void GOMP_loop_end(void) {
  GOMP_loop_end_nowait();
  GOMP_barrier();
}
/* true: the parallel region is cancelled (gcc then goes to its end); a
 * cancelled loop alone ends like any other */
OMP_API bool GOMP_loop_end_cancel(void) {
  GOMP_loop_end_nowait();
  return ito__omp_barrier_cancel(ito__omp_cur());
}

/* ---- combined parallel loops --------------------------------------------------------- */

static void parallel_loop(void (*fn)(void *), void *data, unsigned nthreads, long s, long e,
                          long incr, int kind, long chunk, unsigned flags) {
  struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, (unsigned long)chunk, 0};
  ito__omp_parallel(fn, data, nthreads, flags, loop_init, &a);
}

#define PARALLEL_LOOP(name, kind)                                                                 \
  OMP_API void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned nthreads,       \
                                         long s, long e, long incr, long chunk, unsigned flags) { \
    parallel_loop(fn, data, nthreads, s, e, incr, kind, chunk, flags);                            \
  }
PARALLEL_LOOP(static, SCHED_STATIC)
PARALLEL_LOOP(dynamic, SCHED_DYNAMIC)
PARALLEL_LOOP(guided, SCHED_GUIDED)
PARALLEL_LOOP(nonmonotonic_dynamic, SCHED_SPLIT)
PARALLEL_LOOP(nonmonotonic_guided, SCHED_GUIDED)

#define PARALLEL_LOOP_RUNTIME(name)                                                         \
  OMP_API void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned nthreads, \
                                         long s, long e, long incr, unsigned flags) {       \
    int kind;                                                                               \
    unsigned long chunk;                                                                    \
    ito__omp_runtime_sched(&kind, &chunk);                                                  \
    parallel_loop(fn, data, nthreads, s, e, incr, kind, (long)chunk, flags);                \
  }
PARALLEL_LOOP_RUNTIME(runtime)
PARALLEL_LOOP_RUNTIME(nonmonotonic_runtime)
PARALLEL_LOOP_RUNTIME(maybe_nonmonotonic_runtime)

/* the ABI before gcc 4.9: the master runs fn, then GOMP_parallel_end */
#define PARALLEL_LOOP_START(name, kind)                                                           \
  OMP_API void GOMP_parallel_loop_##name##_start(                                                 \
      void (*fn)(void *), void *data, unsigned nthreads, long s, long e, long incr, long chunk) { \
    struct loop_args a = {                                                                        \
        incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, (unsigned long)chunk, 0};                \
    ito__omp_parallel_start_ws(fn, data, nthreads, loop_init, &a);                                \
  }
PARALLEL_LOOP_START(static, SCHED_STATIC)
PARALLEL_LOOP_START(dynamic, SCHED_DYNAMIC)
PARALLEL_LOOP_START(guided, SCHED_GUIDED)

OMP_API void GOMP_parallel_loop_runtime_start(void (*fn)(void *), void *data, unsigned nthreads,
                                              long s, long e, long incr) {
  int kind;
  unsigned long chunk;
  ito__omp_runtime_sched(&kind, &chunk);
  struct loop_args a = {incr > 0, true, (ull)s, (ull)e, (ull)incr, kind, chunk, 0};
  ito__omp_parallel_start_ws(fn, data, nthreads, loop_init, &a);
}
