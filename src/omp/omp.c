/* libito-omp.so: the environment, the current task, the waits every part
 * uses, and the omp_* user API. docs/openmp.md. */
#include "omp_int.h"

#include "../core/relax.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct omp_global ito__omp_g;
/* read on every task: a line of its own, away from anything written */
int ito__omp_cancellation __attribute__((aligned(64)));

void ito__omp_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ito-omp: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  _exit(2);
}

/* ---- the environment -------------------------------------------------------------
 * Every OMP_* variable is a row of the runtime's configuration table: the
 * runtime's one checked parser reads them (a bad value stops the program
 * with one line naming the variable), and the table lists them. */

/* A whole number in [lo, hi] by the configuration's rule (blanks, a sign,
 * digits, blanks); 0 on failure. */
static int parse_long(const char *s, const char **rest, long lo, long hi, long *out) {
  long long v;
  if (!ito__dropin_config_number(&s, lo, hi, &v)) return 0;
  *rest = s;
  *out = (long)v;
  return 1;
}

static const char *parse_num_threads(const char *v, void *dst) {
  (void)dst;
  const char *p = v;
  ito__omp_g.nlist = 0;
  for (;;) {
    long n;
    const char *rest;
    if (!parse_long(p, &rest, 1, INT_MAX, &n) || ito__omp_g.nlist == 16)
      return "a positive number of threads, or a comma-separated list of at most 16 of them "
             "(one per nesting level)";
    ito__omp_g.list[ito__omp_g.nlist++] = (int)n;
    if (*rest == 0) return NULL;
    if (*rest != ',') return "positive numbers separated by commas";
    p = rest + 1;
  }
}

static const char *parse_schedule(const char *v, void *dst) {
  (void)dst;
  const char *expected =
      "[monotonic:|nonmonotonic:]static|dynamic|guided|auto[,chunk] with a chunk from 1 to "
      "2147483647 (omp_get_schedule returns it as an int)";
  const char *p = v;
  int mono = 0, nonmono = 0;
  if (!strncasecmp(p, "monotonic:", 10)) {
    mono = 1;
    p += 10;
  } else if (!strncasecmp(p, "nonmonotonic:", 13)) {
    nonmono = 1;
    p += 13;
  }
  static const struct {
    const char *name;
    int kind;
  } kinds[] = {{"static", SCHED_STATIC},
               {"dynamic", SCHED_DYNAMIC},
               {"guided", SCHED_GUIDED},
               {"auto", SCHED_AUTO}};
  int kind = -1;
  size_t len = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    size_t l = strlen(kinds[i].name);
    if (!strncasecmp(p, kinds[i].name, l) && (p[l] == 0 || p[l] == ',' || p[l] == ' ')) {
      kind = kinds[i].kind;
      len = l;
    }
  }
  if (kind < 0) return expected;
  p += len;
  while (*p == ' ') p++;
  long chunk = 0;
  if (*p == ',') {
    const char *rest;
    if (!parse_long(p + 1, &rest, 1, INT_MAX, &chunk) || *rest) return expected;
  } else if (*p) {
    return expected;
  }
  /* a static schedule is monotonic unless it says otherwise; gcc's runtime
   * reports OMP_SCHEDULE=static so, and nonmonotonic:static without the bit */
  if (kind == SCHED_STATIC && !nonmono) mono = 1;
  ito__omp_g.init.sched = kind | (mono ? (int)SCHED_MONOTONIC : 0);
  ito__omp_g.init.chunk = chunk;
  return NULL;
}

/* Any text that fits (OpenMP gives it no syntax; the fields are expanded
 * when affinity is displayed). */
static const char *parse_affinity_format(const char *v, void *dst) {
  (void)dst;
  if (strlen(v) >= sizeof ito__omp_g.affinity_format) return "a format of at most 255 characters";
  strcpy(ito__omp_g.affinity_format, v);
  return NULL;
}

/* OMP_PLACES: kept as given; the runtime's ITO_PLACES parser checks and
 * expands it (its default, given below: a bad value stops the program
 * with one line naming OMP_PLACES). */
static const char *env_places;
static const char *parse_places(const char *v, void *dst) {
  (void)dst;
  env_places = v;
  return NULL;
}

/* OMP_PROC_BIND: false, true, or a comma list of primary (master), close
 * and spread, one per nesting level. Workers are bound to places for any
 * value but false; the first level's is what omp_get_proc_bind says. */
static int env_bind = -1; /* omp_proc_bind_t of the first level, -1 not set */
static const char *parse_proc_bind(const char *v, void *dst) {
  (void)dst;
  static const char expected[] =
      "true, false, or a comma list of primary, master, close and spread";
  if (!strcasecmp(v, "true")) {
    env_bind = 1;
    return NULL;
  }
  if (!strcasecmp(v, "false")) {
    env_bind = 0;
    return NULL;
  }
  int first = -1;
  for (const char *p = v;;) {
    while (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != ',' && *e != ' ') e++;
    size_t n = (size_t)(e - p);
    int k = n == 7 && !strncasecmp(p, "primary", n)  ? 2
            : n == 6 && !strncasecmp(p, "master", n) ? 2
            : n == 5 && !strncasecmp(p, "close", n)  ? 3
            : n == 6 && !strncasecmp(p, "spread", n) ? 4
                                                     : -1;
    if (k < 0) return expected;
    if (first < 0) first = k;
    while (*e == ' ') e++;
    if (!*e) break;
    if (*e != ',') return expected;
    p = e + 1;
  }
  env_bind = first;
  return NULL;
}

static int usable_cpus(void) {
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

/* Values of the rows below that need a second look. */
static int env_dynamic = -1, env_nested = -1, env_cancellation = -1, env_wait = -1;
static int env_display = -1, env_allocator = -1;
static long env_levels = -1, env_limit = -1, env_priority = -1, env_teams = -1,
            env_teams_limit = -1;
static size_t env_stack, env_gomp_stack;
static const struct ito_cfg_choice bool_words[] = {
    {"true", 1}, {"false", 0}, {"1", 1}, {"0", 0}, {0, 0}};
static const struct ito_cfg_choice wait_words[] = {{"active", 1}, {"passive", 0}, {0, 0}};
static const struct ito_cfg_choice display_words[] = {
    {"true", 1}, {"false", 0}, {"verbose", 2}, {0, 0}};
/* gcc 12's runtime takes the predefined allocators' names */
static const struct ito_cfg_choice allocator_words[] = {
    {"omp_default_mem_alloc", 1}, {"omp_large_cap_mem_alloc", 2}, {"omp_const_mem_alloc", 3},
    {"omp_high_bw_mem_alloc", 4}, {"omp_low_lat_mem_alloc", 5},   {"omp_cgroup_mem_alloc", 6},
    {"omp_pteam_mem_alloc", 7},   {"omp_thread_mem_alloc", 8},    {0, 0}};

/* (a table: one row per variable, packed) */
/* clang-format off */
static const struct ito_cfg rows[] = {
    {.name = "OMP_DISPLAY_AFFINITY", .kind = ITO_CFG_CHOICE, .dst = &ito__omp_g.display_affinity,
     .choices = bool_words, .dflt = "false",
     .what = "each thread of a parallel region shows its affinity (OMP_AFFINITY_FORMAT)"},
    {.name = "OMP_PLACES", .kind = ITO_CFG_PARSE, .parse = parse_places, .dflt = "",
     .what = "the places threads are bound to (the runtime's ITO_PLACES)"},
    {.name = "OMP_PROC_BIND", .kind = ITO_CFG_PARSE, .parse = parse_proc_bind, .dflt = "false",
     .what = "bind the workers to places (any value but false)"},
    {.name = "OMP_NUM_THREADS", .kind = ITO_CFG_PARSE, .parse = parse_num_threads,
     .dflt = "the usable CPUs", .what = "team sizes, one per nesting level"},
    {.name = "OMP_SCHEDULE", .kind = ITO_CFG_PARSE, .parse = parse_schedule, .dflt = "dynamic,1",
     .what = "the schedule of schedule(runtime) loops"},
    {.name = "OMP_DYNAMIC", .kind = ITO_CFG_CHOICE, .dst = &env_dynamic, .choices = bool_words,
     .dflt = "false", .what = "dynamic adjustment of team sizes"},
    {.name = "OMP_NESTED", .kind = ITO_CFG_CHOICE, .dst = &env_nested, .choices = bool_words,
     .dflt = "false", .what = "nested parallel regions are active"},
    {.name = "OMP_MAX_ACTIVE_LEVELS", .kind = ITO_CFG_INT, .dst = &env_levels, .lo = 0,
     .hi = INT_MAX, .dflt = "1 (the list's length with a list of team sizes)",
     .what = "nesting levels with more than one thread"},
    {.name = "OMP_THREAD_LIMIT", .kind = ITO_CFG_INT, .dst = &env_limit, .lo = 1, .hi = INT_MAX,
     .dflt = "no limit", .what = "threads of all teams together"},
    {.name = "OMP_CANCELLATION", .kind = ITO_CFG_CHOICE, .dst = &env_cancellation,
     .choices = bool_words, .dflt = "false",
     .what = "cancel-var: cancel constructs take effect (parallel, for, sections, taskgroup)"},
    {.name = "OMP_STACKSIZE", .kind = ITO_CFG_SIZE, .dst = &env_stack, .lo = 16 << 10,
     .hi = 1L << 30, .flags = ITO_CFG_SIZE_OMP, .dflt = "the default pthread stack size (8M)",
     .what = "stack size of every thread and task (ITO_STACK_SIZE when that is not set)"},
    {.name = "GOMP_STACKSIZE", .kind = ITO_CFG_SIZE, .dst = &env_gomp_stack, .lo = 16 << 10,
     .hi = 1L << 30, .flags = ITO_CFG_SIZE_OMP, .dflt = "the default pthread stack size (8M)",
     .what = "OMP_STACKSIZE when that is not set (gcc's name)"},
    {.name = "OMP_WAIT_POLICY", .kind = ITO_CFG_CHOICE, .dst = &env_wait, .choices = wait_words,
     .dflt = "passive", .what = "ITO_WAIT_POLICY when that is not set"},
    {.name = "OMP_MAX_TASK_PRIORITY", .kind = ITO_CFG_INT, .dst = &env_priority, .lo = 0,
     .hi = INT_MAX, .dflt = "0", .what = "the highest priority a task may be given"},
    {.name = "OMP_DISPLAY_ENV", .kind = ITO_CFG_CHOICE, .dst = &env_display,
     .choices = display_words, .dflt = "false",
     .what = "print the OpenMP settings in force at start (verbose: and ito's own)"},
    {.name = "OMP_AFFINITY_FORMAT", .kind = ITO_CFG_PARSE, .parse = parse_affinity_format,
     .dflt = "level %L thread %i affinity %A",
     .what = "the format of omp_get_affinity_format (affinity display is not supported)"},
    {.name = "OMP_ALLOCATOR", .kind = ITO_CFG_CHOICE, .dst = &env_allocator,
     .choices = allocator_words, .dflt = "omp_default_mem_alloc",
     .what = "the initial default allocator (def-allocator-var)"},
    {.name = "OMP_NUM_TEAMS", .kind = ITO_CFG_INT, .dst = &env_teams, .lo = 1, .hi = INT_MAX,
     .dflt = "3 teams", .what = "teams of a teams construct without num_teams"},
    {.name = "OMP_TEAMS_THREAD_LIMIT", .kind = ITO_CFG_INT, .dst = &env_teams_limit, .lo = 1,
     .hi = INT_MAX, .dflt = "no limit",
     .what = "thread limit in a teams construct without thread_limit"},
};
/* clang-format on */

static void init_root(void);

/* The stack size of libgomp's team threads when neither OMP_STACKSIZE nor
 * GOMP_STACKSIZE is set: the default of pthread_create (glibc's: the
 * RLIMIT_STACK soft limit, 8 MiB as usually set; 2 MiB on x86-64 when it
 * is unlimited), within ITO_STACK_SIZE's bounds (16K to 1G). Team members
 * and tasks get it; the initial thread keeps the process's stack
 * (docs/openmp.md, "Stacks"). */
static size_t default_stack_size(void) {
  size_t s = 8u << 20;
  pthread_attr_t a;
  if (pthread_getattr_default_np(&a) == 0) {
    size_t got = 0;
    if (pthread_attr_getstacksize(&a, &got) == 0 && got) s = got;
    pthread_attr_destroy(&a);
  }
  if (s < (16u << 10)) s = 16u << 10;
  if (s > (1u << 30)) s = 1u << 30;
  return s;
}

struct ito_dropin_where ito__omp_where __attribute__((aligned(64)));

int ito__omp_ready;
static int setup_lock, setup_tid;

static void read_env(void);

/* Once, whoever comes first: the constructor, the runtime about to start
 * (which calls every drop-in library's set-up, src/dropin/ito_dropin.h), or
 * an entry point called from another library's constructor before ours.
 * A call on the OS thread that runs the set-up (the set-up starting the
 * runtime for OMP_DISPLAY_ENV, whose start calls it again) returns at once;
 * another thread waits for the end, with the raw system call (as
 * libito-pthread.so's set-up, docs/dropin.md section 2). */
void ito__omp_setup(void) {
  if (__atomic_load_n(&ito__omp_ready, __ATOMIC_ACQUIRE)) return;
  int me = (int)syscall(SYS_gettid);
  if (__atomic_exchange_n(&setup_lock, 1, __ATOMIC_ACQUIRE)) {
    if (__atomic_load_n(&setup_tid, __ATOMIC_RELAXED) == me) return;
    while (!__atomic_load_n(&ito__omp_ready, __ATOMIC_ACQUIRE)) syscall(SYS_sched_yield);
    return;
  }
  __atomic_store_n(&setup_tid, me, __ATOMIC_RELAXED);
  read_env();
  __atomic_store_n(&setup_tid, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&ito__omp_ready, 1, __ATOMIC_RELEASE);
  /* (it starts the runtime: the places) */
  if (env_display > 0) ito__omp_display_env(env_display == 2);
}

__attribute__((constructor)) static void omp_ctor(void) { ito__omp_setup(); }

/* The runtime calls it before it starts (src/dropin/ito_dropin.h). */
OMP_API void __ito_dropin_setup(void) { ito__omp_setup(); }

/* A stack overflow's report names the member or task and the function it
 * runs (the region's or the task's outlined function). */
static int describe_overflow(void *ctx, char *out, size_t len, void **start) {
  const task *t = ctx;
  if (t->kind == TASK_IMPLICIT && t->team) {
    *start = (void *)t->team->fn;
    snprintf(out, len, "OpenMP thread %u of a team of %u", t->id, t->team->n);
    return 1;
  }
  if (t->kind == TASK_EXPLICIT || t->kind == TASK_INLINE) {
    *start = (void *)t->fn;
    snprintf(out, len, "an OpenMP task on thread %u", t->id);
    return 1;
  }
  return 0;
}

static void read_env(void) {
  ito__dropin_ctx_where(&ito__omp_where);
  ito__dropin_overflow_describe(describe_overflow);
  ito__omp_sleep_setup(); /* first: the runtime's own sleeps go to libc */
  ito__omp_g.nprocs = usable_cpus();
  ito__omp_g.init.nthreads = ito__omp_g.nprocs;
  ito__omp_g.init.sched = SCHED_DYNAMIC;
  ito__omp_g.init.chunk = 1;
  ito__omp_g.init.dyn = 0;
  strcpy(ito__omp_g.affinity_format, "level %L thread %i affinity %A");
  ito__dropin_config_read(rows, (int)(sizeof rows / sizeof rows[0]));
  /* team members are threads: preempted after a time slice while others
   * wait (docs/monitor.md); tasks are not */
  ito__dropin_preempt_enable(0, NULL);
  /* the program's main thread keeps its OS thread (pthread_self, gettid,
   * its thread-local storage) between regions, as under libgomp: CPython
   * tells its main thread by pthread_self (docs/openmp.md, "The initial
   * thread's OS thread") */
  ito__dropin_root_stay();
  if (ito__omp_g.nlist) ito__omp_g.init.nthreads = ito__omp_g.list[0];
  if (env_dynamic >= 0) ito__omp_g.init.dyn = env_dynamic;
  /* Nesting: off unless asked for (OMP_NESTED, OMP_MAX_ACTIVE_LEVELS, or a
   * list of team sizes), as gcc 12's runtime does. */
  ito__omp_g.max_active_levels = ito__omp_g.nlist > 1 ? MAX_LEVELS : 1;
  if (env_nested >= 0) ito__omp_g.max_active_levels = env_nested ? MAX_LEVELS : 1;
  if (env_levels >= 0) ito__omp_g.max_active_levels = (int)env_levels;
  if (ito__omp_g.max_active_levels > MAX_LEVELS) ito__omp_g.max_active_levels = MAX_LEVELS;
  ito__omp_g.init.thread_limit = env_limit > 0 ? (int)env_limit : INT_MAX;
  ito__omp_g.init.def_allocator = env_allocator > 0 ? (uintptr_t)env_allocator : ALLOC_DEFAULT;
  ito__omp_g.nteams = env_teams > 0 ? (int)env_teams : 0;
  ito__omp_g.teams_thread_limit = env_teams_limit > 0 ? (int)env_teams_limit : 0;
  ito__omp_g.max_task_priority = env_priority > 0 ? (int)env_priority : 0;
  ito__omp_cancellation = env_cancellation == 1;
  /* OMP_STACKSIZE (else GOMP_STACKSIZE, else libgomp's default) and
   * OMP_WAIT_POLICY are the runtime's own variables' defaults */
  static char stack_text[32]; /* kept: the runtime reads it at each start */
  size_t stack = env_stack ? env_stack : env_gomp_stack;
  snprintf(stack_text, sizeof stack_text, "%zu", stack ? stack : default_stack_size());
  ito__dropin_config_default("ITO_STACK_SIZE", stack_text,
                             env_stack        ? "OMP_STACKSIZE"
                             : env_gomp_stack ? "GOMP_STACKSIZE"
                                              : "the default pthread stack size");
  if (env_wait >= 0)
    ito__dropin_config_default("ITO_WAIT_POLICY", env_wait ? "active" : "passive",
                               "OMP_WAIT_POLICY");
  /* places (docs/numa.md): OMP_PLACES binds (bind-var true unless
   * OMP_PROC_BIND says false), as gcc's runtime does; OMP_PROC_BIND alone
   * binds to cores */
  if (env_places && env_bind < 0) env_bind = 1;
  if (env_bind > 0) {
    /* Under the preload the program still loads gcc's runtime, whose
     * constructor has then bound this thread to the first place: its
     * affinity says one place's CPUs, not the process's. The CPUs online
     * count instead. */
    long on = sysconf(_SC_NPROCESSORS_ONLN);
    ito__omp_g.nprocs = on > 0 ? (int)on : 1;
    if (!ito__omp_g.nlist) ito__omp_g.init.nthreads = ito__omp_g.nprocs;
  }
  ito__omp_g.proc_bind = env_bind > 0 ? env_bind : 0;
  if (env_bind > 0)
    ito__dropin_config_default("ITO_PLACES", env_places ? env_places : "cores",
                               env_places ? "OMP_PLACES" : "OMP_PROC_BIND");
  /* as many workers as the outermost team wants, at most the usable CPUs
   * (ITO_NUM_WORKERS overrides) */
  if (ito__omp_g.nlist) ito__dropin_default_workers(ito__omp_g.list[0]);
  /* threadprivate variables live in thread-local storage: a program with
   * TLS of its own gets a block per team member (docs/openmp.md,
   * "threadprivate"); ITO_TLS=worker asks for the workers' */
  __atomic_store_n(&ito__omp_g.member_tls, -1, __ATOMIC_RELAXED);
  ito__omp_g.program_tls = ito__dropin_tls_program();
  if (ito__omp_g.program_tls)
    ito__dropin_config_default("ITO_TLS", "thread", "libito-omp.so (threadprivate)");
  init_root(); /* the program's initial task starts with these ICVs */
}

/* ---- OMP_DISPLAY_ENV -------------------------------------------------------------------
 * gcc 12's lines, in its order, with the values this runtime uses: the
 * initial task's ICVs and the process-wide ones; the stack size and wait
 * policy are those of the ito variables OMP_STACKSIZE and OMP_WAIT_POLICY
 * stand for. docs/openmp.md, "OMP_DISPLAY_ENV", says which lines differ
 * from gcc's and why. */

/* The places as gcc's runtime shows them: {0:4},{4:4}, a run of
 * consecutive CPUs as first:length. */
static void display_places(FILE *f) {
  int n = ito__dropin_place_count();
  for (int p = 0; p < n; p++) {
    int cpus[1024];
    int m = ito__dropin_place_cpus(p, cpus, 1024);
    if (m > 1024) m = 1024;
    fputs(p ? ",{" : "{", f);
    for (int i = 0; i < m;) {
      int j = i;
      while (j + 1 < m && cpus[j + 1] == cpus[j] + 1) j++;
      fprintf(f, "%s%d", i ? "," : "", cpus[i]);
      if (j > i) fprintf(f, ":%d", j - i + 1);
      i = j + 1;
    }
    fputc('}', f);
  }
}

static void display_schedule(FILE *f) {
  int kind = ito__omp_g.init.sched & ~(int)SCHED_MONOTONIC;
  int mono = (ito__omp_g.init.sched & (int)SCHED_MONOTONIC) != 0;
  /* static is monotonic, and said so only when it is not */
  if (mono && kind != SCHED_STATIC) fputs("MONOTONIC:", f);
  if (!mono && kind == SCHED_STATIC) fputs("NONMONOTONIC:", f);
  static const char *const names[] = {"RUNTIME", "STATIC", "DYNAMIC", "GUIDED", "AUTO"};
  fputs(kind >= 0 && kind <= SCHED_AUTO ? names[kind] : "?", f);
  /* the chunk, unless it is the kind's default (static: none; others: 1) */
  long chunk = ito__omp_g.init.chunk;
  if (kind == SCHED_STATIC && chunk > 0) fprintf(f, ",%ld", chunk);
  if ((kind == SCHED_DYNAMIC || kind == SCHED_GUIDED) && chunk > 1) fprintf(f, ",%ld", chunk);
}

static void display_ito_row(const struct ito_cfg *row, void *arg) {
  char value[64];
  if (strncmp(row->name, "ITO_", 4) || ito__dropin_config_value(row->name, value, sizeof value))
    return;
  fprintf((FILE *)arg, "  %s = '%s'\n", row->name, value);
}

static const char *allocator_name(uintptr_t a) {
  static const char *const names[] = {
      "omp_null_allocator",   "omp_default_mem_alloc", "omp_large_cap_mem_alloc",
      "omp_const_mem_alloc",  "omp_high_bw_mem_alloc", "omp_low_lat_mem_alloc",
      "omp_cgroup_mem_alloc", "omp_pteam_mem_alloc",   "omp_thread_mem_alloc"};
  return a < sizeof names / sizeof names[0] ? names[a] : NULL;
}

OMP_API uintptr_t omp_get_default_allocator(void);
OMP_API int omp_get_max_teams(void);
OMP_API int omp_get_teams_thread_limit(void);
OMP_API int omp_get_cancellation(void);
OMP_API int omp_get_default_device(void);

void ito__omp_display_env(int verbose) {
  FILE *f = stderr;
  char stack[64], wait[64];
  if (ito__dropin_config_value("ITO_STACK_SIZE", stack, sizeof stack)) strcpy(stack, "?");
  if (ito__dropin_config_value("ITO_WAIT_POLICY", wait, sizeof wait)) strcpy(wait, "?");
  for (char *p = wait; *p; p++)
    if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
  flockfile(f);
  fputs("\nOPENMP DISPLAY ENVIRONMENT BEGIN\n", f);
  fprintf(f, "  _OPENMP = '%d'\n", 201511);
  fprintf(f, "  OMP_DYNAMIC = '%s'\n", ito__omp_g.init.dyn ? "TRUE" : "FALSE");
  fprintf(f, "  OMP_NESTED = '%s'\n", ito__omp_g.max_active_levels > 1 ? "TRUE" : "FALSE");
  fputs("  OMP_NUM_THREADS = '", f);
  if (ito__omp_g.nlist)
    for (int i = 0; i < ito__omp_g.nlist; i++) fprintf(f, "%s%d", i ? "," : "", ito__omp_g.list[i]);
  else
    fprintf(f, "%d", ito__omp_g.init.nthreads);
  fputs("'\n  OMP_SCHEDULE = '", f);
  display_schedule(f);
  fputs("'\n", f);
  static const char *const binds[] = {"FALSE", "TRUE", "PRIMARY", "CLOSE", "SPREAD"};
  fprintf(f, "  OMP_PROC_BIND = '%s'\n", binds[ito__omp_g.proc_bind]);
  fputs("  OMP_PLACES = '", f);
  display_places(f);
  fputs("'\n", f);
  fprintf(f, "  OMP_STACKSIZE = '%s'\n", stack);
  fprintf(f, "  OMP_WAIT_POLICY = '%s'\n", wait);
  fprintf(f, "  OMP_THREAD_LIMIT = '%d'\n", ito__omp_g.init.thread_limit);
  fprintf(f, "  OMP_MAX_ACTIVE_LEVELS = '%d'\n", ito__omp_g.max_active_levels);
  fprintf(f, "  OMP_NUM_TEAMS = '%d'\n", omp_get_max_teams());
  fprintf(f, "  OMP_TEAMS_THREAD_LIMIT = '%d'\n", omp_get_teams_thread_limit());
  fprintf(f, "  OMP_CANCELLATION = '%s'\n", omp_get_cancellation() ? "TRUE" : "FALSE");
  fprintf(f, "  OMP_DEFAULT_DEVICE = '%d'\n", omp_get_default_device());
  fprintf(f, "  OMP_MAX_TASK_PRIORITY = '%d'\n", ito__omp_g.max_task_priority);
  fprintf(f, "  OMP_DISPLAY_AFFINITY = '%s'\n", ito__omp_g.display_affinity ? "TRUE" : "FALSE");
  fprintf(f, "  OMP_AFFINITY_FORMAT = '%s'\n", ito__omp_g.affinity_format);
  const char *alloc = allocator_name(omp_get_default_allocator());
  if (alloc)
    fprintf(f, "  OMP_ALLOCATOR = '%s'\n", alloc);
  else
    fprintf(f, "  OMP_ALLOCATOR = '%#lx'\n", (unsigned long)omp_get_default_allocator());
  /* no offload devices: target regions always run on the host */
  fprintf(f, "  OMP_TARGET_OFFLOAD = '%s'\n", "DISABLED");
  if (verbose) ito__dropin_config_each(display_ito_row, f);
  fputs("OPENMP DISPLAY ENVIRONMENT END\n", f);
  funlockfile(f);
  fflush(f);
}

OMP_API void omp_display_env(int verbose) {
  OMP_SETUP();
  ito__omp_display_env(verbose != 0);
}

/* ---- the current task ---------------------------------------------------------------
 * An ito thread keeps it in its stack's context word; a thread outside the
 * runtime in a thread-local. Code with no task yet is an initial task: the
 * program's (one for all ito threads that have none) or, on other OS
 * threads, one per thread. */
task ito__omp_root_initial;
#define root_initial ito__omp_root_initial
static __thread task *os_cur;
static __thread task os_initial;
static int started;

static void init_initial(task *t) {
  memset(t, 0, sizeof *t);
  t->kind = TASK_INITIAL;
  t->imp = t;
  t->icv = ito__omp_g.init;
}

static void init_root(void) { init_initial(&root_initial); }

void ito__omp_start(void) {
  if (__atomic_load_n(&started, __ATOMIC_ACQUIRE)) return;
  OMP_SETUP();
  int rc = ito_init();
  if (rc) ito__omp_fatal("cannot start the runtime (%s)", strerror(rc));
  __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
}

int ito__omp_member_tls_resolve(void) {
  int on = ito__dropin_tls_on(); /* (starts the runtime) */
  __atomic_store_n(&ito__omp_g.member_tls, on, __ATOMIC_RELAXED);
  return on;
}

task *ito__omp_cur(void) {
  void **slot = ito__omp_ctx();
  if (LIKELY(slot)) return *slot ? (task *)*slot : &root_initial;
  if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) {
    ito__omp_start(); /* on the main thread this makes it the root ito thread */
    slot = ito__omp_ctx();
    if (slot) return *slot ? (task *)*slot : &root_initial;
  }
  if (os_cur) return os_cur;
  if (os_initial.kind != TASK_INITIAL || !os_initial.icv.nthreads) init_initial(&os_initial);
  return &os_initial;
}

void ito__omp_set_cur(task *t) {
  void **slot = ito__omp_ctx();
  if (slot)
    *slot = t == &root_initial ? NULL : t;
  else
    os_cur = t == &os_initial ? NULL : t;
}

/* ---- waits -------------------------------------------------------------------------- */

static inline uint64_t half_of(uint64_t bit) {
  return bit == KID_WAIT_RUN ? KID_RUN_MASK : KID_ALIVE_MASK;
}

struct word_arg {
  uint64_t *word;
  uint64_t bit, mask;
  int *qlock;
  bool armed;
  bool stale; /* the last arming set the bit on a zero half: no waker saw it */
};

/* ito__omp_lend_wait's test: the half is zero. Armed, the waiter bit is set
 * in the word: whoever brings the half to zero sees it and, under qlock,
 * wakes the queue and clears the bit (ito__omp_kids_sub). A woken or poked
 * waiter may see the half zero before that waker has taken qlock; the
 * waker then still has the word and the queue to touch, in memory the
 * waiter frees or reuses once its wait ends. So the disarming (under
 * qlock) waits for the bit to be cleared whenever a waker saw it: the bit
 * set on a zero half that the arming did not make so. */
static int word_done(void *p, int how) {
  struct word_arg *w = p;
  if (how == WAIT_CHECK) return !(__atomic_load_n(w->word, __ATOMIC_ACQUIRE) & w->mask);
  if (how == WAIT_ARM) {
    w->armed = true;
    uint64_t old = __atomic_fetch_or(w->word, w->bit, __ATOMIC_ACQ_REL);
    w->stale = !(old & (w->bit | w->mask));
    return !(old & w->mask);
  }
  if (!w->armed) return 1;
  uint64_t v = __atomic_load_n(w->word, __ATOMIC_ACQUIRE);
  for (;;) {
    if (!(v & w->bit)) return 1;            /* a waker was done with it before we took qlock */
    if (!(v & w->mask) && !w->stale) break; /* zero while armed: a waker is on its way */
    if (__atomic_compare_exchange_n(w->word, &v, v & ~w->bit, true, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      return 1;
  }
  ito__dropin_unlock(w->qlock);
  /* (past 256 spins it yields: its OS thread may be off the CPU) */
  for (unsigned i = 0; __atomic_load_n(w->word, __ATOMIC_ACQUIRE) & w->bit; i++)
    i < 256 ? cpu_relax() : (void)sched_yield();
  /* ... and it has released qlock: done with this memory */
  ito__dropin_lock(w->qlock, ITO_DROPIN_LR_QUEUE);
  return 1;
}

void ito__omp_word_wait(uint64_t *word, uint64_t wait_bit, int *qlock, void **head, void **tail,
                        task *lendfor, bool any) {
  uint64_t mask = half_of(wait_bit);
  if (!(__atomic_load_n(word, __ATOMIC_ACQUIRE) & mask)) return;
  struct word_arg w = {word, wait_bit, mask, qlock, false, false};
  ito__omp_lend_wait(ito__omp_cur(), lendfor, any, qlock, head, tail, word_done, &w);
}

int ito__omp_kids_sub(uint64_t *word, uint64_t d, int *qlock, void **head, void **tail) {
  uint64_t old = __atomic_fetch_sub(word, d, __ATOMIC_ACQ_REL);
  uint64_t v = old - d;
  int zero = ((d & KID_RUN_MASK) && !(v & KID_RUN_MASK) ? KIDS_RUN_ZERO : 0) |
             ((d & KID_ALIVE_MASK) && !(v & KID_ALIVE_MASK) ? KIDS_ALIVE_ZERO : 0);
  uint64_t wake = ((old & KID_WAIT_RUN) && (zero & KIDS_RUN_ZERO) ? KID_WAIT_RUN : 0) |
                  ((old & KID_WAIT_ALIVE) && (zero & KIDS_ALIVE_ZERO) ? KID_WAIT_ALIVE : 0);
  if (!wake) return zero;
  /* the owner set the bit while the half was not zero: it does not leave
   * its wait before this clears the bit (word_done), and the unlock is the
   * last touch of its memory */
  ito__dropin_lock(qlock, ITO_DROPIN_LR_QUEUE);
  void *list = ito__dropin_wq_take(head, tail, -1);
  __atomic_fetch_and(word, ~wake, __ATOMIC_RELAXED);
  ito__dropin_unlock(qlock);
  ito__dropin_wq_wake(list);
  return zero;
}

void ito__omp_wait_kids(task *t, uint64_t wait_bit, bool any) {
  ito__omp_word_wait(&t->kids, wait_bit, &t->qlock, &t->qhead, &t->qtail, t, any);
}

void ito__omp_team_wait(team *tm, int (*pred)(void *), void *arg) {
  if (pred(arg)) return;
  ito__dropin_lock(&tm->cq_lock, ITO_DROPIN_LR_QUEUE);
  __atomic_fetch_add(&tm->cq_waiters, 1, __ATOMIC_SEQ_CST);
  while (!pred(arg)) {
    ito__dropin_wq_wait(&tm->cq_lock, &tm->cq_head, &tm->cq_tail, 0, CLOCK_MONOTONIC, NULL, NULL,
                        NULL);
    ito__dropin_lock(&tm->cq_lock, ITO_DROPIN_LR_QUEUE);
  }
  __atomic_fetch_sub(&tm->cq_waiters, 1, __ATOMIC_RELAXED);
  ito__dropin_unlock(&tm->cq_lock);
}

void ito__omp_team_notify(team *tm) {
  /* A waiter counts itself (a locked read-modify-write) before it tests its
   * predicate; the fence orders the caller's change before this read, so a
   * zero here means no waiter can miss the change. */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&tm->cq_waiters, __ATOMIC_RELAXED)) return;
  ito__dropin_lock(&tm->cq_lock, ITO_DROPIN_LR_QUEUE);
  void *list = ito__dropin_wq_take(&tm->cq_head, &tm->cq_tail, -1);
  ito__dropin_unlock(&tm->cq_lock);
  ito__dropin_wq_wake(list);
}

/* ---- the user API ------------------------------------------------------------------- */

/* Every task runs on a member's strand as that member (pending.c): one
 * load, for every kind of task. */
OMP_API int omp_get_thread_num(void) { return (int)ito__omp_cur()->id; }
OMP_API int omp_get_num_threads(void) {
  team *tm = ito__omp_cur()->team;
  return tm ? (int)tm->n : 1;
}
OMP_API int omp_get_max_threads(void) { return ito__omp_cur()->icv.nthreads; }
OMP_API void omp_set_num_threads(int n) { ito__omp_cur()->icv.nthreads = n > 0 ? n : 1; }
OMP_API int omp_in_parallel(void) {
  team *tm = ito__omp_cur()->team;
  return tm && tm->active_level > 0;
}
OMP_API int omp_get_level(void) {
  team *tm = ito__omp_cur()->team;
  return tm ? tm->level : 0;
}
OMP_API int omp_get_active_level(void) {
  team *tm = ito__omp_cur()->team;
  return tm ? tm->active_level : 0;
}

/* The task at nesting level `level` on the way out from t (level 0: the
 * initial task), or NULL. */
static task *ancestor(task *t, int level) {
  int cur = t->team ? t->team->level : 0;
  if (level < 0 || level > cur) return NULL;
  while (t->team && t->team->level > level) t = t->team->encountering;
  return t;
}
OMP_API int omp_get_ancestor_thread_num(int level) {
  task *t = ancestor(ito__omp_cur(), level);
  return t ? (int)t->id : -1;
}
OMP_API int omp_get_team_size(int level) {
  task *t = ancestor(ito__omp_cur(), level);
  return t ? (t->team ? (int)t->team->n : 1) : -1;
}

OMP_API void omp_set_dynamic(int v) { ito__omp_cur()->icv.dyn = v != 0; }
OMP_API int omp_get_dynamic(void) { return ito__omp_cur()->icv.dyn; }
OMP_API void omp_set_nested(int v) {
  OMP_SETUP();
  if (v && ito__omp_g.max_active_levels == 1) ito__omp_g.max_active_levels = MAX_LEVELS;
  if (!v) ito__omp_g.max_active_levels = 1;
}
OMP_API int omp_get_nested(void) {
  OMP_SETUP();
  return ito__omp_g.max_active_levels > 1;
}
OMP_API void omp_set_max_active_levels(int n) {
  OMP_SETUP();
  if (n >= 0) ito__omp_g.max_active_levels = n > MAX_LEVELS ? MAX_LEVELS : n;
}
OMP_API int omp_get_max_active_levels(void) {
  OMP_SETUP();
  return ito__omp_g.max_active_levels;
}
OMP_API int omp_get_supported_active_levels(void) { return MAX_LEVELS; }
OMP_API int omp_get_thread_limit(void) { return ito__omp_cur()->icv.thread_limit; }
OMP_API int omp_get_num_procs(void) {
  OMP_SETUP();
  return ito__omp_g.nprocs;
}
OMP_API int omp_in_final(void) { return ito__omp_cur()->final_; }
OMP_API int omp_get_cancellation(void) {
  OMP_SETUP();
  return ito__omp_cancellation;
}
OMP_API int omp_get_proc_bind(void) {
  OMP_SETUP();
  return ito__omp_g.proc_bind;
}
OMP_API int omp_get_num_places(void) { return ito__dropin_place_count(); }
/* the place of the worker running the thread now (a member may move between
 * workers where places are fewer than workers; docs/numa.md) */
OMP_API int omp_get_place_num(void) {
  return ito__dropin_place_count() ? ito__dropin_worker_place(ito_worker_id()) : -1;
}
OMP_API int omp_get_partition_num_places(void) { return ito__dropin_place_count(); }
OMP_API int omp_get_max_task_priority(void) {
  OMP_SETUP();
  return ito__omp_g.max_task_priority;
}
OMP_API int omp_get_num_teams(void) { return (int)ito__omp_cur()->num_teams + 1; }
OMP_API int omp_get_team_num(void) { return (int)ito__omp_cur()->team_num; }

OMP_API void omp_set_schedule(int kind, int chunk) {
  task *t = ito__omp_cur();
  int k = kind & ~(int)SCHED_MONOTONIC;
  if (k < SCHED_STATIC || k > SCHED_AUTO) return; /* not a schedule kind: ignored */
  t->icv.sched = kind;
  t->icv.chunk = chunk > 0 ? chunk : 0;
}
OMP_API void omp_get_schedule(int *kind, int *chunk) {
  task *t = ito__omp_cur();
  *kind = t->icv.sched;
  long c = t->icv.chunk;
  if (!c) c = (t->icv.sched & ~(int)SCHED_MONOTONIC) == SCHED_STATIC ? 0 : 1;
  *chunk = (int)c;
}

/* affinity-format-var (its expansion: affinity.c) */
OMP_API void omp_set_affinity_format(const char *format) {
  OMP_SETUP();
  snprintf(ito__omp_g.affinity_format, sizeof ito__omp_g.affinity_format, "%s", format);
}
OMP_API size_t omp_get_affinity_format(char *buffer, size_t size) {
  OMP_SETUP();
  size_t len = strlen(ito__omp_g.affinity_format);
  if (size) snprintf(buffer, size, "%s", ito__omp_g.affinity_format);
  return len;
}

OMP_API double omp_get_wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
OMP_API double omp_get_wtick(void) {
  struct timespec ts;
  clock_getres(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
