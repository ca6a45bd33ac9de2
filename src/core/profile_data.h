/* What the profiler's recording (profile.c) hands its outputs
 * (profile_out.c): the figures of a run or a region, and the per-worker
 * trace records. Design: docs/profile.md. */
#ifndef ITO_CORE_PROFILE_DATA_H
#define ITO_CORE_PROFILE_DATA_H

#include <ito/ito.h>

#include "base.h"

/* ITO_PROFILE's words (a bit each). */
enum { PROF_SUMMARY = 1, PROF_CSV = 2, PROF_TRACE = 4, PROF_DAG = 8 };

/* The profiler's settings (its rows in profile.c), as of the last start. */
struct prof_settings {
  int what;             /* ITO_PROFILE: PROF_*, 0 off */
  const char *out;      /* ITO_PROFILE_OUT: the files' prefix */
  const char *baseline; /* ITO_PROFILE_BASELINE, or NULL */
  long collapse_ns;     /* ITO_PROFILE_COLLAPSE: 0 never */
};
extern struct prof_settings ito__prof_cfg HIDDEN;

/* A span packs the critical path's length in ticks above SPAN_KBITS and
 * the forks on it below (profile.h, invariant 2). */
#define SPAN_KBITS 16
#define SPAN_KMAX ((1ULL << SPAN_KBITS) - 1)
static inline uint64_t span_ticks(uint64_t s) { return s >> SPAN_KBITS; }
static inline uint64_t span_forks(uint64_t s) { return s & SPAN_KMAX; }

/* Worker time: the split of P x Tp (profile.h, invariant 4). */
enum { C_WORK, C_RUNTIME, C_IDLE, C_READY, C_BLOCKED, C_OS, NCAT };
/* Counts. */
/* N_LOCAL .. N_UNKNOWN: tasks started with data, by where they ran (the
 * placement's counts, nodeq.h, read rather than recorded) */
/* N_COLL, N_QUIET: collapsed subtrees and the forks inside them, whose
 * spans were estimated (profile.h, invariant 5) */
enum {
  N_SPAWN,
  N_STEAL,
  N_STEAL_FAIL,
  N_CREATE,
  N_PARK,
  N_SLEEP,
  N_WAKE,
  N_LOCAL,
  N_REMOTE,
  N_UNKNOWN,
  N_COLL,
  N_QUIET,
  NCOUNT
};

/* The figures in ticks, before they become seconds (struct ito_profile). */
struct prof_sums {
  uint64_t elapsed;
  uint64_t time[NCAT];
  uint64_t n[NCOUNT];
  uint64_t span; /* packed */
  uint64_t instances;
};

/* Trace records: a slice of a worker's time, or a flow from another
 * worker's time to this one (t0 there, t1 here). */
enum { TR_WORK = 1, TR_RUNTIME, TR_IDLE, TR_STEAL, TR_WAKE, TR_PARK, TR_RESUME };
struct trec {
  uint64_t t0, t1;
  int32_t type;
  int32_t a;  /* TR_STEAL, TR_WAKE: the other worker; TR_PARK, TR_RESUME: the thread */
  uint64_t b; /* TR_WORK: the span (packed) at its end */
};

/* One worker's records, for the outputs (after the run). */
struct prof_track {
  const struct trec *rec;
  uint32_t n;
  uint64_t dropped;
};

/* A tagged region's totals. */
#define PROF_TAGS 64
#define PROF_TAG_LEN 64
struct prof_region {
  char tag[PROF_TAG_LEN];
  struct prof_sums sum;
  uint64_t forks; /* forks on the regions' paths, for the burdened span */
};

/* What the outputs get. */
struct prof_run {
  int what;             /* PROF_* */
  const char *prefix;   /* ITO_PROFILE_OUT */
  const char *baseline; /* ITO_PROFILE_BASELINE, or NULL */
  int number;           /* 1 for the process's first run of the runtime, then 2, ... */
  int workers;          /* P */
  double sec_per_tick;
  uint64_t t_start;
  uint64_t burden; /* ticks charged per fork on a path (burdened span) */
  struct prof_sums all;
  const struct prof_region *regions;
  int nregions;
  const struct prof_track *tracks; /* [workers] */
};

/* ---- the recording's side (profile.c) ---- */
/* Recording now (ITO_PROFILE set and the runtime started). */
HIDDEN bool ito__prof_recording(void);
/* The run's figures now, and the span of the code the caller runs (0
 * outside the workers). */
HIDDEN void ito__prof_now(uint64_t *now, struct prof_sums *s, uint64_t *span);
/* What the outputs need of the run, as of now (the regions included). */
HIDDEN void ito__prof_run(struct prof_run *r);

/* ---- the regions (profile_regions.c) ---- */
HIDDEN void ito__prof_regions(const struct prof_region **r, int *n);
/* At each start: no region yet. */
HIDDEN void ito__prof_regions_reset(void);

/* ---- the outputs (profile_out.c) ---- */
/* Figures in seconds from sums in ticks. */
HIDDEN void ito__prof_figures(const struct prof_run *r, const struct prof_sums *s, uint64_t forks,
                              struct ito_profile *out);
/* Work-time stretch of tag's figures ("" the run's) against the
 * ITO_PROFILE_BASELINE run, when there is one. */
HIDDEN void ito__prof_stretch(const struct prof_run *r, const char *tag, struct ito_profile *p);
/* Writes what r->what asks for: the summary on stderr, the files under
 * r->prefix (a file that cannot be written: one line on stderr, and the
 * run goes on). */
HIDDEN void ito__prof_write(const struct prof_run *r);
/* Checks at start that the files of `what` under prefix can be written:
 * 0, or a line saying which cannot, on stderr (the profile then skips it). */
HIDDEN int ito__prof_check_out(int what, const char *prefix, int number);
/* The baseline's work for tag ("" the whole run), in seconds: < 0 when
 * there is none. */
HIDDEN double ito__prof_baseline_work(const char *file, const char *tag);

#endif
