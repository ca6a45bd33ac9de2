/* The profiler's recording: a recorder on the event hooks that follows
 * the critical path and splits the workers' time (invariants at the top
 * of profile.h; design in docs/profile.md). The clock and the time the
 * OS took are profile_clock.c's, the collapsed subtrees
 * profile_collapse.c's (their shared state: profile_rec.h), the tagged
 * regions profile_regions.c's, the outputs profile_out.c's. */
#define _GNU_SOURCE
#include "profile.h"

#include "config.h"
#include "fiber.h"
#include "hooks.h"
#include "nodeq.h"
#include "observe.h"
#include "os.h"
#include "profile_data.h"
#include "profile_rec.h"
#include "runtime.h"
#include "sched.h"
#include "worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- state ------------------------------------------------------------------------------ */

static struct pworker *pw; /* [ITO_MAX_WORKERS], mapped at the first start */
static int what;           /* PROF_*: 0 while not recording */
static int recording;      /* (read by ito_profile_*) */
static int attached;
static int runs;
static int nworkers;
static int blocked_now;            /* threads parked in a blocking wait */
static uint64_t placed0[NQ_KINDS]; /* the placement's counts at the start */
static int nused;                  /* 1 + the highest worker id that recorded this run */
static int pw_hi;                  /* 1 + the highest worker id whose state was ever set up */

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
    trace(p,
          p->state == ST_WORK   ? TR_WORK
          : p->state == ST_IDLE ? TR_IDLE
                                : TR_RUNTIME,
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
  uint64_t total = now > p->idle0 ? now - p->idle0 : 0;
  /* a worker that slept was off the CPU by its own choice: none of it is
   * charged to the next interval */
  if (total >= ito__prof_long_ticks && p->mine) ito__prof_reading(p, now);
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
  uintptr_t *m = &tg->span_word;
  uintptr_t cur = __atomic_load_n(m, __ATOMIC_RELAXED);
  while (cur < span &&
         !__atomic_compare_exchange_n(m, &cur, span, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

/* 0: never collapse; else a child whose subtrees at its place averaged
 * less work runs collapsed (profile_collapse.c) */
static uint64_t coll_ticks;

/* Memory for the recorder's own tables: pages nobody touched cost nothing. */
static void *map_pages(size_t bytes) {
  void *m =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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
  /* the pages the first forks write, the slots from the deque's tail on,
   * and the table of places: touched now (no fork is in flight), not at a
   * fork, where a page fault (a fraction of a millisecond on a loaded
   * machine) would lie in the program's strand and on its path */
  if (p->keys) memset(p->keys, 0, NKEYS * sizeof *p->keys);
  if (p->sh) {
    uint64_t t = dq_tail(&w->dq);
    for (uint64_t j = 0; j < PRETOUCH; j += 4096 / sizeof(struct shadow))
      memset(&p->sh[(t + j) & p->mask], 0, sizeof(struct shadow));
    for (uint64_t j = 0; j < PRETOUCH; j += 4096 / sizeof(uintptr_t))
      STORE_RLX(&p->mk[(t + j) & p->mask], 0);
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
  p->slice0 = p->idle0 = now;
  STORE_RLX(&p->since, now); /* (an extra worker's: read by sums_now meanwhile) */
  STORE_RLX(&p->state, state);
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
  ito__prof_reading(p, now);
  p->mine = 1;
}

/* ---- events ---------------------------------------------------------------------------------- */

static void on_fork(struct pworker *p, int wid, const struct ito_event *e) {
  add(&p->n[N_SPAWN], 1);
  if (!e->rec || !p->sh) return; /* a task's spawn, or a child of its own: CREATE follows */
  uint64_t now = ticks();
  advance(p, now);
  uint64_t i = e->aux & p->mask;
  struct shadow *s = &p->sh[i];
  s->span = span_fork(p->span);
  s->t = now;
  s->w0 = p->time[C_WORK];
  s->n0 = p->n[N_SPAWN];
  s->epoch = p->epoch;
  s->ncoll = p->ncoll;
  STORE_REL(&p->mk[i], (uintptr_t)e->rec);
  /* the child: recorded, recorded whole to measure its place, or collapsed */
  if (!coll_ticks || p->samp_on || p->state != ST_WORK) return;
  struct ckey *k = ito__prof_key_of(p, e->rec, true);
  if (!k || k->n < 2 || k->work >= (float)coll_ticks) return;
  if (k->nexact < 2 || k->since >= SAMPLE_EVERY) {
    p->samp_on = 1;
    p->samp_rec = (uintptr_t)e->rec;
    return;
  }
  ito__prof_coll_begin(p, wid, k, e->rec, i, now);
}

static void on_fork_back(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  /* (the root's: record() broke others) */
  if (p->coll_on) ito__prof_coll_end(p, e->worker, now, END_WHOLE);
  advance(p, now);
  fold((ito_tg_t *)e->obj, p->span);
  if (!e->rec || !p->sh) return; /* a child of its own ended (lazy.c, box_run) */
  uint64_t i = e->aux & p->mask;
  struct shadow *s = &p->sh[i];
  if (s->epoch == p->epoch && coll_ticks) { /* the child ran here, undisturbed: measured */
    struct ckey *k = ito__prof_key_of(p, e->rec, true);
    if (k) {
      /* its work, not its wall time: what the OS took of it is neither
       * in its work nor on its path, and its span / work is a ratio of
       * two times on the CPU (invariant 5) */
      uint64_t s0 = s->span - (span_forks(s->span) > 0), ch = p->span;
      ito__prof_key_learn(k, p->time[C_WORK] - s->w0, p->n[N_SPAWN] - s->n0, s->ncoll == p->ncoll,
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

/* A steal took what will run next, ready since `ready`: the thief's idle
 * period ends here, and the way to the run is the runtime's (an interval
 * checked for what the OS took, which idle time is not), the steal's cost
 * measured from now. (The wait for the owner's mark, the recorder's own,
 * stays before: a preempted owner would make it a time slice.) */
static void steal_taken(struct pworker *p, uint64_t ready) {
  uint64_t now = ticks();
  if (p->state == ST_IDLE) idle_end(p, now, ready);
  enter(p, ST_RUNTIME, now);
  p->take_t = p->since; /* (after a reading taken now, if any) */
  p->take_os = p->time[C_OS];
}

/* A fork record taken from worker o's deque: its continuation's span at
 * the fork, and when it became ready, from o's shadow (invariant 3). */
static uint64_t take_record(struct pworker *o, const struct ito_event *e, fiber *f, uint64_t now) {
  uintptr_t ent = (uintptr_t)e->rec;
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
  return ready;
}

static void on_take(struct pworker *p, int wid, const struct ito_event *e) {
  uintptr_t ent = (uintptr_t)e->rec;
  fiber *f = (fiber *)e->obj;
  p->take_from = (uint64_t)e->peer;
  p->took_steal = e->peer != wid;
  uint64_t ready;
  if ((ent & ENT_TAGS) == ENT_CREATE) {
    p->take_span = f->prof_s0;
    ready = p->take_ready = f->prof_ct;
  } else if (ent & ENT_TAGS) {
    ready = f->prof_ready; /* a fiber: it carries its own */
  } else {
    ready = take_record(&pw[e->peer], e, f, ticks());
  }
  if (p->took_steal) steal_taken(p, ready);
}

static void on_run(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  fiber *f = (fiber *)e->obj;
  bool creator = e->peer == 1;
  uint64_t ready = creator ? p->take_ready : f->prof_ready;
  if (p->state == ST_IDLE) idle_end(p, now, ready);
  enter(p, ST_WORK, now);
  resync(p, now);
  p->span = creator ? p->take_span : f->prof_span;
  if (p->took_steal) {
    /* the thief's time from the take to the run, less what the OS took
     * of it (a preempted thief would charge every fork of the run with
     * a time slice) */
    uint64_t os = p->time[C_OS] - p->take_os, wall = now > p->take_t ? now - p->take_t : 0;
    add(&p->steal_cost, wall > os ? wall - os : 0);
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
    /* from the wake-up, or from when this worker last left its sleep:
     * a sleeper's way back to a CPU is the idle policy's and the OS's
     * (counted as sleeps and wakes), and on a loaded machine a time slice */
    uint64_t from = f->prof_ready > p->woke_t ? f->prof_ready : p->woke_t;
    add(&p->sync_cost, now > from ? now - from : 0);
    add(&p->sync_n, 1);
  }
  if (fl & PF_BLOCKED) {
    __atomic_sub_fetch(&blocked_now, 1, __ATOMIC_RELAXED);
    if (f->thread) trace(p, TR_RESUME, now, now, (int)f->thread->idx, 0);
    if (fl >> PF_WAKER_SHIFT)
      trace(p, TR_WAKE, f->prof_ready, now, (int)(fl >> PF_WAKER_SHIFT) - 1, 0);
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
    case ACT_ABANDON:
      return;
    case ACT_BLOCK:
      if (f->w.parking) { /* a thread join (thread.c, join_wait): not a blocking wait */
        f->prof_flags = PF_JOINWAIT;
        break;
      }
      f->prof_flags = PF_BLOCKED;
      __atomic_add_fetch(&blocked_now, 1, __ATOMIC_RELAXED);
      if (f->thread) trace(p, TR_PARK, now, now, (int)f->thread->idx, 0);
      break;
    case ACT_JOIN_WAIT:
      f->prof_flags = PF_JOINWAIT;
      break;
    default:
      f->prof_flags = 0;
      break;
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
                            : __atomic_load_n(&((ito_tg_t *)e->obj)->span_word, __ATOMIC_RELAXED);
  if (x <= p->span) return; /* the path through the join is longer already */
  uint64_t now = ticks();
  advance(p, now);
  if (x > p->span) {
    p->span = x;
    if (x > p->span_max) STORE_RLX(&p->span_max, x);
  }
}

static void on_idle(struct pworker *p) {
  p->took_steal = 0; /* (what it took went to another worker) */
  if (p->state == ST_IDLE) return;
  uint64_t now = ticks();
  enter(p, ST_IDLE, now);
  resync(p, now);
  p->idle0 = since_at(p, now);
  p->idle_blocked = LOAD_RLX(&blocked_now) > 0;
}

/* The worker waits for a thief that holds its deque's steal lock (deque.c),
 * as its own fork's child returned, or in the scheduler: the wait is the
 * runtime's time (a thief that the OS took off its CPU holding the lock
 * keeps the worker spinning for as long), and the code that waited goes
 * on after it with the span it had. */
static void on_wait_thief(struct pworker *p, const struct ito_event *e) {
  uint64_t now = ticks();
  if (e->peer == 0) {
    p->wait_from = p->state;
    if (p->state == ST_WORK) enter(p, ST_RUNTIME, now);
  } else if (p->wait_from == ST_WORK && p->state == ST_RUNTIME) {
    enter(p, ST_WORK, now);
  }
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
    [ITO_EV_TAKE] = 1, [ITO_EV_RUN] = 1,         [ITO_EV_LEAVE] = 1,      [ITO_EV_EXIT] = 1,
    [ITO_EV_IDLE] = 1, [ITO_EV_CREATE_BACK] = 1, [ITO_EV_FORK_TAKEN] = 1, [ITO_EV_CREATE] = 1,
    [ITO_EV_PARK] = 1, [ITO_EV_STEAL] = 1,
};

static void record(const struct ito_event *e, void *arg) {
  (void)arg;
  if (!LOAD_RLX(&recording)) return;
  int wid = e->worker;
  struct pworker *p = pw_of(wid);
  if (p && (unsigned)e->kind < ITO_EV_KINDS) {
    if (UNLIKELY(p->coll_on) && !(e->kind == ITO_EV_FORK_BACK && (uintptr_t)e->rec == p->coll_rec))
      ito__prof_coll_break(p, wid, ticks());
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
  if (e->kind == ITO_EV_WAKE) p->woke_t = ticks(); /* (counted below) */
  switch (e->kind) {
    case ITO_EV_SPAWN:
      on_fork(p, wid, e);
      return;
    case ITO_EV_FORK_BACK:
      on_fork_back(p, e);
      return;
    case ITO_EV_FORK_TAKEN:
      on_fork_taken(p, e);
      return;
    case ITO_EV_TAKE:
      on_take(p, wid, e);
      return;
    case ITO_EV_RUN:
      on_run(p, e);
      return;
    case ITO_EV_LEAVE:
      on_leave(p, e);
      return;
    case ITO_EV_EXIT:
      on_thread_exit(p, e);
      return;
    case ITO_EV_CREATE_BACK:
      on_create_back(p, e);
      return;
    case ITO_EV_JOIN:
      on_join(p, e);
      return;
    case ITO_EV_IDLE:
      on_idle(p);
      return;
    case ITO_EV_WAIT_THIEF:
      on_wait_thief(p, e);
      return;
    default:
      if (counter_of[e->kind]) add(&p->n[counter_of[e->kind] - 1], 1);
  }
}

/* ---- figures --------------------------------------------------------------------------------- */

/* The figures so far, at now, read from every worker without stopping
 * them: each one's closed intervals, plus for the caller's worker
 * (wid, or -1) the open one. Another worker's open interval is added as
 * the state it is in says. */
static void sums_now(uint64_t now, int wid, struct prof_sums *s, uint64_t *caller_span) {
  memset(s, 0, sizeof *s);
  s->elapsed = now - ito__prof_t0;
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
    /* another worker's open interval: what the OS took of it is known only
     * when it closes, on that worker's thread, so no more of it counts now
     * than of an interval never checked (a strand preempted for long
     * counted as work at a region's begin and as off the CPU by its end
     * left the region with no work at all) */
    if (i != wid && st != ST_IDLE && d > ito__prof_long_ticks) d = ito__prof_long_ticks;
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
    if (p->coll_on) ito__prof_coll_break(p, w->id, *now);
    if (LOAD_RLX(&p->on)) advance(p, *now);
  }
  sums_now(*now, w ? w->id : -1, s, span);
}

void ito__prof_run(struct prof_run *r) {
  memset(r, 0, sizeof *r);
  r->what = what;
  r->prefix = ito__prof_cfg.out;
  r->baseline = ito__prof_cfg.baseline;
  r->number = runs;
  /* P: the workers of the start, and any extra worker the monitor started
   * beside a blocked one (counted from its first event) */
  r->workers = nworkers;
  int n = LOAD_RLX(&nused), on = 0;
  for (int i = 0; i < n; i++) on += LOAD_RLX(&pw[i].on) != 0;
  if (on > r->workers) r->workers = on;
  r->sec_per_tick = ito__prof_calibrate();
  r->t_start = ito__prof_t0;
  r->burden = burden_ticks();
  ito__prof_regions(&r->regions, &r->nregions);
}

/* ---- start and stop -------------------------------------------------------------------------- */

static void stop(bool stopped);

/* At exit with the runtime still running: the workers may be recording
 * still, so their buffers are read as they are, not closed. */
static void at_exit(void) {
  if (LOAD_RLX(&recording)) stop(false);
}

static void profile_start(void) {
  if (!ito__prof_cfg.what) return;
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
  }
  runs++;
  what = ito__prof_cfg.what;
  nworkers = (int)ito__cfg.workers;
  const char *prefix = ito__prof_cfg.out;
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
  ito__nodeq_counts(placed0);
  nused = 0;
  ito__prof_clock_start();
  coll_ticks = (uint64_t)((double)ito__prof_cfg.collapse_ns * 1e-9 / ito__prof_sec_per_tick);
  /* the workers of this start count from now, idle until their first
   * event (the main thread's worker works from profile_running) */
  for (int i = 0; i < nworkers; i++) {
    pw_count(&pw[i], i, ito__prof_t0, ST_IDLE);
    pw[i].idle_blocked = 0;
  }
  STORE_REL(&recording, 1);
}

static void profile_running(void) {
  /* the main thread, adopted as worker 0's first thread, runs the
   * program's code from now on */
  if (!LOAD_RLX(&recording) || (int)gettid() != (int)getpid()) return;
  struct pworker *p = pw_of(0);
  uint64_t now = ticks();
  if (p->state == ST_IDLE) idle_end(p, now, 0); /* (counted from the start: runtime code) */
  enter(p, ST_WORK, now);
}

static void profile_stop(void) { stop(true); }

ITO_OBSERVE(profile_at_setup, OBSERVE_SETUP, OBS_PROFILE, profile_start);
ITO_OBSERVE(profile_at_running, OBSERVE_RUNNING, OBS_PROFILE, profile_running);
ITO_OBSERVE(profile_at_stopped, OBSERVE_STOPPED, OBS_PROFILE, profile_stop);

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
