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

/* The tick counter and CLOCK_MONOTONIC read at one instant: a tick
 * reading between two monotonic ones, of a few tries the pair closest
 * together. A thread that the OS preempts between the two clocks' reads
 * would otherwise pair readings a time slice (or, on a loaded machine,
 * tens of milliseconds) apart, and the clock's rate measured from such a
 * pair would be off by as much: the profiler's split of an interval into
 * time on and off the CPU (less_os_slow) would then count most of the
 * work as the OS's. */
static void clock_pair(uint64_t *t, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    uint64_t a = mono_ns(), k = ticks(), b = mono_ns();
    if (b - a < best) {
      best = b - a;
      *t = k;
      *ns = a + (b - a) / 2;
    }
    if (best < 1000) break;
  }
}

/* ---- state ------------------------------------------------------------------------------ */

/* A reported fork record's span and publication time, for whoever takes
 * it (invariant 3), and what its child's return compares to tell whether
 * the child ran through undisturbed (invariant 5). Whether it is live is
 * the mark array's: the record there, or the record + 1 for a quiet fork
 * (hooks.h, invariant 4), else 0. */
struct shadow {
  uint64_t span;
  uint64_t t;
  uint64_t n0;     /* the worker's spawns at the fork */
  uint32_t epoch;  /* the worker's scheduler events at the fork */
  uint32_t ncoll;  /* the worker's collapses begun at the fork */
};

/* What the recorder knows of the subtrees forked at one place (invariant
 * 5): the fork's site (its return address) and its record's depth on its
 * stack. */
struct ckey {
  uintptr_t site;  /* 0: an empty entry */
  uint32_t depth;  /* 16-byte units below the stack's top; bit 31: an OS thread's stack */
  uint16_t n;      /* subtrees measured (saturating) */
  uint16_t nexact; /* of them, recorded whole (saturating) */
  float work;      /* a subtree's work in ticks, a moving average */
  float forks;     /* the forks in a subtree, a moving average */
  float rho;       /* span / work of the subtrees recorded whole, a moving average */
  float pforks;    /* the forks on their paths, a moving average */
  uint32_t since;  /* subtrees collapsed since the last one recorded whole */
  uint32_t pad;
};
#define NKEYS 1024   /* per worker, direct-mapped */
#define SAMPLE_EVERY 128
#define BUDGET_MAX (1 << 20)

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
  uintptr_t *mk;     /* the marks (hooks.h, invariant 4), one per deque slot */
  uint64_t mask;
  /* collapsing (invariant 5) */
  struct ckey *keys;
  uint32_t epoch;    /* scheduler events on this worker */
  uint32_t ncoll;    /* collapses begun */
  int coll_on;       /* a subtree collapses now */
  int samp_on;       /* a subtree is recorded whole to measure its key */
  uintptr_t coll_rec, samp_rec; /* their fork records */
  struct ckey *coll_key;
  uint64_t coll_s0;  /* the span where the collapsed subtree began (shared) */
  uint64_t coll_t0;  /* when (shared) */
  uint64_t coll_rho; /* its key's span / work, in 1/65536 (shared) */
  uint64_t coll_cap; /* the most of its time a thief's estimate counts (shared) */
  uint64_t coll_i0;  /* its root fork's deque index */
  uint32_t coll_budget;
  struct trec *buf;
  uint32_t nbuf;
  uint64_t dropped;
  int mine;          /* its OS thread has taken its first reading */
  uint64_t ss_cpu;   /* the thread's time on a CPU (ns) when last read */
  uint64_t ss_t;     /* when (ticks) */
  uint64_t skip_to;  /* the end of the last reading (ticks) */
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
static int pw_hi;       /* 1 + the highest worker id whose state was ever set up */

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
 * C_OS. Shorter intervals are not checked (a read is a system call of
 * about 0.37 us here: 2.5% of 15 us; its own time is the runtime's), but
 * the reading is renewed when the worker starts to run
 * something or to idle and the last one is older than RESYNC_NS: time off
 * the CPU in a short interval is then counted only if a long one follows
 * within that window. */
#define LONG_NS 15000
#define RESYNC_NS 1000000
static uint64_t long_ticks, resync_ticks;
#define CALL_NS 1000 /* the most of a reading that is the call itself */
static uint64_t call_ticks;

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

/* d ticks of an interval that ends now, less what the OS took of them.
 * The reading itself (a system call) is the runtime's: the next interval
 * starts after it (since_at). */
static __attribute__((noinline)) uint64_t less_os_slow(struct pworker *p, uint64_t now,
                                                       uint64_t d) {
  if (!p->mine) return d;
  uint64_t cpu = on_cpu(p);
  uint64_t wall = now - p->ss_t;
  uint64_t ran = (uint64_t)((double)(cpu - p->ss_cpu) * 1e-9 / sec_per_tick);
  p->ss_cpu = cpu;
  p->ss_t = now;
  uint64_t t = wall > ran ? wall - ran : 0;
  if (t > d) t = d;
  add(&p->time[C_OS], t);
  /* [now, after]: the call itself (the runtime's, a microsecond at most),
   * and whatever the OS took at its return (a system call is where a
   * preempted thread stops): off the CPU. The next reading counts from
   * after, so that this is not counted again. */
  uint64_t after = ticks(), spent = after - now;
  uint64_t own = spent < call_ticks ? spent : call_ticks;
  add(&p->time[C_RUNTIME], own);
  add(&p->time[C_OS], spent - own);
  p->ss_t = after;
  p->skip_to = after;
  return d - t;
}

/* The ticks of the interval from p->since to now, less what the OS took
 * (none when a reading taken at this now moved p->since past it). */
static inline uint64_t less_os(struct pworker *p, uint64_t now) {
  uint64_t d = now > p->since ? now - p->since : 0;
  return LIKELY(d < long_ticks) ? d : less_os_slow(p, now, d);
}

/* Where the next interval starts: now, or after a reading taken now. */
static inline uint64_t since_at(const struct pworker *p, uint64_t now) {
  return p->skip_to > now ? p->skip_to : now;
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
  uint64_t d = p->state == ST_IDLE ? 0 : less_os(p, now);
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
  STORE_RLX(&p->since, since_at(p, now));
}

/* The code running goes on, its span updated to now (no state change). */
static inline void advance(struct pworker *p, uint64_t now) {
  if (p->state != ST_WORK) return;
  uint64_t d = less_os(p, now);
  add(&p->time[C_WORK], d);
  p->span = span_plus(p->span, d);
  if (p->span > p->span_max) STORE_RLX(&p->span_max, p->span);
  STORE_RLX(&p->since, since_at(p, now));
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
  STORE_RLX(&p->since, since_at(p, now));
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

/* ---- collapsing (invariant 5) ----------------------------------------------------------------
 * A fork's child whose subtrees at that place were small (work under
 * coll_ticks on average) runs collapsed: its forks are quiet (hooks.h,
 * invariant 4), nothing is read or recorded inside it, and when it
 * returns its work is the time it took and its span that work times the
 * span / work of the subtrees of that place that were recorded whole (one
 * in SAMPLE_EVERY, and the first two). */
static uint64_t coll_ticks; /* 0: never collapse */

static inline float ewma(float avg, float x, unsigned n) { return n <= 1 ? x : avg + (x - avg) / 8; }

/* The entry of the subtrees forked at rec's place: found, or (make) made
 * afresh in place of whatever was there; NULL without a table. */
static struct ckey *key_of(struct pworker *p, const struct ito_rec *rec, bool make) {
  if (!p->keys) return NULL;
  uintptr_t site = (uintptr_t)rec->regs[REC_PC], a = (uintptr_t)rec;
  const fiber *f = rec->fiber;
  uint32_t depth = f && (uintptr_t)f->lo <= a && a < (uintptr_t)f->hi
                       ? (uint32_t)(((uintptr_t)f->hi - a) >> 4) & 0x7fffffffu
                       : (uint32_t)((a >> 4) & 0xfffffu) | 0x80000000u;
  uint64_t h = ((uint64_t)site * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)depth * 0xC2B2AE3D27D4EB4Full);
  struct ckey *k = &p->keys[(h >> 40) & (NKEYS - 1)];
  if (k->site == site && k->depth == depth) return k;
  if (!make) return NULL;
  memset(k, 0, sizeof *k);
  k->site = site;
  k->depth = depth;
  return k;
}

/* A subtree of k's place was measured: work d (ticks) and q forks; whole:
 * recorded whole, with its span's ticks and forks. */
static void key_learn(struct ckey *k, uint64_t d, uint64_t q, bool whole, uint64_t sticks,
                      uint64_t sforks) {
  if (k->n < 0xffff) k->n++;
  k->work = ewma(k->work, (float)d, k->n);
  k->forks = ewma(k->forks, (float)q, k->n);
  if (!whole || !d) return;
  if (k->nexact < 0xffff) k->nexact++;
  float r = (float)sticks / (float)d;
  k->rho = ewma(k->rho, r > 1 ? 1 : r, k->nexact);
  k->pforks = ewma(k->pforks, (float)sforks, k->nexact);
  k->since = 0;
}

static inline worker *worker_of(int wid) { return ito__workers[wid]; }

/* The child of the fork of rec, which the worker reported at now with
 * span p->span, runs collapsed. */
static void coll_begin(struct pworker *p, int wid, struct ckey *k, const void *rec, uint64_t i,
                       uint64_t now) {
  uint64_t budget = (uint64_t)(8 * k->forks) + 64;
  if (budget > BUDGET_MAX) budget = BUDGET_MAX;
  p->coll_on = 1;
  p->coll_rec = (uintptr_t)rec;
  p->coll_i0 = i;
  p->coll_key = k;
  p->coll_budget = (uint32_t)budget;
  STORE_RLX(&p->coll_s0, p->span);
  STORE_RLX(&p->coll_t0, now);
  STORE_RLX(&p->coll_rho, (uint64_t)(k->rho * 65536.0f));
  STORE_RLX(&p->coll_cap, (uint64_t)(2 * k->work));
  p->ncoll++;
  k->since++;
  worker_of(wid)->hook_quiet = (int)budget + 1; /* budget quiet forks */
}

enum { END_WHOLE, END_SPENT, END_BROKEN };

/* The collapsed subtree ends at now: returned (END_WHOLE), out of its
 * budget of quiet forks (END_SPENT: the next fork reports itself), or
 * left for the scheduler, an event of its own or a region's bound
 * (END_BROKEN). Its work is the time since it began, its span estimated. */
static void coll_end(struct pworker *p, int wid, uint64_t now, int how) {
  worker *w = worker_of(wid);
  uint64_t q = p->coll_budget + 1 - (uint64_t)(w->hook_quiet > 0 ? w->hook_quiet : 1);
  w->hook_quiet = 0;
  p->coll_on = 0;
  add(&p->n[N_SPAWN], q);
  add(&p->n[N_QUIET], q);
  add(&p->n[N_COLL], 1);
  uint64_t d = less_os(p, now);
  add(&p->time[C_WORK], d);
  struct ckey *k = p->coll_key;
  float frac = how == END_WHOLE || k->work <= 0 ? 1.0f : (float)d / k->work;
  if (frac > 1) frac = 1;
  uint64_t pf = (uint64_t)(k->pforks * frac + 0.5f), s0 = p->coll_s0;
  if (span_forks(s0) + pf > SPAN_KMAX) pf = SPAN_KMAX - span_forks(s0);
  p->span = span_plus(s0, (d * p->coll_rho) >> 16) + pf;
  if (p->span > p->span_max) STORE_RLX(&p->span_max, p->span);
  STORE_RLX(&p->since, since_at(p, now));
  /* The quiet forks it leaves in the deque (not one when it returned
   * whole) lie on the path from its root to here: each becomes a reported
   * fork whose span is the collapse's at its end, the most theirs can be;
   * a thief that read a quiet mark first estimates from coll_s0, which
   * the next collapse changes only after this. */
  if (how != END_WHOLE) {
    uint64_t tail = dq_tail(&w->dq), j = p->coll_i0 + 1;
    if (tail - j > p->mask) j = tail; /* (the root was taken: none of its forks is left) */
    for (; j < tail; j++) {
      uintptr_t *m = &p->mk[j & p->mask], v = LOAD_ACQ(m);
      if (!(v & 1)) continue;
      struct shadow *s = &p->sh[j & p->mask];
      s->span = span_fork(p->span);
      s->t = now;
      s->n0 = p->n[N_SPAWN];
      s->epoch = p->epoch - 1; /* (taken back quietly: never read as a fork's measure) */
      s->ncoll = p->ncoll;
      __atomic_compare_exchange_n(m, &v, v - 1, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
  }
  /* a subtree that outgrew its budget is larger than its key said: what
   * it ran so far counts, so that the key stops collapsing if that is
   * the rule rather than the exception */
  if (how == END_SPENT) key_learn(k, d, q, false, 0, 0);
}

/* Any event on a worker whose subtree collapses ends the collapse first. */
static __attribute__((noinline)) void coll_break(struct pworker *p, int wid, uint64_t now) {
  coll_end(p, wid, now, worker_of(wid)->hook_quiet == 1 ? END_SPENT : END_BROKEN);
}

/* Memory for the recorder's own tables: pages nobody touched cost nothing. */
static void *map_pages(size_t bytes) {
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  return m == MAP_FAILED ? NULL : m;
}

/* Worker wid's shadow of its deque and its marks, mapped once (invariant
 * 3), and its keys; the worker learns where the marks are at every start
 * (hooks.h, invariant 4). */
static void map_shadow(struct pworker *p, int wid) {
  worker *w = ito__workers[wid];
  if (!p->sh) {
    p->mask = dq_mask(&w->dq);
    p->sh = map_pages((p->mask + 1) * sizeof(struct shadow));
    p->mk = map_pages((p->mask + 1) * sizeof(uintptr_t));
    p->keys = map_pages(NKEYS * sizeof(struct ckey));
    if (!p->sh || !p->mk) p->sh = NULL; /* (then no fork is followed on this worker) */
  }
  w->hook_quiet = 0;
  if (p->mk) w->hook_mark = (intptr_t)((char *)p->mk - (char *)dq_slots(&w->dq));
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

/* *v = max(*v, x), by any worker at once. */
static void raise_to(int *v, int x) {
  int c = LOAD_RLX(v);
  while (x > c && !__atomic_compare_exchange_n(v, &c, x, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* Counted from now on (the workers of the start: at the start, idle). */
static void pw_count(struct pworker *p, int wid, uint64_t now, int state) {
  p->since = p->slice0 = p->idle0 = now;
  p->state = state;
  raise_to(&nused, wid + 1);
  STORE_RLX(&p->on, 1);
}

static void pw_first(struct pworker *p, int wid) {
  raise_to(&pw_hi, wid + 1);
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
  uint64_t i = e->aux & p->mask;
  struct shadow *s = &p->sh[i];
  s->span = span_fork(p->span);
  s->t = now;
  s->n0 = p->n[N_SPAWN];
  s->epoch = p->epoch;
  s->ncoll = p->ncoll;
  STORE_REL(&p->mk[i], (uintptr_t)e->rec);
  /* the child: recorded, recorded whole to measure its place, or collapsed */
  if (!coll_ticks || p->samp_on || p->state != ST_WORK) return;
  struct ckey *k = key_of(p, e->rec, true);
  if (!k || k->n < 2 || k->work >= (float)coll_ticks) return;
  if (k->nexact < 2 || k->since >= SAMPLE_EVERY) {
    p->samp_on = 1;
    p->samp_rec = (uintptr_t)e->rec;
    return;
  }
  coll_begin(p, wid, k, e->rec, i, now);
}

static void on_fork_back(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  if (p->coll_on) coll_end(p, e->worker, now, END_WHOLE); /* (the root's: record() broke others) */
  advance(p, now);
  fold((ito_tg_t *)e->obj, p->span);
  if (!e->rec || !p->sh) return; /* a child of its own ended (lazy.c, box_run) */
  uint64_t i = e->aux & p->mask;
  struct shadow *s = &p->sh[i];
  if (s->epoch == p->epoch && coll_ticks) { /* the child ran here, undisturbed: measured */
    struct ckey *k = key_of(p, e->rec, true);
    if (k) {
      uint64_t s0 = s->span - (span_forks(s->span) > 0), ch = p->span;
      key_learn(k, now - s->t, p->n[N_SPAWN] - s->n0, s->ncoll == p->ncoll,
                span_ticks(ch) - span_ticks(s0),
                span_forks(ch) > span_forks(s0) ? span_forks(ch) - span_forks(s0) : 0);
    }
  }
  if (p->samp_on && p->samp_rec == (uintptr_t)e->rec) p->samp_on = 0;
  p->span = s->span; /* the continuation goes on from the fork */
  STORE_RLX(&p->mk[i], 0);
}

static void on_fork_taken(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  advance(p, now);
  fold((ito_tg_t *)e->obj, p->span);
  enter(p, ST_RUNTIME, now);
  struct pworker *o = &pw[e->peer];
  if (!o->sh) return;
  /* the taker clears the mark once it read it; the owner's next fork at
   * this index must not overwrite it before (invariant 3) */
  uintptr_t *m = &o->mk[e->aux & o->mask];
  while ((LOAD_ACQ(m) & ~(uintptr_t)1) == (uintptr_t)e->rec) cpu_relax();
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
    uint64_t i = e->aux & o->mask;
    /* the owner marks it right after publishing (invariant 3) */
    uintptr_t m;
    while ((m = LOAD_ACQ(&o->mk[i])) != ent && m != ent + 1) cpu_relax();
    if (m == ent) {
      span = o->sh[i].span;
      ready = o->sh[i].t;
    } else {
      /* a quiet fork inside a collapsed subtree (invariant 5): the span
       * at its fork is estimated as the collapse's at this moment; when
       * it became ready is not known */
      uint64_t s0 = LOAD_RLX(&o->coll_s0), t0 = LOAD_RLX(&o->coll_t0);
      uint64_t rho = LOAD_RLX(&o->coll_rho), cap = LOAD_RLX(&o->coll_cap);
      /* (the owner may have been off its CPU for part of it: no more
       * than twice the subtrees' usual work counts) */
      uint64_t dt = now > t0 ? now - t0 : 0;
      span = span_fork(span_plus(s0, ((dt < cap ? dt : cap) * rho) >> 16));
    }
    STORE_REL(&o->mk[i], 0);
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

/* The events after which a fork's child did not run through undisturbed
 * on its worker (invariant 5). */
static const unsigned char disturbs[ITO_EV_KINDS] = {
    [ITO_EV_TAKE] = 1,  [ITO_EV_RUN] = 1,         [ITO_EV_LEAVE] = 1,       [ITO_EV_EXIT] = 1,
    [ITO_EV_IDLE] = 1,  [ITO_EV_CREATE_BACK] = 1, [ITO_EV_FORK_TAKEN] = 1, [ITO_EV_CREATE] = 1,
    [ITO_EV_PARK] = 1,  [ITO_EV_STEAL] = 1,
};

static void record(const struct ito_event *e, void *arg) {
  (void)arg;
  if (!LOAD_RLX(&recording)) return;
  int wid = e->worker;
  struct pworker *p = pw_of(wid);
  if (p && (unsigned)e->kind < ITO_EV_KINDS) {
    if (UNLIKELY(p->coll_on) &&
        !(e->kind == ITO_EV_FORK_BACK && (uintptr_t)e->rec == p->coll_rec))
      coll_break(p, wid, ticks());
    if (disturbs[e->kind]) {
      p->epoch++;
      p->samp_on = 0;
    }
  }
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

static double calibrate(void) {
  uint64_t now_t, now_ns;
  clock_pair(&now_t, &now_ns);
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
  if (w && (unsigned)w->id < ITO_MAX_WORKERS && LOAD_RLX(&recording)) {
    struct pworker *p = pw_of(w->id);
    /* a region's bound inside a collapsed subtree ends the collapse
     * there; the caller's code is counted up to now, less what the OS
     * took of it, as at any event (sums_now's guess of an open interval
     * would keep that time in the caller's span at one bound and not at
     * the other) */
    if (p->coll_on) coll_break(p, w->id, *now);
    if (LOAD_RLX(&p->on)) advance(p, *now);
  }
  sums_now(*now, w ? w->id : -1, s, span);
}

void ito__prof_run(struct prof_run *r) {
  memset(r, 0, sizeof *r);
  r->what = what;
  r->prefix = ito__cfg.profile_out ? ito__cfg.profile_out : "ito-profile";
  r->baseline = ito__cfg.profile_baseline;
  r->number = runs;
  r->workers = nworkers;
  r->sec_per_tick = calibrate();
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
  uint64_t a, an, b, bn;
  clock_pair(&a, &an);
  while (mono_ns() - an < 2000000ULL) {
  }
  clock_pair(&b, &bn);
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
  raise_to(&pw_hi, nworkers);
  for (int i = 0; i < pw_hi; i++) {
    struct pworker *p = &pw[i];
    struct shadow *sh = p->sh;
    uintptr_t *mk = p->mk;
    struct ckey *keys = p->keys;
    struct trec *buf = p->buf;
    uint64_t mask = p->mask;
    memset(p, 0, sizeof *p);
    p->sh = sh;
    p->mk = mk;
    p->keys = keys;
    p->mask = mask;
    p->buf = buf;
    if (keys) memset(keys, 0, NKEYS * sizeof *keys); /* each run learns its own places */
    if (i >= nworkers) continue;
    map_shadow(p, i);
    if ((what & (PROF_TRACE | PROF_DAG)) && !p->buf)
      p->buf = map_pages(TRACE_CAP * sizeof(struct trec));
  }
  ito__prof_regions_reset();
  blocked_now = 0;
  coll_ticks = (uint64_t)((double)ito__cfg.profile_collapse * 1e-9 / sec_per_tick);
  ito__nodeq_counts(placed0);
  nused = 0;
  long_ticks = (uint64_t)(LONG_NS * 1e-9 / sec_per_tick);
  resync_ticks = (uint64_t)(RESYNC_NS * 1e-9 / sec_per_tick);
  call_ticks = (uint64_t)(CALL_NS * 1e-9 / sec_per_tick);
  clock_pair(&t0_ticks, &t0_ns);
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
  ito__prof_run(&r);
  r.all = s;
  int nt = 0;
  int n = LOAD_RLX(&nused);
  struct prof_track *tracks = calloc((size_t)(n > 0 ? n : 1), sizeof *tracks);
  if (!tracks) {
    static const char msg[] = "ito: ITO_PROFILE: no memory to write the profile\n";
    ito__write_stderr(msg, sizeof msg - 1);
    return;
  }
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
  free(tracks);
}
