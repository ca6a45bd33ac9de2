/* The profiler's collapsed subtrees (profile.h, invariant 5;
 * docs/profile.md, "Collapsing"): what the recorder learns of the
 * subtrees forked at each place, and a collapsed subtree's beginning and
 * end, its work measured and its span estimated. */
#define _GNU_SOURCE
#include "profile_rec.h"

#include "deque.h"
#include "sched.h"

#include <string.h>

/* ---- collapsing (invariant 5) ----------------------------------------------------------------
 * A fork's child whose subtrees at that place were small (work under
 * ITO_PROFILE_COLLAPSE on average, profile.c decides) runs collapsed: its forks are quiet (hooks.h,
 * invariant 4), nothing is read or recorded inside it, and when it
 * returns its work is the time it took and its span that work times the
 * span / work of the subtrees of that place that were recorded whole (one
 * in SAMPLE_EVERY, and the first two). */
static inline float ewma(float avg, float x, unsigned n) {
  return n <= 1 ? x : avg + (x - avg) / 8;
}

/* The entry of the subtrees forked at rec's place: found, or (make) made
 * afresh in place of whatever was there; NULL without a table. */
struct ckey *ito__prof_key_of(struct pworker *p, const struct ito_rec *rec, bool make) {
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
void ito__prof_key_learn(struct ckey *k, uint64_t d, uint64_t q, bool whole, uint64_t sticks,
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
void ito__prof_coll_begin(struct pworker *p, int wid, struct ckey *k, const void *rec, uint64_t i,
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

/* The collapsed subtree ends at now: returned (END_WHOLE), out of its
 * budget of quiet forks (END_SPENT: the next fork reports itself), or
 * left for the scheduler, an event of its own or a region's bound
 * (END_BROKEN). Its work is the time since it began, its span estimated. */
void ito__prof_coll_end(struct pworker *p, int wid, uint64_t now, int how) {
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
      s->w0 = p->time[C_WORK];
      s->n0 = p->n[N_SPAWN];
      s->epoch = p->epoch - 1; /* (taken back quietly: never read as a fork's measure) */
      s->ncoll = p->ncoll;
      __atomic_compare_exchange_n(m, &v, v - 1, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
    }
  }
  /* a subtree that outgrew its budget is larger than its key said: what
   * it ran so far counts, so that the key stops collapsing if that is
   * the rule rather than the exception */
  if (how == END_SPENT) ito__prof_key_learn(k, d, q, false, 0, 0);
}

/* Any event on a worker whose subtree collapses ends the collapse first. */
void ito__prof_coll_break(struct pworker *p, int wid, uint64_t now) {
  ito__prof_coll_end(p, wid, now, worker_of(wid)->hook_quiet == 1 ? END_SPENT : END_BROKEN);
}
