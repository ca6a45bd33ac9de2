/* libito-omp.so: parallel regions, barriers, work shares, single, critical,
 * atomic, ordered, sections. docs/openmp.md. */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- team members ---------------------------------------------------------------
 * The encountering task runs member 0 itself; members [1, n) are started by
 * halving: a starter of [lo, hi) spawns [mid, hi) and keeps [lo, mid), so
 * the team is out after log2(n) spawns and idle workers steal the halves. */
struct mstart {
  team *tm;
  unsigned lo, hi;
};

static void member_entry(void *p);

static void split(team *tm, unsigned lo, unsigned hi) {
  while (hi - lo > 1) {
    unsigned mid = lo + (hi - lo) / 2;
    struct mstart s = {tm, mid, hi};
    int rc = ito__dropin_spawn(member_entry, &s, sizeof s, _Alignof(struct mstart), NULL, NULL);
    if (rc) ito__omp_fatal("cannot start a member of a team of %u threads (out of memory)", tm->n);
    hi = mid;
  }
}

static void implicit_init(task *t, team *tm, unsigned id) {
  task *enc = tm->encountering;
  memset(t, 0, sizeof *t);
  t->parent = enc;
  t->team = tm;
  t->id = id;
  t->depth = enc->depth + 1;
  t->kind = TASK_IMPLICIT;
  t->imp = t;
  t->icv = enc->icv;
  t->team_num = enc->team_num; /* a region inside a host teams region is in its team */
  t->num_teams = enc->num_teams;
  if (tm->level < ito__omp_g.nlist) t->icv.nthreads = ito__omp_g.list[tm->level];
  t->red0 = tm->red;
}

/* ---- threadprivate: a TLS block per member ------------------------------------------
 * With member TLS (ITO_TLS=thread in force: ito__omp_g.member_tls) member i > 0
 * runs on a TLS block of its own, where gcc's code finds its threadprivate
 * variables; member 0 keeps the encountering thread's. The outermost
 * team of the program's initial thread keeps member i's block between
 * regions (outer_tls), so the copies persist as OpenMP promises; other
 * teams' members take spare blocks and give them back at their end
 * (docs/openmp.md, "threadprivate"). */
static struct {
  void **v;
  unsigned n;
} outer_tls;
static int outer_busy; /* a team uses outer_tls (one at a time) */

static void team_tls(team *tm) {
  tm->tls_on = 1;
  task *enc = tm->encountering;
  int idle = 0;
  if (tm->level != 1 || enc->kind != TASK_INITIAL || enc->parent ||
      !__atomic_compare_exchange_n(&outer_busy, &idle, 1, false, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED))
    return; /* tm->tls NULL: spare blocks */
  if (outer_tls.n < tm->n) {
    void **v = realloc(outer_tls.v, tm->n * sizeof *v);
    if (!v) ito__omp_fatal("out of memory for the TLS of a team of %u threads", tm->n);
    memset(v + outer_tls.n, 0, (tm->n - outer_tls.n) * sizeof *v);
    outer_tls.v = v;
    outer_tls.n = tm->n;
  }
  tm->tls = outer_tls.v;
}

/* Member id (> 0) starts: its block, in force from now on. */
static void *member_tls_begin(team *tm, unsigned id) {
  void *b = tm->tls ? tm->tls[id] : NULL;
  if (!b) {
    b = ito__dropin_tls_block();
    if (!b) ito__omp_fatal("out of memory for the thread-local storage of a team member");
    if (tm->tls) tm->tls[id] = b; /* (member id's own slot) */
  }
  ito__dropin_tls_use(b);
  return b;
}

/* Before the member counts itself out: its block is no longer in force
 * (the next region's member id may take it as soon as this one is out). */
static void member_tls_end(team *tm, void *b) {
  void *was = ito__dropin_tls_use(NULL);
  ITO_OMP_ASSERT(was == b);
  (void)was;
  if (!tm->tls) ito__dropin_tls_free(b);
}

static void ring_gone(team *tm, task *me);

/* The end of a member's part: its tasks are over (the region ends with a
 * barrier: meanwhile it runs any of the team's), then it gives its TLS
 * block back and counts itself out. */
static void member_done(team *tm, task *t, void *tls) {
  ring_gone(tm, t);
  ito__omp_wait_kids(t, KID_WAIT_ALIVE, true);
  if (t->deps) ito__omp_deptab_free(t);
  if (UNLIKELY(tls != NULL)) member_tls_end(tm, tls);
  ito__omp_kids_sub(&tm->left, KID_ALIVE, &tm->qlock, &tm->qhead, &tm->qtail);
}

static void member_entry(void *p) {
  struct mstart s = *(struct mstart *)p;
  split(s.tm, s.lo, s.hi);
  void *tls = UNLIKELY(s.tm->tls_on) ? member_tls_begin(s.tm, s.lo) : NULL;
  task t;
  implicit_init(&t, s.tm, s.lo);
  if (s.tm->combined) t.ws_seq = 1, t.ws = &s.tm->ws[0]; /* made with the team */
  ito__omp_set_cur(&t);
  ito__dropin_preemptible(1); /* members are threads: preempted (docs/openmp.md) */
  if (UNLIKELY(ito__omp_g.display_affinity)) ito__omp_display_affinity_member();
  s.tm->fn(s.tm->data);
  member_done(s.tm, &t, tls);
  ito__dropin_preemptible(0); /* (the stack's descriptor is fresh for the next spawn) */
}

static unsigned team_size(task *enc, unsigned nthreads) {
  int active = enc->team ? enc->team->active_level : 0;
  if (active >= ito__omp_g.max_active_levels) return 1;
  long n = nthreads ? (long)nthreads : enc->icv.nthreads;
  if (n > enc->icv.thread_limit) n = enc->icv.thread_limit;
  if (n > 65536) n = 65536;
  return n < 1 ? 1 : (unsigned)n;
}

static void team_init(team *tm, task *enc, unsigned n, void (*fn)(void *), void *data) {
  memset(tm, 0, sizeof *tm);
  tm->home = -1;
  tm->n = n;
  tm->encountering = enc;
  tm->level = (enc->team ? enc->team->level : 0) + 1;
  tm->active_level = (enc->team ? enc->team->active_level : 0) + (n > 1);
  tm->fn = fn;
  tm->data = data;
  __atomic_store_n(&tm->left, (uint64_t)(n - 1) * KID_ALIVE, __ATOMIC_RELAXED);
  for (unsigned k = 0; k < NWS; k++) __atomic_store_n(&tm->ws[k].avail, k, __ATOMIC_RELAXED);
  ito__omp_ids_init(tm);
}

/* An outermost team on ito threads with no more members than workers is
 * bound when threadprivate variables live in the workers' thread-local
 * storage: the encountering thread keeps its worker for good and member i
 * lives on the i-th worker after it, so those variables are per member and
 * persist between such regions, as OpenMP promises (docs/openmp.md,
 * "threadprivate"). Binding costs (a bound member's tasks are queued, its
 * continuation never moves: "What binding costs"), so it is done only
 * where it is needed: not with member TLS (the members carry their storage
 * with them), and not for a program without TLS of its own (it has no
 * threadprivate variables). */
static int bind_team(team *tm) {
  /* (an initial task with a parent is a target region's, target.c) */
  if (tm->tls_on || !ito__omp_g.program_tls || tm->level != 1 || tm->n < 2 ||
      tm->encountering->kind != TASK_INITIAL || tm->encountering->parent)
    return -1;
  int w = ito_worker_id();
  if (w < 0 || !ito__omp_ctx() || (int)tm->n > ito_num_workers()) return -1;
  static int home0 = -1; /* the initial thread's worker, kept from the first region */
  int h = __atomic_load_n(&home0, __ATOMIC_RELAXED);
  if (h < 0 || h != w) {
    if (ito__dropin_home(w)) return -1;
    __atomic_store_n(&home0, w, __ATOMIC_RELAXED);
    h = w;
  }
  return h;
}

/* Starts the team; the caller then runs member 0 (t, already current). */
static void team_begin(team *tm, task *t, void (*init)(struct ws *, void *, unsigned),
                       void *init_arg) {
  implicit_init(t, tm, 0);
  if (init) {
    init(&tm->ws[0], init_arg, tm->n);
    __atomic_store_n(&tm->ws[0].ready, 1, __ATOMIC_RELEASE);
    tm->combined = 1;
    t->ws_seq = 1;
    t->ws = &tm->ws[0];
  }
  if (UNLIKELY(tm->n > 1 && ito__omp_member_tls())) team_tls(tm);
  int h = bind_team(tm);
  tm->home = h;
  /* The program's initial thread keeps its OS thread outside its regions
   * (ito__dropin_root_stay, omp.c), and in a team of one: inside a larger
   * one, member 0 may move like any member, and team_end brings it back. */
  tm->root_left = h < 0 && tm->n > 1 && tm->encountering == &ito__omp_root_initial &&
                  ito__dropin_root_stays() && ito__dropin_home(-1) == 0;
  if (h >= 0) {
    int nw = ito_num_workers();
    for (unsigned i = 1; i < tm->n; i++) {
      struct mstart s = {tm, i, i + 1};
      if (ito__dropin_spawn_home((h + (int)i) % nw, member_entry, &s, sizeof s,
                                 _Alignof(struct mstart), NULL, NULL))
        ito__omp_fatal("cannot start a member of a team of %u threads (out of memory)", tm->n);
    }
  } else {
    split(tm, 0, tm->n);
  }
  ito__omp_set_cur(t);
  tm->enc_preempt = ito__dropin_preemptible(1); /* member 0 */
}

static void team_end(team *tm, task *t) {
  ring_gone(tm, t);
  ito__dropin_preemptible(tm->enc_preempt);
  ito__omp_wait_kids(t, KID_WAIT_ALIVE, true);
  if (t->deps) ito__omp_deptab_free(t);
  ito__omp_word_wait(&tm->left, KID_WAIT_ALIVE, &tm->qlock, &tm->qhead, &tm->qtail, t, true);
  ito__omp_ids_free(tm);
  /* members of a cancelled region skip the work shares after their
   * cancellation, so a work share some entered may never be left by all:
   * what its last member would have freed is freed here (free(NULL) for
   * those that were) */
  if (UNLIKELY(__atomic_load_n(&tm->cancelled, __ATOMIC_RELAXED))) {
    for (unsigned k = 0; k < NWS; k++) {
      free(tm->ws[k].ranges);
      free(tm->ws[k].da);
      free(tm->ws[k].mem);
    }
    free(tm->gone);
  }
  if (tm->tls) __atomic_store_n(&outer_busy, 0, __ATOMIC_RELEASE); /* members are out */
  if (tm->root_left) ito__dropin_home(0); /* back on the main OS thread (moves there now) */
  ito__omp_set_cur(tm->encountering);
}

void ito__omp_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags,
                       void (*init)(struct ws *, void *, unsigned), void *init_arg) {
  (void)flags; /* proc_bind: workers are not bound to places (docs/openmp.md) */
  task *enc = ito__omp_cur();
  team tm;
  task t;
  team_init(&tm, enc, team_size(enc, nthreads), fn, data);
  team_begin(&tm, &t, init, init_arg);
  if (UNLIKELY(ito__omp_g.display_affinity)) ito__omp_display_affinity_member();
  fn(data);
  team_end(&tm, &t);
}

/* parallel with reduction(task, ...): the array gcc registers is the first
 * word of the data; returns the team's size (the copies to combine). */
OMP_API unsigned GOMP_parallel_reductions(void (*fn)(void *), void *data, unsigned nthreads,
                                          unsigned flags) {
  (void)flags;
  task *enc = ito__omp_cur();
  team tm;
  task t;
  team_init(&tm, enc, team_size(enc, nthreads), fn, data);
  ito__omp_parallel_reductions(&tm, *(uintptr_t **)data);
  team_begin(&tm, &t, NULL, NULL);
  if (UNLIKELY(ito__omp_g.display_affinity)) ito__omp_display_affinity_member();
  fn(data);
  team_end(&tm, &t);
  return tm.n;
}

OMP_API void GOMP_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags) {
  ito__omp_parallel(fn, data, nthreads, flags, NULL, NULL);
}

/* The ABI before gcc 4.9: the master calls fn itself between the two. The
 * team and member 0's task are on the heap. */
struct old_region {
  team tm;
  task t;
};

void ito__omp_parallel_start_ws(void (*fn)(void *), void *data, unsigned nthreads,
                                void (*init)(struct ws *, void *, unsigned), void *arg) {
  task *enc = ito__omp_cur();
  struct old_region *r = aligned_alloc(64, sizeof *r);
  if (!r) ito__omp_fatal("out of memory starting a parallel region");
  team_init(&r->tm, enc, team_size(enc, nthreads), fn, data);
  team_begin(&r->tm, &r->t, init, arg);
}

OMP_API void GOMP_parallel_start(void (*fn)(void *), void *data, unsigned nthreads) {
  ito__omp_parallel_start_ws(fn, data, nthreads, NULL, NULL);
}

OMP_API void GOMP_parallel_end(void) {
  task *t = ito__omp_cur();
  if (t->kind != TASK_IMPLICIT || t->id != 0)
    ito__omp_fatal("GOMP_parallel_end called outside a region started by GOMP_parallel_start");
  struct old_region *r = (struct old_region *)((char *)t - offsetof(struct old_region, t));
  team_end(&r->tm, &r->t);
  free(r);
}

/* ---- barrier -------------------------------------------------------------------- */

/* cancellable: returns true as soon as the region is cancelled (before
 * arriving, or while waiting: GOMP_cancel wakes the members), leaving the
 * arrival counted; the members of a cancelled region only leave it after
 * that, and the region's end does not use the barrier (docs/openmp.md,
 * "Cancellation"). A member waits at the barrier on its ident's queue,
 * running any pending task of the team meanwhile (pending.c). */
struct bar_arg {
  team *tm;
  unsigned phase;
  bool cancellable, cancelled;
};

/* the phase moved on, or the region is cancelled (GOMP_cancel sets the
 * flag before it takes the member's queue lock to wake the queue, so a
 * test under that lock loses no wake) */
static int bar_done(void *p, int how) {
  struct bar_arg *a = p;
  (void)how;
  if (__atomic_load_n(&a->tm->bar_phase, __ATOMIC_ACQUIRE) != a->phase) return 1;
  if (a->cancellable && __atomic_load_n(&a->tm->cancelled, __ATOMIC_ACQUIRE)) {
    a->cancelled = true;
    return 1;
  }
  return 0;
}

static bool barrier(task *me, bool cancellable) {
  team *tm = me->team;
  /* the tasks this member made are over first: together, all of the team's
   * (in a cancelled region those not yet begun are discarded, task.c) */
  ito__omp_wait_kids(me, KID_WAIT_ALIVE, true);
  if (!tm) return false;
  if (cancellable && __atomic_load_n(&tm->cancelled, __ATOMIC_ACQUIRE)) return true;
  if (tm->n == 1) return false;
  unsigned phase = __atomic_load_n(&tm->bar_phase, __ATOMIC_ACQUIRE);
  if (__atomic_fetch_add(&tm->bar_arrived, 1, __ATOMIC_ACQ_REL) == tm->n - 1) {
    __atomic_store_n(&tm->bar_arrived, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&tm->bar_phase, phase + 1, __ATOMIC_RELEASE);
    ito__omp_barrier_wake(tm);
    return false;
  }
  struct ident *d = &tm->ids[me->id];
  struct bar_arg a = {tm, phase, cancellable, false};
  ito__omp_lend_wait(me, NULL, true, &d->plock, &d->phead, &d->ptail, bar_done, &a);
  return a.cancelled;
}

void ito__omp_barrier(task *me) { barrier(me, false); }
bool ito__omp_barrier_cancel(task *me) { return barrier(me, true); }

void ito__omp_barrier_wake(team *tm) {
  for (unsigned k = 0; k < tm->n; k++) {
    struct ident *d = &tm->ids[k];
    ito__dropin_lock(&d->plock, ITO_DROPIN_LR_QUEUE);
    void *list = ito__dropin_wq_take(&d->phead, &d->ptail, -1);
    ito__dropin_unlock(&d->plock);
    ito__dropin_wq_wake(list);
  }
}

OMP_API void GOMP_barrier(void) { ito__omp_barrier(ito__omp_cur()); }
OMP_API bool GOMP_barrier_cancel(void) { return ito__omp_barrier_cancel(ito__omp_cur()); }

/* ---- work shares -----------------------------------------------------------------
 * Slot k of the team's ring holds work shares k, k + NWS, ...: a member
 * entering number s waits until the slot is free for s (the members of
 * s - NWS have all left), the first one in initialises it. */
struct slot_wait {
  struct ws *w;
  unsigned long want;
};
static int slot_free(void *p) {
  struct slot_wait *s = p;
  return __atomic_load_n(&s->w->avail, __ATOMIC_ACQUIRE) == s->want;
}

/* Work shares outside any region bind to a team of one, kept per initial task. */
team *ito__omp_ws_team(task *me) {
  if (LIKELY(me->team)) return me->team;
  if (!me->solo) {
    team *tm = aligned_alloc(64, sizeof *tm);
    if (!tm) ito__omp_fatal("out of memory for a work share");
    team_init(tm, me, 1, NULL, NULL);
    tm->level = tm->active_level = 0;
    me->solo = tm;
  }
  return me->solo;
}

struct ws *ito__omp_ws_enter(task *me, int *first) {
  team *tm = ito__omp_ws_team(me);
  unsigned long s = me->ws_seq++;
  struct ws *w = &tm->ws[s % NWS];
  me->ws = w;
  me->ws_k = 0;
  me->ord_lo = me->ord_hi = 0;
  if (UNLIKELY(__atomic_load_n(&w->avail, __ATOMIC_ACQUIRE) != s)) {
    struct slot_wait sw = {w, s};
    ito__omp_team_wait(tm, slot_free, &sw);
  }
  *first = 0;
  if (__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE) == s + 1) return w;
  ito__dropin_lock(&w->lock, ITO_DROPIN_LR_LEAF);
  if (__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE) == s + 1) {
    ito__dropin_unlock(&w->lock);
    return w;
  }
  *first = 1; /* returns holding w->lock: the caller initialises, then publishes */
  return w;
}

void ito__omp_ws_publish(task *me, struct ws *w) {
  __atomic_store_n(&w->ready, me->ws_seq, __ATOMIC_RELEASE); /* s + 1 */
  ito__dropin_unlock(&w->lock);
}

/* The work-sharing starts that take a mem argument (GOMP_loop[_ull]_start,
 * GOMP_loop[_ull]_ordered_start, GOMP_loop[_ull]_doacross_start,
 * GOMP_sections2_start) pass a size in *mem and expect back in *mem one
 * block of that many zeroed bytes, the same for every member of the work
 * share, valid until the member leaves it: gcc's scan code keeps each
 * member's partial result there, lastprivate(conditional:) the largest
 * iteration number that assigned (compared with 0 at first). Aligned to
 * a cache line (libgomp promises long long's alignment), at least one
 * line even for 0 bytes. */
void ito__omp_ws_mem_init(struct ws *w, size_t size) {
  size_t sz = size ? (size + 63) & ~(size_t)63 : 64;
  void *m = sz >= size ? aligned_alloc(64, sz) : NULL;
  if (!m) ito__omp_fatal("out of memory for %zu bytes of a work share's scratch memory", size);
  w->mem = memset(m, 0, sz);
}

/* Work share s, in slot w, is over for every member: the slot is free for
 * s + NWS. */
static void ws_recycle(team *tm, struct ws *w, unsigned long s) {
  __atomic_store_n(&w->left, 0, __ATOMIC_RELAXED);
  free(w->ranges); /* a split loop's (loop.c); nobody else is in it now */
  w->ranges = NULL;
  free(w->da); /* a doacross loop's (loop.c) */
  w->da = NULL;
  free(w->mem); /* gcc's scratch memory (ito__omp_ws_mem_init) */
  w->mem = NULL;
  __atomic_store_n(&w->copy_set, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&w->avail, s + NWS, __ATOMIC_RELEASE);
  ito__omp_team_notify(tm);
}

/* A cancelled region: members that left it at a cancellation point never
 * leave the work shares they skip, so a work share is over once the
 * members still in it have left it and the others are gone (left the
 * region before entering it). Under ring_lock, for each slot holding a
 * work share that some member entered: over only thanks to a departure
 * (so that the last leaver's own recycle in ito__omp_ws_leave, which needs
 * every member, cannot also happen), it is recycled. Without this a member
 * that goes on through NWS nowait work shares after the others left waits
 * for a slot for ever. */
static void ring_check_locked(team *tm) {
  for (unsigned k = 0; k < NWS; k++) {
    struct ws *w = &tm->ws[k];
    unsigned long s = __atomic_load_n(&w->avail, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&w->ready, __ATOMIC_ACQUIRE) != s + 1) continue; /* not entered */
    unsigned gone = 0;
    for (unsigned i = 0; i < tm->ngone; i++) gone += tm->gone[i] <= s;
    if (gone && __atomic_load_n(&w->left, __ATOMIC_ACQUIRE) + gone >= tm->n) ws_recycle(tm, w, s);
  }
}

/* me leaves the region: if it is cancelled, me never enters or leaves a
 * work share from its current one on (the one it is in, not left, or the
 * next). */
static void ring_gone(team *tm, task *me) {
  if (LIKELY(!__atomic_load_n(&tm->cancelled, __ATOMIC_ACQUIRE)) || tm->n < 2) return;
  /* (the allocator runs with no lock of ito's held: docs/locks.md) */
  void *spare = NULL;
  if (!__atomic_load_n(&tm->gone, __ATOMIC_ACQUIRE) &&
      !(spare = calloc((size_t)tm->n, sizeof *tm->gone)))
    ito__omp_fatal("out of memory leaving a cancelled region");
  ito__dropin_lock(&tm->ring_lock, ITO_DROPIN_LR_OMP_RING);
  if (!tm->gone) {
    __atomic_store_n(&tm->gone, spare, __ATOMIC_RELEASE);
    spare = NULL;
  }
  ITO_OMP_ASSERT(tm->gone && tm->ngone < tm->n);
  tm->gone[tm->ngone++] = me->ws ? me->ws_seq - 1 : me->ws_seq;
  me->ws = NULL;
  ring_check_locked(tm);
  ito__dropin_unlock(&tm->ring_lock);
  free(spare); /* (another member's came first) */
}

void ito__omp_ws_leave(task *me) {
  team *tm = ito__omp_ws_team(me);
  struct ws *w = me->ws;
  if (!w) return;
  me->ws = NULL;
  if (__atomic_fetch_add(&w->left, 1, __ATOMIC_ACQ_REL) == tm->n - 1) {
    ws_recycle(tm, w, me->ws_seq - 1);
  } else if (UNLIKELY(__atomic_load_n(&tm->cancelled, __ATOMIC_ACQUIRE))) {
    ito__dropin_lock(&tm->ring_lock,
                     ITO_DROPIN_LR_OMP_RING); /* a departure may be what it waits for */
    ring_check_locked(tm);
    ito__dropin_unlock(&tm->ring_lock);
  }
}

/* ---- scope ----------------------------------------------------------------------
 * gcc 12 lowers a scope construct to its code, its barrier (unless nowait)
 * and, for reduction clauses, the same code as a parallel region's; it
 * calls GOMP_scope_start only for task reductions (reduction(task, ...)),
 * registered as a work-sharing construct's (reduction.c; the barrier and
 * GOMP_workshare_task_reduction_unregister follow in the program's code).
 * Without them the call is a work share with no work. */
OMP_API void GOMP_scope_start(uintptr_t *reductions) {
  task *me = ito__omp_cur();
  if (reductions) {
    ito__omp_ws_reductions(me, reductions);
    return;
  }
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) ito__omp_ws_publish(me, w);
  ito__omp_ws_leave(me);
}

/* ---- single ---------------------------------------------------------------------- */

OMP_API bool GOMP_single_start(void) {
  task *me = ito__omp_cur();
  if (!me->team || me->team->n == 1) return true;
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) ito__omp_ws_publish(me, w);
  ito__omp_ws_leave(me);
  return first;
}

static int copy_ready(void *p) {
  return __atomic_load_n(&((struct ws *)p)->copy_set, __ATOMIC_ACQUIRE);
}

OMP_API void *GOMP_single_copy_start(void) {
  task *me = ito__omp_cur();
  if (!me->team || me->team->n == 1) return NULL;
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) {
    ito__omp_ws_publish(me, w);
    return NULL; /* runs the single, then GOMP_single_copy_end */
  }
  ito__omp_team_wait(me->team, copy_ready, w);
  void *data = __atomic_load_n(&w->copy, __ATOMIC_ACQUIRE);
  ito__omp_ws_leave(me);
  return data;
}

OMP_API void GOMP_single_copy_end(void *data) {
  task *me = ito__omp_cur();
  if (!me->team || me->team->n == 1) return;
  struct ws *w = me->ws;
  __atomic_store_n(&w->copy, data, __ATOMIC_RELAXED);
  __atomic_store_n(&w->copy_set, 1, __ATOMIC_RELEASE);
  ito__omp_team_notify(me->team);
  ito__omp_ws_leave(me);
  /* gcc follows this with a barrier, so data outlives every reader */
}

/* ---- critical and atomic ------------------------------------------------------------ */

static ito_mutex_t default_critical = ITO_MUTEX_INITIALIZER;
static ito_mutex_t atomic_lock = ITO_MUTEX_INITIALIZER;

OMP_API void GOMP_critical_start(void) { ito_mutex_lock(&default_critical); }
OMP_API void GOMP_critical_end(void) { ito_mutex_unlock(&default_critical); }
OMP_API void GOMP_atomic_start(void) { ito_mutex_lock(&atomic_lock); }
OMP_API void GOMP_atomic_end(void) { ito_mutex_unlock(&atomic_lock); }

/* A named critical section: gcc hands a pointer-sized variable per name,
 * zero at first; its mutex is made on first use and never freed. */
static ito_mutex_t *named_mutex(void **pptr) {
  ito_mutex_t *m = __atomic_load_n((ito_mutex_t **)pptr, __ATOMIC_ACQUIRE);
  if (LIKELY(m)) return m;
  ito_mutex_t *fresh = malloc(sizeof *fresh);
  if (!fresh) ito__omp_fatal("out of memory for a named critical section");
  ito_mutex_init(fresh);
  if (__atomic_compare_exchange_n((ito_mutex_t **)pptr, &m, fresh, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return fresh;
  free(fresh);
  return m;
}
OMP_API void GOMP_critical_name_start(void **pptr) { ito_mutex_lock(named_mutex(pptr)); }
OMP_API void GOMP_critical_name_end(void **pptr) { ito_mutex_unlock(named_mutex(pptr)); }

/* ---- sections -------------------------------------------------------------------- */

static void sections_init(struct ws *w, void *arg, unsigned n) {
  (void)n;
  unsigned count = *(unsigned *)arg;
  memset((char *)w + offsetof(struct ws, start), 0, sizeof *w - offsetof(struct ws, start));
  w->niter = count;
  w->chunk = 1;
  w->kind = SCHED_DYNAMIC;
}

static unsigned sections_take(task *me) {
  struct ws *w = me->ws;
  /* cancel sections: the sections not handed out are not run */
  if (UNLIKELY(__atomic_load_n(&w->cancelled, __ATOMIC_RELAXED))) return 0;
  unsigned long i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
  return i < w->niter ? (unsigned)i + 1 : 0;
}

static unsigned sections_start(unsigned count, void **mem) {
  task *me = ito__omp_cur();
  int first;
  struct ws *w = ito__omp_ws_enter(me, &first);
  if (first) {
    sections_init(w, &count, me->team ? me->team->n : 1);
    if (mem) ito__omp_ws_mem_init(w, (size_t)(uintptr_t)*mem);
    ito__omp_ws_publish(me, w);
  }
  if (mem) *mem = w->mem;
  return sections_take(me);
}

OMP_API unsigned GOMP_sections_start(unsigned count) { return sections_start(count, NULL); }

/* gcc 9's entry: task reductions, and scratch memory for
 * lastprivate(conditional:) */
OMP_API unsigned GOMP_sections2_start(unsigned count, uintptr_t *reductions, void **mem) {
  if (reductions) ito__omp_ws_reductions(ito__omp_cur(), reductions);
  return sections_start(count, mem);
}

OMP_API unsigned GOMP_sections_next(void) { return sections_take(ito__omp_cur()); }

OMP_API void GOMP_sections_end_nowait(void) { ito__omp_ws_leave(ito__omp_cur()); }
OMP_API void GOMP_sections_end(void) {
  GOMP_sections_end_nowait();
  GOMP_barrier();
}
/* true: the parallel region is cancelled (gcc then goes to its end); a
 * cancelled sections construct alone ends like any other */
OMP_API bool GOMP_sections_end_cancel(void) {
  GOMP_sections_end_nowait();
  return ito__omp_barrier_cancel(ito__omp_cur());
}

OMP_API void GOMP_parallel_sections(void (*fn)(void *), void *data, unsigned nthreads,
                                    unsigned count, unsigned flags) {
  ito__omp_parallel(fn, data, nthreads, flags, sections_init, &count);
}

OMP_API void GOMP_parallel_sections_start(void (*fn)(void *), void *data, unsigned nthreads,
                                          unsigned count) {
  ito__omp_parallel_start_ws(fn, data, nthreads, sections_init, &count);
}

/* ---- ordered ------------------------------------------------------------------------ */

struct turn_wait {
  struct ws *w;
  unsigned long lo;
};
static int my_turn(void *p) {
  struct turn_wait *t = p;
  return __atomic_load_n(&t->w->ord_turn, __ATOMIC_ACQUIRE) == t->lo;
}

/* Waits until the chunk [ord_lo, ord_hi) the member holds is the next in
 * order (every chunk before it has passed its turn on). */
void ito__omp_ordered_wait(task *me) {
  struct ws *w = me->ws;
  if (!w || !me->team || me->team->n == 1) return; /* alone: always its turn */
  struct turn_wait tw = {w, me->ord_lo};
  ito__omp_team_wait(me->team, my_turn, &tw);
}

/* The chunk is done: pass the turn on (after its own turn came). */
void ito__omp_ordered_pass(task *me) {
  struct ws *w = me->ws;
  if (!w || !w->ordered || me->ord_lo == me->ord_hi || !me->team || me->team->n == 1) return;
  ito__omp_ordered_wait(me);
  __atomic_store_n(&w->ord_turn, me->ord_hi, __ATOMIC_RELEASE);
  me->ord_lo = me->ord_hi;
  ito__omp_team_notify(me->team);
}

OMP_API void GOMP_ordered_start(void) { ito__omp_ordered_wait(ito__omp_cur()); }
OMP_API void GOMP_ordered_end(void) {}
