/* The profiler's recorder, shared by its files (profile.h's invariants;
 * design in docs/profile.md): a worker's recording state, the clock, and
 * the split of an interval into time on and off the CPU
 * (profile_clock.c), the collapsed subtrees (profile_collapse.c); the
 * events are profile.c's. Only these files include it. */
#ifndef ITO_CORE_PROFILE_REC_H
#define ITO_CORE_PROFILE_REC_H

#include "base.h"
#include "profile_data.h"
#include "record.h"
#include "worker.h"

#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* ---- state ------------------------------------------------------------------------------ */

/* A reported fork record's span and publication time, for whoever takes
 * it (invariant 3), and what its child's return compares to tell whether
 * the child ran through undisturbed (invariant 5). Whether it is live is
 * the mark array's: the record there, or the record + 1 for a quiet fork
 * (hooks.h, invariant 4), else 0. */
struct shadow {
  uint64_t span;
  uint64_t t;
  uint64_t w0;    /* the worker's work (ticks on its CPU) at the fork */
  uint64_t n0;    /* the worker's spawns at the fork */
  uint32_t epoch; /* the worker's scheduler events at the fork */
  uint32_t ncoll; /* the worker's collapses begun at the fork */
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
#define NKEYS 1024    /* per worker, direct-mapped */
#define PRETOUCH 4096 /* deque slots whose shadow is touched at start */
#define SAMPLE_EVERY 128
#define BUDGET_MAX (1 << 20)

enum { ST_RUNTIME = 0, ST_WORK, ST_IDLE };
/* prof_flags of a fiber */
enum { PF_BLOCKED = 1, PF_JOINWAIT = 2, PF_WOKEN = 4, PF_WAKER_SHIFT = 8 };

#define TRACE_CAP (1u << 16) /* records per worker */

struct pworker {
  /* the owner's (others read the fields marked shared, relaxed) */
  uint64_t span;       /* the running context's span at `since` (packed) */
  uint64_t since;      /* start of the interval the worker is in (shared) */
  int state;           /* ST_* (shared) */
  int on;              /* recorded anything this run (shared) */
  uint64_t slice0;     /* start of the trace slice it is in */
  uint64_t idle0;      /* the idle period's start */
  int idle_blocked;    /* a thread was blocked when it began */
  int wait_from;       /* the state it was in when it began to wait for a thief */
  uint64_t span_max;   /* (shared) */
  uint64_t time[NCAT]; /* (shared) */
  uint64_t n[NCOUNT];  /* (shared) */
  /* what the last take handed to the next run */
  uint64_t take_span, take_ready, take_t, take_from, take_os;
  int took_steal;
  uint64_t woke_t;                                 /* when it last left its sleep (ITO_EV_WAKE) */
  uint64_t steal_cost, steal_n, sync_cost, sync_n; /* (shared) */
  struct shadow *sh;
  uintptr_t *mk; /* the marks (hooks.h, invariant 4), one per deque slot */
  uint64_t mask;
  /* collapsing (invariant 5) */
  struct ckey *keys;
  uint32_t epoch;               /* scheduler events on this worker */
  uint32_t ncoll;               /* collapses begun */
  int coll_on;                  /* a subtree collapses now */
  int samp_on;                  /* a subtree is recorded whole to measure its key */
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
  int mine;         /* its OS thread has taken its first reading */
  uint64_t ss_cpu;  /* the thread's time on a CPU (ns) when last read */
  uint64_t ss_t;    /* when (ticks) */
  uint64_t skip_to; /* the end of the last reading (ticks) */
} __attribute__((aligned(CACHELINE)));

/* ---- the clock (profile_clock.c) ------------------------------------------------------------ */

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

/* Seconds a tick, as measured over the first 2 ms (the recording's); the
 * run's origin in ticks; intervals from long_ticks on are checked for time
 * off the CPU, and a reading older than resync_ticks is renewed. */
extern double ito__prof_sec_per_tick HIDDEN;
extern uint64_t ito__prof_t0 HIDDEN;
extern uint64_t ito__prof_long_ticks HIDDEN, ito__prof_resync_ticks HIDDEN;
/* At each start: the rate (the first start measures it), the thresholds,
 * the origin. */
HIDDEN void ito__prof_clock_start(void);
/* The rate measured over the whole run so far (the outputs'). */
HIDDEN double ito__prof_calibrate(void);
/* A reading of the calling thread's CPU clock at now (p is its worker's):
 * the call's own time is the runtime's, what the OS took at its return
 * is off the CPU, and the next interval starts after it (since_at). */
HIDDEN void ito__prof_reading(struct pworker *p, uint64_t now);
/* d ticks of an interval that ends now, less what the OS took of them. */
HIDDEN uint64_t ito__prof_less_os_slow(struct pworker *p, uint64_t now, uint64_t d);

static inline void add(uint64_t *x, uint64_t v) { STORE_RLX(x, *x + v); }

/* The ticks of the interval from p->since to now, less what the OS took
 * (none when a reading taken at this now moved p->since past it). An old
 * reading is renewed at the end of a short interval too. */
static inline uint64_t less_os(struct pworker *p, uint64_t now) {
  uint64_t d = now > p->since ? now - p->since : 0;
  if (UNLIKELY(d >= ito__prof_long_ticks)) return ito__prof_less_os_slow(p, now, d);
  if (UNLIKELY(now > p->ss_t + ito__prof_resync_ticks) && p->mine) ito__prof_reading(p, now);
  return d;
}

/* Where the next interval starts: now, or after a reading taken now. */
static inline uint64_t since_at(const struct pworker *p, uint64_t now) {
  return p->skip_to > now ? p->skip_to : now;
}

/* The time off the CPU since the last reading is dropped when it is old;
 * the interval that began at now begins after the reading. */
static inline void resync(struct pworker *p, uint64_t now) {
  if (UNLIKELY(now > p->ss_t + ito__prof_resync_ticks) && p->mine) {
    ito__prof_reading(p, now);
    STORE_RLX(&p->since, since_at(p, now));
  }
}

static inline uint64_t span_plus(uint64_t s, uint64_t dticks) { return s + (dticks << SPAN_KBITS); }
static inline uint64_t span_fork(uint64_t s) { return span_forks(s) < SPAN_KMAX ? s + 1 : s; }

/* ---- collapsing (profile_collapse.c) ------------------------------------------------------- */

enum { END_WHOLE, END_SPENT, END_BROKEN };
/* The entry of the subtrees forked at rec's place: found, or (make) made
 * afresh in place of whatever was there; NULL without a table. */
HIDDEN struct ckey *ito__prof_key_of(struct pworker *p, const struct ito_rec *rec, bool make);
/* A subtree of k's place was measured: work d (ticks on the CPU) and q
 * forks; whole: recorded whole, with its span's ticks and forks. */
HIDDEN void ito__prof_key_learn(struct ckey *k, uint64_t d, uint64_t q, bool whole, uint64_t sticks,
                                uint64_t sforks);
/* The child of the fork of rec (deque index i), which worker wid reported
 * at now with span p->span, runs collapsed. */
HIDDEN void ito__prof_coll_begin(struct pworker *p, int wid, struct ckey *k, const void *rec,
                                 uint64_t i, uint64_t now);
/* The collapsed subtree ends at now (END_*). */
HIDDEN void ito__prof_coll_end(struct pworker *p, int wid, uint64_t now, int how);
/* Any event on a worker whose subtree collapses ends the collapse first. */
HIDDEN void ito__prof_coll_break(struct pworker *p, int wid, uint64_t now);

#endif
