/* The configuration: every ITO_* variable the runtime reads, parsed by one
 * checked parser (config.c) from the tables of the modules that own them.
 * A module of libito.so declares its rows and its settings with
 * ITO_CONFIG_MODULE; the drop-in libraries register rows of their own
 * (ito__config_read), which the same parser checks. A bad value stops the
 * program with one line naming the variable, the value and what is
 * accepted, and exit status 2. README.md's table lists every row; the
 * config_readme test (tests/config_readme.sh) checks that it does.
 *
 * Invariants:
 *  1. Every ITO_* variable of libito.so is a row of one module's table,
 *     and this module is the only code that reads one, through
 *     secure_getenv (a setuid process keeps every default). The core
 *     reads two other variables as their owners do: the loader's
 *     LD_PRELOAD (tls.c) and hwloc's HWLOC_* (numa.c).
 *  2. A value is taken only when the parser accepts all of it; a bad one
 *     never falls back to the default, it stops the program (exit 2).
 *  3. A module's settings change only in ito__config_read_modules, at each
 *     start of the runtime, before any worker starts; while the runtime
 *     runs they are read without locks.
 *  4. Every row of a module's table stores into that module's settings
 *     (its dst lies in [settings, settings + size)): the settings a row
 *     would have now are computed in a copy. */
#ifndef ITO_CORE_CONFIG_H
#define ITO_CORE_CONFIG_H

#include "base.h"
#include "config_row.h"

/* The words of a row that is 0 or 1. */
extern const struct ito_cfg_choice ito__cfg_bits[] HIDDEN;

/* A module's settings: its rows, whose destinations are fields of
 * *settings, the function that gives *settings its defaults (NULL: every
 * default is zero), and, when not NULL, the one that completes them once
 * the variables are read (rounding, values derived from others). */
struct ito_cfg_module {
  const struct ito_cfg *rows;
  int n;
  void *settings;
  size_t size;
  void (*defaults)(void *settings);
  void (*finish)(void *settings);
};

/* Declares module `id`'s table: table is an array of struct ito_cfg whose
 * dst are fields of `object`, the module's settings, in the ito_config
 * registry (base.h; docs/architecture.md, "Configuration"). */
#define ITO_CONFIG_MODULE(id, table, object, defaults_fn, finish_fn) \
  ITO_REGISTER(ito_config, struct ito_cfg_module, id,                \
               {                                                     \
                   .rows = table,                                    \
                   .n = (int)(sizeof(table) / sizeof((table)[0])),   \
                   .settings = &(object),                            \
                   .size = sizeof(object),                           \
                   .defaults = defaults_fn,                          \
                   .finish = finish_fn,                              \
               })

/* Reads every module's rows from the environment into its settings (at
 * each start of the runtime): its defaults, then each variable that is set
 * or the default a drop-in library gave. */
HIDDEN void ito__config_read_modules(void);
/* Parses the variables of rows that are set (checking each), and keeps the
 * table for ito__config_each. A drop-in library calls it once, from its
 * constructor. */
HIDDEN void ito__config_read(const struct ito_cfg *rows, int n);
/* Every row of every table read so far, in order. */
HIDDEN void ito__config_each(void (*fn)(const struct ito_cfg *row, void *arg), void *arg);
/* A core row is a row of a module of libito.so (ITO_CONFIG_MODULE).
 *
 * The value a core row takes when its variable is not set, given by a
 * drop-in library before the runtime starts (OMP_STACKSIZE gives
 * ITO_STACK_SIZE's): checked like a value of the variable, but a bad one
 * names `from`. 0, or EINVAL for an unknown name. */
HIDDEN int ito__config_default(const char *name, const char *text, const char *from);
/* The default worker count of a drop-in library (at most the usable
 * CPUs); 0: the usable CPUs. */
HIDDEN void ito__config_default_workers(int n);
/* The default number of workers: a drop-in library's when lower than the
 * usable CPUs, else the usable CPUs. */
HIDDEN int ito__config_workers(void);
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
