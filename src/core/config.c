/* The configuration table and its one checked parser (config.h). Every
 * ITO_* variable of libito.so is a row of core_rows below; the drop-in
 * libraries hand theirs to ito__config_read. Design: docs/architecture.md,
 * "Configuration". */
#define _GNU_SOURCE
#include "config.h"

#include "numa.h"
#include "places.h"

#include "os.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct ito_settings ito__cfg;

/* ---- the core's rows ------------------------------------------------------------- */

static const struct ito_cfg_choice guard_words[] = {
    {"auto", GUARD_AUTO}, {"always", GUARD_ALWAYS}, {"never", GUARD_NEVER}, {0, 0}};
static const struct ito_cfg_choice fence_words[] = {
    {"asymmetric", FENCE_ASYMMETRIC}, {"symmetric", FENCE_SYMMETRIC}, {0, 0}};
static const struct ito_cfg_choice wait_words[] = {
    {"passive", WAIT_PASSIVE}, {"active", WAIT_ACTIVE}, {0, 0}};
static const struct ito_cfg_choice bit_words[] = {{"0", 0}, {"1", 1}, {0, 0}};
static const struct ito_cfg_choice nowait_words[] = {
    {"auto", PIPE_NOWAIT_AUTO}, {"0", PIPE_NOWAIT_OFF}, {0, 0}};

static const struct ito_cfg_choice tls_words[] = {{"thread", 1}, {"worker", 0}, {0, 0}};

/* ITO_PROFILE: a comma list of summary, csv, trace and dag; 1 is summary,
 * 0 off. */
static const char *parse_profile(const char *text, void *dst) {
  static const char *const words[] = {"summary", "csv", "trace", "dag"};
  static const char expected[] =
      "0, 1, or a comma list of summary, csv, trace and dag (for example summary,trace)";
  int mask = 0;
  if (!strcmp(text, "0") || !strcmp(text, "1")) {
    *(int *)dst = text[0] == '1' ? 1 : 0;
    return NULL;
  }
  for (const char *p = text;;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    int k = -1;
    for (int i = 0; i < 4; i++)
      if (strlen(words[i]) == n && !strncasecmp(p, words[i], n)) k = i;
    if (k < 0) return expected;
    mask |= 1 << k;
    if (!end) break;
    p = end + 1;
  }
  *(int *)dst = mask;
  return NULL;
}

/* A file name prefix or a file: any text without a newline. */
static const char *parse_path(const char *text, void *dst) {
  if (strchr(text, '\n')) return "a path";
  *(const char **)dst = text;
  return NULL;
}

static const char *parse_places(const char *text, void *dst) {
  const char *why = ito__places_check(text);
  if (!why) *(const char **)dst = text;
  return why;
}

static const struct ito_cfg_choice numa_words[] = {
    {"auto", NUMA_AUTO}, {"on", NUMA_ON}, {"off", NUMA_OFF}, {0, 0}};

/* (a table: one row per variable, packed) */
/* clang-format off */
static const struct ito_cfg core_rows[] = {
    {.name = "ITO_PLACES", .kind = ITO_CFG_PARSE, .dst = &ito__cfg.places,
     .parse = parse_places, .dflt = "none",
     .what = "the places workers are bound to, in OpenMP's forms (cores, {0,1},{2,3}, ...)"},
    {.name = "ITO_NUMA", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.numa, .choices = numa_words,
     .dflt = "auto", .what = "NUMA nodes: auto (on with more than one), on, off"},
    {.name = "ITO_NUMA_FAKE", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.numa_fake,
     .choices = bit_words, .dflt = "0",
     .what = "1: ito_numa_alloc* record their nodes without binding memory (a test aid)"},
    {.name = "ITO_PROFILE", .kind = ITO_CFG_PARSE, .dst = &ito__cfg.profile,
     .parse = parse_profile, .dflt = "0",
     .what = "profile the run: summary, csv, trace, dag (a comma list); 1: summary"},
    {.name = "ITO_PROFILE_OUT", .kind = ITO_CFG_PARSE, .dst = &ito__cfg.profile_out,
     .parse = parse_path, .dflt = "ito-profile",
     .what = "the profile's files: PREFIX.csv, PREFIX.trace.json, PREFIX.dag.json"},
    {.name = "ITO_PROFILE_BASELINE", .kind = ITO_CFG_PARSE, .dst = &ito__cfg.profile_baseline,
     .parse = parse_path, .dflt = "none",
     .what = "a profile CSV of a 1-worker run: work-time stretch per region"},
    {.name = "ITO_PROFILE_COLLAPSE", .kind = ITO_CFG_INT, .dst = &ito__cfg.profile_collapse,
     .lo = 0, .hi = 10 * 1000 * 1000, .dflt = "1000",
     .what = "nanoseconds: the profiler collapses subtrees whose work at their place averaged "
             "less, their span estimated (0: never; every fork recorded)"},
    {.name = "ITO_NUM_WORKERS", .kind = ITO_CFG_INT, .dst = &ito__cfg.workers, .lo = 1,
     .hi = ITO_MAX_WORKERS, .dflt = "the usable CPUs",
     .what = "number of workers (the affinity mask's CPUs, capped by the cgroup CPU quota, by "
             "default)"},
    {.name = "ITO_STACK_SIZE", .kind = ITO_CFG_SIZE, .dst = &ito__cfg.stack_size,
     .lo = ITO_MIN_STACK, .hi = ITO_MAX_STACK, .dflt = "128K",
     .what = "stack size of a lightweight thread"},
    {.name = "ITO_BIND", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.bind, .choices = bit_words,
     .dflt = "0", .what = "1: pin worker i to the i-th allowed CPU"},
    {.name = "ITO_STACK_GUARD", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.stack_guard,
     .choices = guard_words, .dflt = "auto", .what = "a guard page below each thread stack"},
    {.name = "ITO_STACK_CACHE", .kind = ITO_CFG_SIZE, .dst = &ito__cfg.stack_cache, .lo = 0,
     .hi = (size_t)1 << 40, .dflt = "40M",
     .what = "bytes of free thread stacks kept in memory; beyond, freed stacks give their pages "
             "back"},
    {.name = "ITO_DEQUE_FENCE", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.deque_fence,
     .choices = fence_words, .dflt = "asymmetric",
     .what = "symmetric: a fence in every pop instead of membarrier on steals"},
    {.name = "ITO_WAIT_POLICY", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.wait_policy,
     .choices = wait_words, .dflt = "passive",
     .what = "active: idle workers never sleep"},
    {.name = "ITO_EXTRA_WORKERS", .kind = ITO_CFG_INT, .dst = &ito__cfg.extra_workers, .lo = 0,
     .hi = ITO_MAX_WORKERS - 1, .dflt = "256",
     .what = "the most extra workers the monitor runs beside workers blocked in calls ito cannot "
             "park (0: none)"},
    {.name = "ITO_WORKER_LIMIT", .kind = ITO_CFG_INT, .dst = &ito__cfg.worker_limit, .lo = 1,
     .hi = ITO_MAX_WORKERS, .dflt = "8192",
     .what = "the most workers (OS threads) in all, extra ones included, also for waits in the "
             "kernel on process-shared objects and I/O ito cannot park; the configured workers "
             "always run"},
    {.name = "ITO_TLS", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.tls_thread, .choices = tls_words,
     .dflt = "worker",
     .what = "thread: every thread has its own thread-local storage (errno, thread_local); "
             "worker: threads share their worker's"},
    {.name = "ITO_PREEMPT_MS", .kind = ITO_CFG_INT, .dst = &ito__cfg.preempt_ms, .lo = 0,
     .hi = 100000, .dflt = "10",
     .what = "time slice in milliseconds of a pthread or OpenMP team member, after which the "
             "monitor preempts it while other threads wait (0: never)"},
    {.name = "ITO_SPIN_US", .kind = ITO_CFG_INT, .dst = &ito__cfg.spin_us, .lo = 0,
     .hi = 10 * 1000 * 1000, .dflt = "50",
     .what = "microseconds an idle worker looks for work before it sleeps"},
    {.name = "ITO_IO_PIPE_NOWAIT", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.pipe_nowait,
     .choices = nowait_words, .dflt = "auto",
     .what = "0: pipes are polled before each call instead of RWF_NOWAIT"},
};
/* clang-format on */
#define N_CORE_ROWS ((int)(sizeof core_rows / sizeof core_rows[0]))

/* Values given by drop-in libraries for core rows whose variable is not set
 * (ito__config_default), and the name to blame for a bad one. */
static const char *fallback[N_CORE_ROWS];
static const char *fallback_from[N_CORE_ROWS];
static int default_workers;

/* ---- messages ---------------------------------------------------------------------- */

void ito__config_error(const char *name, const char *value, const char *expected) {
  char buf[768];
  int n =
      snprintf(buf, sizeof buf, "ito: %s=%s is not valid: expected %s\n", name, value, expected);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof buf) {
    n = (int)sizeof buf - 1;
    buf[n - 1] = '\n';
  }
  ito__write_stderr(buf, (size_t)n);
  _exit(2);
}

/* A size as the README writes it: 16K, 1G, 4096. */
static void fmt_size(char *out, size_t len, unsigned long long x) {
  static const char units[] = "GMK";
  for (int i = 0; i < 3; i++) {
    unsigned long long u = 1ULL << (10 * (3 - i));
    if (x && x % u == 0) {
      snprintf(out, len, "%llu%c", x / u, units[i]);
      return;
    }
  }
  snprintf(out, len, "%llu", x);
}

static void expected_text(const struct ito_cfg *r, char *out, size_t len) {
  char lo[32], hi[32];
  switch (r->kind) {
    case ITO_CFG_INT:
      snprintf(out, len, "a whole number from %lld to %lld", r->lo, r->hi);
      return;
    case ITO_CFG_SIZE:
      fmt_size(lo, sizeof lo, (unsigned long long)r->lo);
      fmt_size(hi, sizeof hi, (unsigned long long)r->hi);
      if (r->flags & ITO_CFG_SIZE_OMP)
        snprintf(out, len, "a size from %s to %s: a number with a B, K, M or G suffix (K if none)",
                 lo, hi);
      else
        snprintf(out, len, "a size in bytes from %s to %s, optionally with a B, K, M or G suffix",
                 lo, hi);
      return;
    case ITO_CFG_CHOICE: {
      size_t k = 0;
      for (int i = 0; r->choices[i].word && k < len; i++) {
        const char *sep = !r->choices[i + 1].word ? "" : !r->choices[i + 2].word ? " or " : ", ";
        int n = snprintf(out + k, len - k, "%s%s", r->choices[i].word, sep);
        if (n < 0) break;
        k += (size_t)n;
      }
      return;
    }
    case ITO_CFG_PARSE:
      snprintf(out, len, "a valid value");
      return;
  }
}

/* ---- the parser ----------------------------------------------------------------------- */

/* One rule for every number, whole or size: blanks (spaces, tabs) may
 * surround it, a sign may lead it ('-' only where the row allows negative
 * values), then decimal digits; a size may have one unit letter after the
 * digits, blanks allowed between. Nothing else. */
static const char *skip_blanks(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

/* The digits at *p after blanks and a sign, as their magnitude; *neg tells
 * the sign. False when there is no digit or the magnitude overflows. */
static bool scan_number(const char **p, unsigned long long *mag, bool *neg) {
  const char *s = skip_blanks(*p);
  *neg = *s == '-';
  if (*s == '+' || *s == '-') s++;
  if (!isdigit((unsigned char)*s)) return false;
  char *end;
  errno = 0;
  *mag = strtoull(s, &end, 10);
  if (errno) return false;
  *p = skip_blanks(end);
  return true;
}

bool ito__config_number(const char **p, long long lo, long long hi, long long *out) {
  const char *s = *p;
  unsigned long long mag;
  bool neg;
  if (!scan_number(&s, &mag, &neg)) return false;
  if (mag > (unsigned long long)LLONG_MAX) return false;
  long long x = neg ? -(long long)mag : (long long)mag;
  if (x < lo || x > hi) return false;
  *out = x;
  *p = s;
  return true;
}

static bool parse_int(const char *v, long long lo, long long hi, long *out) {
  long long x;
  if (!ito__config_number(&v, lo, hi, &x) || *v) return false;
  *out = (long)x;
  return true;
}

static bool parse_size(const char *v, long long lo, long long hi, unsigned flags, size_t *out) {
  bool omp = flags & ITO_CFG_SIZE_OMP;
  unsigned long long x;
  bool neg;
  if (!scan_number(&v, &x, &neg) || neg) return false;
  unsigned long long mul = omp ? 1ULL << 10 : 1;
  switch (tolower((unsigned char)*v)) {
    case 'b':
      mul = 1;
      break;
    case 'k':
      mul = 1ULL << 10;
      break;
    case 'm':
      mul = 1ULL << 20;
      break;
    case 'g':
      mul = 1ULL << 30;
      break;
    case 0:
      break;
    default:
      return false;
  }
  if (*v) v = skip_blanks(v + 1);
  if (*v || x > (unsigned long long)hi / mul || x * mul < (unsigned long long)lo) return false;
  *out = (size_t)(x * mul);
  return true;
}

static bool parse_choice(const char *v, const struct ito_cfg_choice *c, int *out) {
  v = skip_blanks(v);
  size_t n = strlen(v);
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  for (; c->word; c++)
    if (strlen(c->word) == n && !strncasecmp(v, c->word, n)) {
      *out = c->value;
      return true;
    }
  return false;
}

/* Parses text into the row's destination; on a bad value stops the program
 * naming `as` (the variable, or the one that gave a default). */
static void parse_row(const struct ito_cfg *r, const char *text, const char *as) {
  char expected[512];
  const char *why = NULL;
  bool ok = false;
  switch (r->kind) {
    case ITO_CFG_INT:
      ok = parse_int(text, r->lo, r->hi, r->dst);
      break;
    case ITO_CFG_SIZE:
      ok = parse_size(text, r->lo, r->hi, r->flags, r->dst);
      break;
    case ITO_CFG_CHOICE:
      ok = parse_choice(text, r->choices, r->dst);
      break;
    case ITO_CFG_PARSE:
      why = r->parse(text, r->dst);
      ok = !why;
      break;
  }
  if (ok) return;
  if (why)
    snprintf(expected, sizeof expected, "%s", why);
  else
    expected_text(r, expected, sizeof expected);
  ito__config_error(as, text, expected);
}

/* The variable's value, or NULL when it is unset or empty, or when the
 * process runs with privileges its environment's owner may not have
 * (setuid, setgid, file capabilities): then, as glibc does with its own
 * variables, the environment is not trusted and every row has its
 * default. */
static const char *env(const char *name) {
  const char *v = secure_getenv(name);
  return v && *v ? v : NULL;
}

/* ---- tables ------------------------------------------------------------------------------ */

#define MAX_TABLES 8
static struct {
  const struct ito_cfg *rows;
  int n;
} tables[MAX_TABLES] = {{core_rows, N_CORE_ROWS}};
static int ntables = 1;
static int table_lock;

void ito__config_read(const struct ito_cfg *rows, int n) {
  for (int i = 0; i < n; i++) {
    const char *v = env(rows[i].name);
    if (v) parse_row(&rows[i], v, rows[i].name);
  }
  spin_lock(&table_lock);
  int known = 0;
  for (int t = 0; t < ntables; t++) known |= tables[t].rows == rows;
  if (!known && ntables < MAX_TABLES) {
    tables[ntables].rows = rows;
    tables[ntables].n = n;
    ntables++;
  }
  spin_unlock(&table_lock);
}

void ito__config_each(void (*fn)(const struct ito_cfg *row, void *arg), void *arg) {
  spin_lock(&table_lock);
  int nt = ntables;
  spin_unlock(&table_lock);
  for (int t = 0; t < nt; t++)
    for (int i = 0; i < tables[t].n; i++) fn(&tables[t].rows[i], arg);
}

/* The index of core row `name`, or -1. */
static int core_row(const char *name) {
  for (int i = 0; i < N_CORE_ROWS; i++)
    if (!strcmp(core_rows[i].name, name)) return i;
  return -1;
}

const char *ito__config_blame(const char *name) {
  int i = core_row(name);
  return i >= 0 && !env(name) && fallback[i] && fallback_from[i] ? fallback_from[i] : name;
}

int ito__config_default(const char *name, const char *text, const char *from) {
  int i = core_row(name);
  if (i < 0) return EINVAL;
  /* checked now, so that the message comes from the library that gave it */
  struct ito_cfg probe = core_rows[i];
  union {
    long l;
    size_t z;
    int c;
    const char *p;
  } u;
  probe.dst = &u;
  parse_row(&probe, text, from ? from : name);
  fallback[i] = text;
  fallback_from[i] = from;
  return 0;
}

void ito__config_default_workers(int n) { default_workers = n; }

/* The settings the variables give now: the defaults, then each core row's
 * variable or the fallback a library gave. */
static void settings_from_env(struct ito_settings *s) {
  int cpus = ito__usable_cpus();
  *s = (struct ito_settings){
      .workers = default_workers > 0 && default_workers < cpus ? default_workers : cpus,
      .stack_size = ITO_DEFAULT_STACK,
      .stack_guard = GUARD_AUTO,
      .stack_cache = ITO_DEFAULT_STACK_CACHE,
      .deque_fence = FENCE_ASYMMETRIC,
      .wait_policy = WAIT_PASSIVE,
      .spin_us = 50,
      .pipe_nowait = PIPE_NOWAIT_AUTO,
      .extra_workers = 256,
      .worker_limit = ITO_MAX_WORKERS,
      .tls_thread = 0,
      .preempt_ms = 10,
      .profile_collapse = 1000,
  };
  for (int i = 0; i < N_CORE_ROWS; i++) {
    /* the row's destination is a field of ito__cfg: the same field of *s */
    struct ito_cfg r = core_rows[i];
    r.dst = (char *)s + ((char *)core_rows[i].dst - (char *)&ito__cfg);
    const char *v = env(r.name);
    if (v)
      parse_row(&r, v, r.name);
    else if (fallback[i])
      parse_row(&r, fallback[i], fallback_from[i] ? fallback_from[i] : r.name);
  }
  s->stack_size = (s->stack_size + 4095) & ~(size_t)4095;
}

void ito__config_read_core(void) { settings_from_env(&ito__cfg); }

int ito__config_value(const char *name, char *out, size_t len) {
  int i = core_row(name);
  if (i < 0) return EINVAL;
  struct ito_settings s;
  settings_from_env(&s);
  const struct ito_cfg *r = &core_rows[i];
  const void *field = (const char *)&s + ((const char *)r->dst - (const char *)&ito__cfg);
  switch (r->kind) {
    case ITO_CFG_INT:
      snprintf(out, len, "%ld", *(const long *)field);
      break;
    case ITO_CFG_SIZE:
      snprintf(out, len, "%zu", *(const size_t *)field);
      break;
    case ITO_CFG_CHOICE: {
      int v = *(const int *)field;
      const struct ito_cfg_choice *c = r->choices;
      while (c->word && c->value != v) c++;
      snprintf(out, len, "%s", c->word ? c->word : "?");
      break;
    }
    case ITO_CFG_PARSE:
      return EINVAL; /* the core has no such row */
  }
  return 0;
}

/* ---- usable CPUs ------------------------------------------------------------------------- */

/* A cgroup quota in CPUs, rounded up, from "quota period" (v2) or two files
 * (v1); 0 for none. */
static int quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return (int)((quota + period - 1) / period);
}

static int cgroup_v2_cpus(void) {
  char path[512] = "", line[512];
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "0::", 3) == 0) {
        line[strcspn(line, "\n")] = 0;
        if (strlen(line + 3) < sizeof path - 32)
          snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.max", line + 3);
      }
    }
    fclose(f);
  }
  const char *tries[] = {path, "/sys/fs/cgroup/cpu.max"};
  for (int i = 0; i < 2; i++) {
    if (!tries[i][0]) continue;
    FILE *q = fopen(tries[i], "r");
    if (!q) continue;
    char quota[64];
    long long period = 0;
    int got = fscanf(q, "%63s %lld", quota, &period);
    fclose(q);
    if (got == 2 && strcmp(quota, "max") != 0) return quota_cpus(atoll(quota), period);
    return 0;
  }
  return 0;
}

static int cgroup_v1_cpus(void) {
  long long quota = -1, period = 0;
  FILE *q = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
  if (!q) return 0;
  if (fscanf(q, "%lld", &quota) != 1) quota = -1;
  fclose(q);
  FILE *p = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
  if (p) {
    if (fscanf(p, "%lld", &period) != 1) period = 0;
    fclose(p);
  }
  return quota_cpus(quota, period);
}

int ito__usable_cpus(void) {
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  int lim[2] = {cgroup_v2_cpus(), cgroup_v1_cpus()};
  for (int i = 0; i < 2; i++)
    if (lim[i] >= 1 && lim[i] < n) n = lim[i];
  return n;
}
