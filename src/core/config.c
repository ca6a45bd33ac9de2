/* The configuration table and its one checked parser (config.h). Every
 * ITO_* variable of libito.so is a row of its module's table (ITO_CONFIG_MODULE); the drop-in
 * libraries hand theirs to ito__config_read. Design: docs/architecture.md,
 * "Configuration". */
#define _GNU_SOURCE
#include "config.h"

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

const struct ito_cfg_choice ito__cfg_bits[] = {{"0", 0}, {"1", 1}, {0, 0}};

/* Values given by drop-in libraries for core rows whose variable is not set
 * (ito__config_default), and the name to blame for a bad one. */
#define MAX_FALLBACKS 16
static struct {
  const struct ito_cfg *row;
  const char *text, *from;
} fallback[MAX_FALLBACKS];
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

/* ---- the modules' tables ------------------------------------------------------------- */

ITO_REGISTRY(ito_config, struct ito_cfg_module);
static int n_modules(void) { return ITO_REGISTRY_N(ito_config); }
static const struct ito_cfg_module *module(int m) { return ITO_REGISTRY_AT(ito_config, m); }

/* Every row of mod stores into mod's settings (invariant 4). */
static void check_module(const struct ito_cfg_module *mod) {
  for (int i = 0; i < mod->n; i++) {
    const char *d = mod->rows[i].dst, *base = mod->settings;
    ITO_ASSERT(d >= base && d < base + mod->size);
    (void)d, (void)base;
  }
}

/* Core row `name`, its module in *mod; NULL for an unknown name. */
static const struct ito_cfg *core_row(const char *name, const struct ito_cfg_module **mod) {
  for (int m = 0; m < n_modules(); m++)
    for (int i = 0; i < module(m)->n; i++)
      if (!strcmp(module(m)->rows[i].name, name)) {
        if (mod) *mod = module(m);
        return &module(m)->rows[i];
      }
  return NULL;
}

static int fallback_of(const struct ito_cfg *row) {
  for (int i = 0; i < MAX_FALLBACKS && fallback[i].row; i++)
    if (fallback[i].row == row) return i;
  return -1;
}

/* Parses row r of module mod into the copy of its settings at `into`: the
 * variable when set, else a library's default; else leaves the field. */
static void read_row(const struct ito_cfg_module *mod, const struct ito_cfg *row, void *into) {
  struct ito_cfg r = *row;
  r.dst = (char *)into + ((char *)row->dst - (char *)mod->settings);
  const char *v = env(r.name);
  int f = v ? -1 : fallback_of(row);
  if (v)
    parse_row(&r, v, r.name);
  else if (f >= 0)
    parse_row(&r, fallback[f].text, fallback[f].from ? fallback[f].from : r.name);
}

/* The settings module mod has from the environment now, in *into. */
static void module_from_env(const struct ito_cfg_module *mod, void *into) {
  check_module(mod);
  if (mod->defaults)
    mod->defaults(into);
  else
    memset(into, 0, mod->size);
  for (int i = 0; i < mod->n; i++) read_row(mod, &mod->rows[i], into);
  if (mod->finish) mod->finish(into);
}

void ito__config_read_modules(void) {
  for (int m = 0; m < n_modules(); m++) module_from_env(module(m), module(m)->settings);
}

/* The drop-in libraries' tables, after the modules'. */
#define MAX_TABLES 8
static struct {
  const struct ito_cfg *rows;
  int n;
} tables[MAX_TABLES];
static int ntables;
static int table_lock;

void ito__config_read(const struct ito_cfg *rows, int n) {
  for (int i = 0; i < n; i++) {
    const char *v = env(rows[i].name);
    if (v) parse_row(&rows[i], v, rows[i].name);
  }
  spin_lock(&table_lock, LR_LEAF);
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
  for (int m = 0; m < n_modules(); m++)
    for (int i = 0; i < module(m)->n; i++) fn(&module(m)->rows[i], arg);
  spin_lock(&table_lock, LR_LEAF);
  int nt = ntables;
  spin_unlock(&table_lock);
  for (int t = 0; t < nt; t++)
    for (int i = 0; i < tables[t].n; i++) fn(&tables[t].rows[i], arg);
}

const char *ito__config_blame(const char *name) {
  const struct ito_cfg *row = core_row(name, NULL);
  int f = row && !env(name) ? fallback_of(row) : -1;
  return f >= 0 && fallback[f].from ? fallback[f].from : name;
}

int ito__config_default(const char *name, const char *text, const char *from) {
  const struct ito_cfg *row = core_row(name, NULL);
  if (!row) return EINVAL;
  /* checked now, so that the message comes from the library that gave it */
  struct ito_cfg probe = *row;
  union {
    long l;
    size_t z;
    int c;
    const char *p;
  } u;
  probe.dst = &u;
  parse_row(&probe, text, from ? from : name);
  int f = fallback_of(row);
  for (int i = 0; f < 0 && i < MAX_FALLBACKS; i++)
    if (!fallback[i].row) f = i;
  if (f < 0) return ENOMEM; /* (more than every core row a library may give) */
  fallback[f].row = row;
  fallback[f].text = text;
  fallback[f].from = from;
  return 0;
}

void ito__config_default_workers(int n) { default_workers = n; }

int ito__config_workers(void) {
  int cpus = ito__usable_cpus();
  return default_workers > 0 && default_workers < cpus ? default_workers : cpus;
}

/* The largest module's settings a copy is made of (ito__config_value). */
#define MAX_SETTINGS 256

int ito__config_value(const char *name, char *out, size_t len) {
  const struct ito_cfg_module *mod;
  const struct ito_cfg *r = core_row(name, &mod);
  if (!r) return EINVAL;
  union {
    max_align_t align;
    char bytes[MAX_SETTINGS];
  } copy;
  ITO_ASSERT(mod->size <= sizeof copy);
  if (mod->size > sizeof copy) return EINVAL;
  module_from_env(mod, copy.bytes);
  const void *field = copy.bytes + ((const char *)r->dst - (const char *)mod->settings);
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
      return EINVAL; /* (a value only its module reads) */
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
