/* The configuration: every ITO_* variable the runtime reads, parsed from
 * one table by one checked parser (config.c); the drop-in libraries
 * register rows of their own (ito__config_read), which the same parser
 * checks. A bad value stops the program with one line naming the variable,
 * the value and what is accepted, and exit status 2. README.md's table
 * lists every row; the config_readme test (tests/config_readme.sh) checks
 * that it does.
 *
 * Invariants:
 *  1. Every ITO_* variable of libito.so is a row of the core's table, and
 *     this module is the only code that reads one, through secure_getenv
 *     (a setuid process keeps every default). The core reads two other
 *     variables as their owners do: the loader's LD_PRELOAD (tls.c) and
 *     hwloc's HWLOC_* (numa.c).
 *  2. A value is taken only when the parser accepts all of it; a bad one
 *     never falls back to the default, it stops the program (exit 2).
 *  3. ito__cfg changes only in ito_init, before any worker starts; while
 *     the runtime runs the settings are read without locks. */
#ifndef ITO_CORE_CONFIG_H
#define ITO_CORE_CONFIG_H

#include "base.h"
#include "config_row.h"

enum { GUARD_AUTO = 0, GUARD_ALWAYS, GUARD_NEVER };
enum { FENCE_ASYMMETRIC = 0, FENCE_SYMMETRIC };
enum { WAIT_PASSIVE = 0, WAIT_ACTIVE };
enum { PIPE_NOWAIT_AUTO = 0, PIPE_NOWAIT_OFF };

#define ITO_MAX_WORKERS 8192 /* the highest ITO_WORKER_LIMIT: slots of the per-worker tables */
#define ITO_MIN_STACK (16UL << 10)
#define ITO_MAX_STACK (1UL << 30)
#define ITO_DEFAULT_STACK (128UL << 10)
#define ITO_DEFAULT_STACK_CACHE (40UL << 20) /* glibc's cache of thread stacks */

/* The runtime's settings, as of the last start. */
struct ito_settings {
  long workers;                 /* ITO_NUM_WORKERS (default: the usable CPUs) */
  size_t stack_size;            /* ITO_STACK_SIZE, rounded up to pages */
  int bind;                     /* ITO_BIND */
  int stack_guard;              /* ITO_STACK_GUARD: GUARD_* */
  size_t stack_cache;           /* ITO_STACK_CACHE: bytes of free stacks kept resident */
  int deque_fence;              /* ITO_DEQUE_FENCE: FENCE_* */
  int wait_policy;              /* ITO_WAIT_POLICY: WAIT_* */
  long spin_us;                 /* ITO_SPIN_US */
  int pipe_nowait;              /* ITO_IO_PIPE_NOWAIT: PIPE_NOWAIT_* */
  long extra_workers;           /* ITO_EXTRA_WORKERS: the monitor's cap */
  long worker_limit;            /* ITO_WORKER_LIMIT: workers in all, extra ones included */
  int tls_thread;               /* ITO_TLS: 1 thread, 0 worker */
  long preempt_ms;              /* ITO_PREEMPT_MS: the time slice of a program thread, 0 none */
  const char *places;           /* ITO_PLACES, or NULL (the environment's string; places.c) */
  int numa;                     /* ITO_NUMA: NUMA_* of numa.h */
  int numa_fake;                /* ITO_NUMA_FAKE: record nodes, bind nothing (a test aid) */
  int profile;                  /* ITO_PROFILE: PROF_* of profile_data.h, 0 off */
  const char *profile_out;      /* ITO_PROFILE_OUT, or NULL (the environment's string) */
  const char *profile_baseline; /* ITO_PROFILE_BASELINE, or NULL */
  long profile_collapse;        /* ITO_PROFILE_COLLAPSE: ns, 0 never */
};
extern struct ito_settings ito__cfg HIDDEN;

/* Reads the core's rows from the environment into ito__cfg (at each
 * start of the runtime). */
HIDDEN void ito__config_read_core(void);
/* Parses the variables of rows that are set (checking each), and keeps the
 * table for ito__config_each. A drop-in library calls it once, from its
 * constructor. */
HIDDEN void ito__config_read(const struct ito_cfg *rows, int n);
/* Every row of every table read so far, in order. */
HIDDEN void ito__config_each(void (*fn)(const struct ito_cfg *row, void *arg), void *arg);
/* The value a core row takes when its variable is not set, given by a
 * drop-in library before the runtime starts (OMP_STACKSIZE gives
 * ITO_STACK_SIZE's): checked like a value of the variable, but a bad one
 * names `from`. 0, or EINVAL for an unknown name. */
HIDDEN int ito__config_default(const char *name, const char *text, const char *from);
/* The default worker count of a drop-in library (at most the usable
 * CPUs); 0: the usable CPUs. */
HIDDEN void ito__config_default_workers(int n);
/* The value core row `name` has from the environment now (what the next
 * start reads: the variable, a library's default, or the built-in one),
 * as text: a number, a size in bytes, or the choice's word. 0, or EINVAL
 * for an unknown name. A bad value stops the program as at start. */
HIDDEN int ito__config_value(const char *name, char *out, size_t len);
/* The variable a core row's value came from, to name in a message about
 * it: the row's own when set, else the one a drop-in library's default
 * stands for (OMP_PLACES for ITO_PLACES under libito-omp.so). */
HIDDEN const char *ito__config_blame(const char *name);
/* One whole number at *p by the rule every numeric row follows: blanks,
 * an optional sign, decimal digits, blanks. Within [lo, hi] it is stored
 * in *out, *p moves past it and true is returned; else false. */
HIDDEN bool ito__config_number(const char **p, long long lo, long long hi, long long *out);
/* A bad value: the one-line message and exit status 2. */
HIDDEN void ito__config_error(const char *name, const char *value, const char *expected)
    __attribute__((noreturn));
/* The CPUs the process may use: the affinity mask, capped by a cgroup CPU
 * quota (v2 cpu.max, v1 cpu.cfs_quota_us). */
HIDDEN int ito__usable_cpus(void);

#endif
