/* The profiler's recording: a recorder on the event hooks that follows
 * the critical path and splits the workers' time (invariants at the top
 * of profile.h; design in docs/profile.md). The tagged regions are
 * profile_regions.c's, the outputs profile_out.c's. */
#define _GNU_SOURCE
#include "profile.h"

#include "config.h"
#include "fiber.h"
#include "hooks.h"
#include "nodeq.h"
#include "os.h"
#include "profile_data.h"
#include "runtime.h"
#include "sched.h"
#include "worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* ---- time ---------------------------------------------------------------------------- */

/* The cheapest clock that runs at a constant rate on every CPU: the TSC
 * (the kernel's clocksource checks it is invariant), AArch64's virtual
 * counter, else CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t ticks(void) {
#if defined(__x86_64__)
  return __rdtsc();
#elif defined(__aarch64__)
  uint64_t v;
  __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
#endif
}

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* ---- state ------------------------------------------------------------------------------ */

/* A fork record's span and publication time, for whoever takes it
 * (invariant 3). */
struct shadow {
  uintptr_t rec; /* the record while the slot is live, else 0 */
  uint64_t span;
  uint64_t t;
};

enum { ST_RUNTIME = 0, ST_WORK, ST_IDLE };
/* prof_flags of a fiber */
enum { PF_BLOCKED = 1, PF_JOINWAIT = 2, PF_WOKEN = 4, PF_WAKER_SHIFT = 8 };

#define TRACE_CAP (1u << 16) /* records per worker */

struct pworker {
  /* the owner's (others read the fields marked shared, relaxed) */
  uint64_t span;     /* the running context's span at `since` (packed) */
  uint64_t since;    /* start of the interval the worker is in (shared) */
  int state;         /* ST_* (shared) */
  int on;            /* recorded anything this run (shared) */
  uint64_t slice0;   /* start of the trace slice it is in */
  uint64_t idle0;    /* the idle period's start */
  int idle_blocked;  /* a thread was blocked when it began */
  uint64_t span_max; /* (shared) */
  uint64_t time[NCAT]; /* (shared) */
  uint64_t n[NCOUNT];  /* (shared) */
  /* what the last take handed to the next run */
  uint64_t take_span, take_ready, take_t, take_from;
  int took_steal;
  uint64_t steal_cost, steal_n, sync_cost, sync_n; /* (shared) */
  struct shadow *sh;
  uint64_t mask;
  struct trec *buf;
  uint32_t nbuf;
  uint64_t dropped;
  int mine;          /* its OS thread has taken its first reading */
  uint64_t ss_cpu;   /* the thread's time on a CPU (ns) when last read */
  uint64_t ss_t;     /* when (ticks) */
} __attribute__((aligned(CACHELINE)));

static struct pworker *pw;   /* [ITO_MAX_WORKERS], mapped at the first start */
static int what;             /* PROF_*: 0 while not recording */
static int recording;        /* (read by ito_profile_*) */
static int attached;
static int runs;
static int nworkers;
static uint64_t t0_ticks, t0_ns;
static double sec_per_tick;
static int blocked_now; /* threads parked in a blocking wait */
static uint64_t placed0[NQ_KINDS]; /* the placement's counts at the start */
static int nused;       /* 1 + the highest worker id that recorded this run */

/* ---- small helpers ------------------------------------------------------------------------ */

static inline void add(uint64_t *x, uint64_t v) { STORE_RLX(x, *x + v); }

/* ---- time the OS took ------------------------------------------------------------------------
 * A worker's OS thread that the kernel preempts in the middle of a strand
 * (or whose virtual CPU the hypervisor takes away) would stretch that
 * strand, the work and the span by a scheduler tick (4 ms here) or more
 * that the program never asked for. An interval longer than LONG_NS is
 * checked against the thread's time on a CPU (CLOCK_THREAD_CPUTIME_ID,
 * which leaves out the time the hypervisor stole where the kernel accounts
 * for it; /proc's schedstat is no use for a running thread: its figure
 * lags by up to a scheduler tick): the wall time since the last
 * reading that the thread was not on a CPU moves from the interval to
 * C_OS. Shorter intervals are not checked (a read is a system call), but
 * the reading is renewed when the worker starts to run
 * something or to idle and the last one is older than RESYNC_NS: time off
 * the CPU in a short interval is then counted only if a long one follows
 * within that window. */
#define LONG_NS 200000
#define RESYNC_NS 1000000
static uint64_t long_ticks, resync_ticks;

/* The calling thread's time on a CPU (ns), or the last reading. */
static uint64_t on_cpu(struct pworker *p) {
  struct timespec t;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return p->ss_cpu;
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void reading(struct pworker *p, uint64_t now) {
  p->ss_cpu = on_cpu(p);
  p->ss_t = now;
}

/* d ticks of an interval that ends now, less what the OS took of them. */
static __attribute__((noinline)) uint64_t less_os_slow(struct pworker *p, uint64_t d) {
  if (!p->mine) return d;
  uint64_t now = ticks(), cpu = on_cpu(p);
  uint64_t wall = now - p->ss_t;
  uint64_t ran = (uint64_t)((double)(cpu - p->ss_cpu) * 1e-9 / sec_per_tick);
  p->ss_cpu = cpu;
  p->ss_t = now;
  uint64_t t = wall > ran ? wall - ran : 0;
  if (t > d) t = d;
  add(&p->time[C_OS], t);
  return d - t;
}

static inline uint64_t less_os(struct pworker *p, uint64_t d) {
  return LIKELY(d < long_ticks) ? d : less_os_slow(p, d);
}

/* The time off the CPU since the last reading is dropped when it is old. */
static inline void resync(struct pworker *p, uint64_t now) {
  if (UNLIKELY(now - p->ss_t > resync_ticks) && p->mine) reading(p, now);
}

static inline uint64_t span_plus(uint64_t s, uint64_t dticks) { return s + (dticks << SPAN_KBITS); }
static inline uint64_t span_fork(uint64_t s) { return span_forks(s) < SPAN_KMAX ? s + 1 : s; }
static inline uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static void trace(struct pworker *p, int type, uint64_t t0, uint64_t t1, int a, uint64_t b) {
  if (!(what & (PROF_TRACE | PROF_DAG))) return;
  if (UNLIKELY(p->nbuf >= TRACE_CAP || !p->buf)) {
    add(&p->dropped, 1);
    return;
  }
  p->buf[p->nbuf] = (struct trec){t0, t1, type, a, b};
  STORE_REL(&p->nbuf, p->nbuf + 1); /* (read at exit while the worker may run) */
}

/* The worker's state changes at `now` (invariant 4): the interval it was
 * in is closed (an idle one by idle_end) and a trace slice ends with it. */
static void enter(struct pworker *p, int st, uint64_t now) {
  /* (an idle interval was split by idle_end; a worker sleeps off the CPU
   * by its own choice there) */
  uint64_t d = p->state == ST_IDLE ? 0 : less_os(p, now - p->since);
  if (p->state == ST_WORK) {
    add(&p->time[C_WORK], d);
    p->span = span_plus(p->span, d);
    if (p->span > p->span_max) STORE_RLX(&p->span_max, p->span);
  } else if (p->state == ST_RUNTIME) {
    add(&p->time[C_RUNTIME], d);
  }
  if (st != p->state) {
    trace(p, p->state == ST_WORK ? TR_WORK : p->state == ST_IDLE ? TR_IDLE : TR_RUNTIME,
          p->slice0, now, -1, p->span);
    p->slice0 = now;
  }
  STORE_RLX(&p->state, st);
  STORE_RLX(&p->since, now);
}

/* The code running goes on, its span updated to now (no state change). */
static inline void advance(struct pworker *p, uint64_t now) {
  if (p->state != ST_WORK) return;
  uint64_t d = less_os(p, now - p->since);
  add(&p->time[C_WORK], d);
  p->span = span_plus(p->span, d);
  if (p->span > p->span_max) STORE_RLX(&p->span_max, p->span);
  STORE_RLX(&p->since, now);
}

/* An idle period ends at now: the part after `ready` (when what the worker
 * now runs became ready) was idle while work was ready; the rest idle, or
 * blocked when a thread was blocked at its start or is at its end. */
static void idle_end(struct pworker *p, uint64_t now, uint64_t ready) {
  uint64_t total = now - p->idle0;
  /* a worker that slept was off the CPU by its own choice: none of it is
   * charged to the next interval */
  if (total >= long_ticks && p->mine) reading(p, now);
  uint64_t r = 0;
  if (ready && ready < now) r = now - (ready > p->idle0 ? ready : p->idle0);
  if (r > total) r = total;
  add(&p->time[C_READY], r);
  bool blocked = p->idle_blocked || LOAD_RLX(&blocked_now) > 0;
  add(&p->time[blocked ? C_BLOCKED : C_IDLE], total - r);
  STORE_RLX(&p->since, now);
}

/* A traced group's recorder word (hooks.h): the largest span of its
 * children so far. */
static void fold(ito_tg_t *tg, uint64_t span) {
  uintptr_t *m = (uintptr_t *)&tg->reserved_[1];
  uintptr_t cur = __atomic_load_n(m, __ATOMIC_RELAXED);
  while (cur < span &&
         !__atomic_compare_exchange_n(m, &cur, span, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* Memory for the recorder's own tables: pages nobody touched cost nothing. */
static void *map_pages(size_t bytes) {
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* Worker wid's shadow of its deque, mapped once (invariant 3). */
static void map_shadow(struct pworker *p, int wid) {
  if (p->sh) return;
  p->mask = ito__workers[wid]->dq.mask;
  p->sh = map_pages((p->mask + 1) * sizeof(struct shadow));
}

static __attribute__((noinline)) void pw_first(struct pworker *p, int wid);

/* The worker's state; its first event on its own OS thread also opens its
 * schedstat (p->mine). */
static inline struct pworker *pw_of(int wid) {
  if (UNLIKELY((unsigned)wid >= ITO_MAX_WORKERS)) return NULL;
  struct pworker *p = &pw[wid];
  if (UNLIKELY(!p->mine)) pw_first(p, wid);
  return p;
}

/* Counted from now on (the workers of the start: at the start, idle). */
static void pw_count(struct pworker *p, int wid, uint64_t now, int state) {
  p->since = p->slice0 = p->idle0 = now;
  p->state = state;
  if (wid + 1 > LOAD_RLX(&nused)) STORE_RLX(&nused, wid + 1);
  STORE_RLX(&p->on, 1);
}

static void pw_first(struct pworker *p, int wid) {
  map_shadow(p, wid); /* an extra worker started by the monitor: now, once */
  uint64_t now = ticks();
  if (!p->on) pw_count(p, wid, now, ST_RUNTIME);
  /* events of worker wid come from its own OS thread */
  p->ss_cpu = 0;
  reading(p, now);
  p->mine = 1;
}

/* ---- events ------------------------------------------------------------------------------------ */

static void on_fork(struct pworker *p, int wid, const struct ito_event *e) {
  add(&p->n[N_SPAWN], 1);
  if (!e->rec || !p->sh) return; /* a task's spawn, or a child of its own: CREATE follows */
  uint64_t now = ticks();
  advance(p, now);
  struct shadow *s = &pw[wid].sh[e->aux & p->mask];
  s->span = span_fork(p->span);
  s->t = now;
  STORE_REL(&s->rec, (uintptr_t)e->rec);
}

static void on_fork_back(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  advance(p, now);
  fold((ito_tg_t *)e->obj, p->span);
  if (!e->rec || !p->sh) return; /* a child of its own ended (lazy.c, box_run) */
  struct shadow *s = &p->sh[e->aux & p->mask];
  p->span = s->span; /* the continuation goes on from the fork */
  STORE_RLX(&s->rec, 0);
}

static void on_fork_taken(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  advance(p, now);
  fold((ito_tg_t *)e->obj, p->span);
  enter(p, ST_RUNTIME, now);
  struct pworker *o = &pw[e->peer];
  if (!o->sh) return;
  /* the taker clears the slot once it read it; the owner's next fork at
   * this index must not overwrite it before (invariant 3) */
  struct shadow *s = &o->sh[e->aux & o->mask];
  while (LOAD_ACQ(&s->rec) == (uintptr_t)e->rec) cpu_relax();
}

static void on_take(struct pworker *p, int wid, const struct ito_event *e) {
  uint64_t now = ticks();
  uintptr_t ent = (uintptr_t)e->rec;
  fiber *f = (fiber *)e->obj;
  p->take_from = (uint64_t)e->peer;
  if (e->peer != wid) {
    p->take_t = now;
    p->took_steal = 1;
  }
  if ((ent & ENT_TAGS) == ENT_CREATE) {
    p->take_span = f->prof_s0;
    p->take_ready = f->prof_ct;
    return;
  }
  if (ent & ENT_TAGS) return; /* a fiber: it carries its own */
  struct pworker *o = &pw[e->peer];
  uint64_t span = 0, ready = now;
  if (o->sh) {
    struct shadow *s = &o->sh[e->aux & o->mask];
    /* the owner writes it right after publishing (invariant 3) */
    while (LOAD_ACQ(&s->rec) != ent) cpu_relax();
    span = s->span;
    ready = s->t;
    STORE_REL(&s->rec, 0);
  }
  f->prof_span = span;
  f->prof_ready = ready;
  f->prof_flags = 0;
}

static void on_run(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  fiber *f = (fiber *)e->obj;
  bool creator = e->peer == 1;
  uint64_t ready = creator ? p->take_ready : f->prof_ready;
  if (p->state == ST_IDLE)
    idle_end(p, now, ready);
  enter(p, ST_WORK, now);
  resync(p, now);
  p->span = creator ? p->take_span : f->prof_span;
  if (p->took_steal) {
    add(&p->steal_cost, now - p->take_t);
    add(&p->steal_n, 1);
    p->took_steal = 0;
    if (what & (PROF_TRACE | PROF_DAG)) {
      int from = (int)p->take_from;
      trace(p, TR_STEAL, ready, now, from, 0);
    }
  }
  if (creator) return;
  uint32_t fl = f->prof_flags;
  if ((fl & (PF_JOINWAIT | PF_WOKEN)) == (PF_JOINWAIT | PF_WOKEN)) { /* woken: the sync's cost */
    add(&p->sync_cost, now > f->prof_ready ? now - f->prof_ready : 0);
    add(&p->sync_n, 1);
  }
  if (fl & PF_BLOCKED) {
    __atomic_sub_fetch(&blocked_now, 1, __ATOMIC_RELAXED);
    if (f->thread) trace(p, TR_RESUME, now, now, (int)f->thread->idx, 0);
    if (fl >> PF_WAKER_SHIFT) trace(p, TR_WAKE, f->prof_ready, now, (int)(fl >> PF_WAKER_SHIFT) - 1, 0);
  }
  f->prof_flags = 0;
}

static void on_leave(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  fiber *f = (fiber *)e->obj;
  bool live = p->state == ST_WORK;
  enter(p, ST_RUNTIME, now);
  if (!live) return; /* an ended thread (EXIT) or a taken fork's child (FORK_TAKEN) */
  switch (e->peer) {
    case ACT_EXIT:
    case ACT_ABANDON: return;
    case ACT_BLOCK:
      if (f->w.parking) { /* a thread join (thread.c, join_wait): not a blocking wait */
        f->prof_flags = PF_JOINWAIT;
        break;
      }
      f->prof_flags = PF_BLOCKED;
      __atomic_add_fetch(&blocked_now, 1, __ATOMIC_RELAXED);
      if (f->thread) trace(p, TR_PARK, now, now, (int)f->thread->idx, 0);
      break;
    case ACT_JOIN_WAIT: f->prof_flags = PF_JOINWAIT; break;
    default: f->prof_flags = 0; break;
  }
  f->prof_span = p->span;
  f->prof_ready = now;
}

static void on_ready(struct pworker *p, int wid, const struct ito_event *e) {
  fiber *f = (fiber *)e->obj;
  uint64_t now = ticks();
  f->prof_ready = now;
  f->prof_flags |= PF_WOKEN;
  if (!p || p->state != ST_WORK) return;
  advance(p, now);
  if (p->span > f->prof_span) f->prof_span = p->span; /* the wake-up's edge */
  if (f->prof_flags & PF_BLOCKED)
    f->prof_flags = (f->prof_flags & 0xff) | (uint32_t)(wid + 1) << PF_WAKER_SHIFT;
}

static void on_create(struct pworker *p, const struct ito_event *e) {
  fiber *f = fiber_of_thread((ithread *)e->obj);
  uint64_t now = ticks();
  f->prof_flags = 0;
  f->prof_ready = f->prof_ct = now;
  if (!p) {
    f->prof_span = f->prof_s0 = 0;
    return;
  }
  if (e->peer == 0) add(&p->n[N_CREATE], 1); /* (1: a task's or a child's thread) */
  advance(p, now);
  f->prof_span = p->span;
  f->prof_s0 = span_fork(p->span); /* the creator's continuation */
  worker *w = ito__workers[e->worker];
  if (w->cur && w->cur != f) { /* the creator, should it be queued */
    w->cur->prof_span = f->prof_s0;
    w->cur->prof_ready = now;
    w->cur->prof_flags = 0;
  }
}

static void on_thread_exit(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  advance(p, now);
  fiber_of_thread((ithread *)e->obj)->prof_span = p->span;
  enter(p, ST_RUNTIME, now);
}

static void on_create_back(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  enter(p, ST_WORK, now);
  p->span = ((const fiber *)e->obj)->prof_s0;
}

static void on_join(struct pworker *p, const struct ito_event *e) {
  uint64_t x = e->peer == 1 ? fiber_of_thread((ithread *)e->obj)->prof_span
                            : __atomic_load_n((uintptr_t *)&((ito_tg_t *)e->obj)->reserved_[1],
                                              __ATOMIC_RELAXED);
  if (x <= p->span) return; /* the path through the join is longer already */
  uint64_t now = ticks();
  advance(p, now);
  if (x > p->span) {
    p->span = x;
    if (x > p->span_max) STORE_RLX(&p->span_max, x);
  }
}

static void on_idle(struct pworker *p) {
  if (p->state == ST_IDLE) return;
  uint64_t now = ticks();
  enter(p, ST_IDLE, now);
  resync(p, now);
  p->idle0 = now;
  p->idle_blocked = LOAD_RLX(&blocked_now) > 0;
}

/* The events that only count. */
static const signed char counter_of[ITO_EV_KINDS] = {
    [ITO_EV_STEAL] = N_STEAL + 1, [ITO_EV_STEAL_FAIL] = N_STEAL_FAIL + 1,
    [ITO_EV_PARK] = N_PARK + 1,   [ITO_EV_SLEEP] = N_SLEEP + 1,
    [ITO_EV_WAKE] = N_WAKE + 1,
};

static void record(const struct ito_event *e, void *arg) {
  (void)arg;
  if (!LOAD_RLX(&recording)) return;
  int wid = e->worker;
  struct pworker *p = pw_of(wid);
  /* these two also come from outside the workers */
  if (e->kind == ITO_EV_READY) {
    on_ready(p, wid, e);
    return;
  }
  if (e->kind == ITO_EV_CREATE) {
    on_create(p, e);
    return;
  }
  if (!p || (unsigned)e->kind >= ITO_EV_KINDS) return;
  switch (e->kind) {
    case ITO_EV_SPAWN: on_fork(p, wid, e); return;
    case ITO_EV_FORK_BACK: on_fork_back(p, e); return;
    case ITO_EV_FORK_TAKEN: on_fork_taken(p, e); return;
    case ITO_EV_TAKE: on_take(p, wid, e); return;
    case ITO_EV_RUN: on_run(p, e); return;
    case ITO_EV_LEAVE: on_leave(p, e); return;
    case ITO_EV_EXIT: on_thread_exit(p, e); return;
    case ITO_EV_CREATE_BACK: on_create_back(p, e); return;
    case ITO_EV_JOIN: on_join(p, e); return;
    case ITO_EV_IDLE: on_idle(p); return;
    default:
      if (counter_of[e->kind]) add(&p->n[counter_of[e->kind] - 1], 1);
  }
}

/* ---- figures -------------------------------------------------------------------------------------- */

static double calibrate(uint64_t now_t, uint64_t now_ns) {
  if (now_t > t0_ticks && now_ns > t0_ns + 20000000ULL)
    return (double)(now_ns - t0_ns) * 1e-9 / (double)(now_t - t0_ticks);
  return sec_per_tick;
}

/* The figures so far, at now, read from every worker without stopping
 * them: each one's closed intervals, plus for the caller's worker
 * (wid, or -1) the open one. Another worker's open interval is added as
 * the state it is in says. */
static void sums_now(uint64_t now, int wid, struct prof_sums *s, uint64_t *caller_span) {
  memset(s, 0, sizeof *s);
  s->elapsed = now - t0_ticks;
  s->instances = 1;
  int n = LOAD_RLX(&nused);
  for (int i = 0; i < n; i++) {
    struct pworker *p = &pw[i];
    if (!LOAD_RLX(&p->on)) continue;
    for (int c = 0; c < NCAT; c++) s->time[c] += LOAD_RLX(&p->time[c]);
    for (int c = 0; c < NCOUNT; c++) s->n[c] += LOAD_RLX(&p->n[c]);
    uint64_t since = LOAD_RLX(&p->since), d = now > since ? now - since : 0;
    int st = LOAD_RLX(&p->state);
    uint64_t m = LOAD_RLX(&p->span_max);
    if (st == ST_WORK) {
      s->time[C_WORK] += d;
      if (i == wid) {
        uint64_t cur = span_plus(p->span, d);
        if (caller_span) *caller_span = cur;
        if (cur > m) m = cur;
      }
    } else if (st == ST_RUNTIME) {
      s->time[C_RUNTIME] += d;
    } else {
      s->time[LOAD_RLX(&blocked_now) > 0 ? C_BLOCKED : C_IDLE] += d;
    }
    if (m > s->span) s->span = m;
  }
  uint64_t pl[NQ_KINDS];
  ito__nodeq_counts(pl);
  s->n[N_LOCAL] = pl[NQ_LOCAL] - placed0[NQ_LOCAL];
  s->n[N_REMOTE] = pl[NQ_REMOTE] - placed0[NQ_REMOTE];
  s->n[N_UNKNOWN] = pl[NQ_UNKNOWN] - placed0[NQ_UNKNOWN];
}

static uint64_t burden_ticks(void) {
  uint64_t sc = 0, sn = 0, yc = 0, yn = 0;
  int n = LOAD_RLX(&nused);
  for (int i = 0; i < n; i++) {
    if (!LOAD_RLX(&pw[i].on)) continue;
    sc += LOAD_RLX(&pw[i].steal_cost);
    sn += LOAD_RLX(&pw[i].steal_n);
    yc += LOAD_RLX(&pw[i].sync_cost);
    yn += LOAD_RLX(&pw[i].sync_n);
  }
  return (sn ? sc / sn : 0) + (yn ? yc / yn : 0);
}

/* ---- what the regions and the outputs read (profile_data.h) ------------------------------- */

bool ito__prof_recording(void) { return LOAD_RLX(&recording) != 0; }

void ito__prof_now(uint64_t *now, struct prof_sums *s, uint64_t *span) {
  *now = ticks();
  worker *w = cur_worker();
  *span = 0;
  sums_now(*now, w ? w->id : -1, s, span);
}

void ito__prof_run(struct prof_run *r, uint64_t now) {
  memset(r, 0, sizeof *r);
  r->what = what;
  r->prefix = ito__cfg.profile_out ? ito__cfg.profile_out : "ito-profile";
  r->baseline = ito__cfg.profile_baseline;
  r->number = runs;
  r->workers = nworkers;
  r->sec_per_tick = calibrate(now, mono_ns());
  r->t_start = t0_ticks;
  r->burden = burden_ticks();
  ito__prof_regions(&r->regions, &r->nregions);
}

/* ---- start and stop ----------------------------------------------------------------------------- */

static void stop(bool stopped);

/* At exit with the runtime still running: the workers may be recording
 * still, so their buffers are read as they are, not closed. */
static void at_exit(void) {
  if (LOAD_RLX(&recording)) stop(false);
}

/* The clock's rate before the run is long enough to measure it against
 * CLOCK_MONOTONIC (calibrate): a 2 ms measurement. */
static double first_rate(void) {
  uint64_t a = ticks(), an = mono_ns(), b, bn;
  do {
    b = ticks();
    bn = mono_ns();
  } while (bn - an < 2000000ULL);
  return b > a ? (double)(bn - an) * 1e-9 / (double)(b - a) : 1e-9;
}

void ito__profile_start(void) {
  if (!ito__cfg.profile) return;
  if (!attached) {
    int rc = ito__hooks_attach(record, NULL);
    if (rc) {
      static const char msg[] =
          "ito: ITO_PROFILE is set but another event recorder is attached: profiling is off\n";
      ito__write_stderr(msg, sizeof msg - 1);
      return;
    }
    attached = 1;
    atexit(at_exit);
  }
  if (!pw) {
    pw = map_pages(ITO_MAX_WORKERS * sizeof(struct pworker));
    if (!pw) {
      static const char msg[] = "ito: ITO_PROFILE: no memory for the profiler: profiling is off\n";
      ito__write_stderr(msg, sizeof msg - 1);
      return;
    }
    sec_per_tick = first_rate();
  }
  runs++;
  what = ito__cfg.profile;
  nworkers = (int)ito__cfg.workers;
  const char *prefix = ito__cfg.profile_out ? ito__cfg.profile_out : "ito-profile";
  what &= ~ito__prof_check_out(what, prefix, runs);
  for (int i = 0; i < ITO_MAX_WORKERS; i++) {
    struct pworker *p = &pw[i];
    struct shadow *sh = p->sh;
    struct trec *buf = p->buf;
    uint64_t mask = p->mask;
    memset(p, 0, sizeof *p);
    p->sh = sh;
    p->mask = mask;
    p->buf = buf;
    if (i >= nworkers) continue;
    map_shadow(p, i);
    if ((what & (PROF_TRACE | PROF_DAG)) && !p->buf)
      p->buf = map_pages(TRACE_CAP * sizeof(struct trec));
  }
  ito__prof_regions_reset();
  blocked_now = 0;
  ito__nodeq_counts(placed0);
  nused = 0;
  long_ticks = (uint64_t)(LONG_NS * 1e-9 / sec_per_tick);
  resync_ticks = (uint64_t)(RESYNC_NS * 1e-9 / sec_per_tick);
  t0_ticks = ticks();
  t0_ns = mono_ns();
  /* the workers of this start count from now, idle until their first
   * event (the main thread's worker works from ito__profile_running) */
  for (int i = 0; i < nworkers; i++) {
    pw_count(&pw[i], i, t0_ticks, ST_IDLE);
    pw[i].idle_blocked = 0;
  }
  STORE_REL(&recording, 1);
}

void ito__profile_running(void) {
  /* the main thread, adopted as worker 0's first thread, runs the
   * program's code from now on */
  if (!LOAD_RLX(&recording) || (int)gettid() != (int)getpid()) return;
  struct pworker *p = pw_of(0);
  uint64_t now = ticks();
  if (p->state == ST_IDLE) idle_end(p, now, 0); /* (counted from the start: runtime code) */
  enter(p, ST_WORK, now);
}

void ito__profile_stop(void) { stop(true); }

/* stopped: the workers have stopped (ito_finalize), so every worker's
 * open slice is closed here; else (exit) only the figures are whole. */
static void stop(bool stopped) {
  if (!LOAD_RLX(&recording)) return;
  uint64_t now = ticks();
  struct prof_sums s;
  sums_now(now, 0, &s, NULL);
  STORE_RLX(&recording, 0);
  struct prof_run r;
  ito__prof_run(&r, now);
  r.all = s;
  struct prof_track tracks[ITO_MAX_WORKERS];
  int nt = 0;
  int n = LOAD_RLX(&nused);
  for (int i = 0; i < n; i++) {
    struct pworker *p = &pw[i];
    if (!LOAD_RLX(&p->on)) continue;
    /* the open slice ends now */
    if (stopped && p->nbuf < TRACE_CAP && p->buf)
      p->buf[p->nbuf++] = (struct trec){p->slice0, now,
                                        p->state == ST_WORK   ? TR_WORK
                                        : p->state == ST_IDLE ? TR_IDLE
                                                              : TR_RUNTIME,
                                        -1, p->span};
    nt = i + 1;
  }
  for (int i = 0; i < nt; i++)
    tracks[i] = (struct prof_track){pw[i].buf, LOAD_RLX(&pw[i].on) ? LOAD_ACQ(&pw[i].nbuf) : 0,
                                    LOAD_RLX(&pw[i].dropped)};
  r.tracks = tracks;
  if (nt > r.workers) r.workers = nt;
  ito__prof_write(&r);
}
