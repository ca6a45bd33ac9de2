/* Start-up and shut-down: the environment, the workers, the root thread.
 * Design: docs/architecture.md. */
#define _GNU_SOURCE
#include "internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

runtime ito__rt;
int ito__rt_asym_fence;
struct ito_idle_word ito__rt_idle;
__thread worker *ito__tls_worker;

#define MAX_WORKERS 1024
#define MIN_STACK (16UL << 10)
#define MAX_STACK (1UL << 30)
#define DEFAULT_STACK (128UL << 10)
#define DEQUE_LOG2 20
#define SCHED_STACK (256UL << 10)

void ito__fatal(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n > sizeof buf - 1) n = sizeof buf - 1;
  ssize_t r = ito__os.write(2, "ito: ", 5);
  r = ito__os.write(2, buf, (size_t)n);
  r = ito__os.write(2, "\n", 1);
  (void)r;
  abort();
}

/* A bad setting stops start-up with a message that names it. */
static void env_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void env_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ito: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  _exit(2);
}

long ito__futex_wait(int *addr, int val, const struct timespec *rel) {
  return ito__os.syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, rel, NULL, 0);
}
long ito__futex_wake(int *addr, int n) {
  return ito__os.syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}


/* ---- environment ---------------------------------------------------------------- */

static const char *env(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

static long parse_int(const char *name, const char *v, long lo, long hi) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  while (*end && isspace((unsigned char)*end)) end++;
  if (errno || end == v || *end || x < lo || x > hi)
    env_error("%s=%s is not valid: expected a whole number from %ld to %ld", name, v, lo, hi);
  return x;
}

static size_t parse_size(const char *name, const char *v, size_t lo, size_t hi) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  unsigned long long mul = 1;
  if (end != v && *end) {
    switch (tolower((unsigned char)*end)) {
      case 'k': mul = 1ULL << 10; end++; break;
      case 'm': mul = 1ULL << 20; end++; break;
      case 'g': mul = 1ULL << 30; end++; break;
      default: break;
    }
    if ((*end == 'b' || *end == 'B') && mul == 1ULL) end++;
    else if ((*end == 'i' || *end == 'I') && (end[1] == 'b' || end[1] == 'B')) end += 2;
    else if (*end == 'b' || *end == 'B') end++;
  }
  if (errno || end == v || *end || v[0] == '-' || x > hi / mul || x * mul < lo)
    env_error("%s=%s is not valid: expected a size in bytes from %zuK to %zuM, optionally with a "
              "K, M or G suffix",
              name, v, lo >> 10, hi >> 20);
  return (size_t)(x * mul);
}

/* CPUs the process may use: the affinity mask, capped by a cgroup CPU quota. */
static int usable_cpus(void) {
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0) n = 1;
  char path[512] = "", line[512];
  FILE *f = fopen("/proc/self/cgroup", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "0::", 3) == 0) {
        line[strcspn(line, "\n")] = 0;
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
    long period = 0;
    int got = fscanf(q, "%63s %ld", quota, &period);
    fclose(q);
    if (got == 2 && strcmp(quota, "max") != 0 && period > 0) {
      long qv = atol(quota);
      int lim = (int)((qv + period - 1) / period);
      if (lim >= 1 && lim < n) n = lim;
    }
    break;
  }
  FILE *q1 = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r");
  if (q1) {
    long qv = -1, period = 0;
    if (fscanf(q1, "%ld", &qv) != 1) qv = -1;
    fclose(q1);
    FILE *p1 = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r");
    if (p1) {
      if (fscanf(p1, "%ld", &period) != 1) period = 0;
      fclose(p1);
    }
    if (qv > 0 && period > 0) {
      int lim = (int)((qv + period - 1) / period);
      if (lim >= 1 && lim < n) n = lim;
    }
  }
  return n;
}

static int default_workers;
void ito__dropin_default_workers(int n) { default_workers = n; }

static void read_env(void) {
  const char *v;
  ito__rt.nworkers = usable_cpus();
  if (default_workers > 0 && default_workers < ito__rt.nworkers) ito__rt.nworkers = default_workers;
  if ((v = env("ITO_NUM_WORKERS")))
    ito__rt.nworkers = (int)parse_int("ITO_NUM_WORKERS", v, 1, MAX_WORKERS);
  ito__rt.stack_size = DEFAULT_STACK;
  if ((v = env("ITO_STACK_SIZE"))) ito__rt.stack_size = parse_size("ITO_STACK_SIZE", v, MIN_STACK, MAX_STACK);
  ito__rt.stack_size = (ito__rt.stack_size + 4095) & ~4095UL;
  ito__rt.bind = 0;
  if ((v = env("ITO_BIND"))) ito__rt.bind = (int)parse_int("ITO_BIND", v, 0, 1);
  ito__rt.guard_mode = 0;
  if ((v = env("ITO_STACK_GUARD"))) {
    if (!strcmp(v, "auto")) ito__rt.guard_mode = 0;
    else if (!strcmp(v, "always")) ito__rt.guard_mode = 1;
    else if (!strcmp(v, "never")) ito__rt.guard_mode = 2;
    else env_error("ITO_STACK_GUARD=%s is not valid: expected auto, always or never", v);
  }
  ito__rt.wait_active = 0;
  if ((v = env("ITO_WAIT_POLICY"))) {
    if (!strcasecmp(v, "passive")) ito__rt.wait_active = 0;
    else if (!strcasecmp(v, "active")) ito__rt.wait_active = 1;
    else env_error("ITO_WAIT_POLICY=%s is not valid: expected passive (idle workers sleep after "
                   "spinning ITO_SPIN_US) or active (idle workers never sleep)", v);
  }
  ito__rt.spin_ns = 50 * 1000L;
  if ((v = env("ITO_SPIN_US")))
    ito__rt.spin_ns = parse_int("ITO_SPIN_US", v, 0, 10 * 1000 * 1000) * 1000L;
  /* adaptive spin: up to 4 ms (docs/idle.md, "How long to spin") */
  ito__rt.spin_max_ns = ito__rt.spin_ns > 4000000L || ito__rt.spin_ns == 0 ? ito__rt.spin_ns
                                                                            : 4000000L;
  /* Each guarded stack costs two memory mappings; keep most of the kernel's
   * limit for the program itself. */
  long maxmap = 65530;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (f) {
    if (fscanf(f, "%ld", &maxmap) != 1) maxmap = 65530;
    fclose(f);
  }
  ito__rt.guard_budget = maxmap > 8192 ? (maxmap - 8192) / 2 : 0;
}

/* ---- workers ---------------------------------------------------------------------- */

static void *map_or_die(size_t len, const char *what) {
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) ito__fatal("cannot map memory for %s: %s", what, strerror(errno));
  return m;
}

static worker *worker_new(int id) {
  worker *w = map_or_die(sizeof(worker), "a worker");
  memset(w, 0, sizeof *w);
  w->id = id;
  w->mask = (1ULL << DEQUE_LOG2) - 1;
  w->slots = map_or_die(sizeof(uintptr_t) << DEQUE_LOG2, "a deque");
  char *s = map_or_die(SCHED_STACK, "a scheduler stack");
  mprotect(s, 4096, PROT_NONE);
  w->sched_lo = s + 4096;
  w->sched_hi = s + SCHED_STACK;
  w->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(id + 1) | 1;
  return w;
}

static void bind_worker(worker *w) {
  if (!ito__rt.bind) return;
  cpu_set_t set, one;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  int n = CPU_COUNT(&set), k = w->id % (n ? n : 1), seen = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    if (seen++ == k) {
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      ito__os.pthread_setaffinity_np(ito__os.pthread_self(), sizeof one, &one);
      return;
    }
  }
}

static void first_sched(void *arg) {
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  ito__sched_loop(arg);
}

static void *worker_main(void *arg) {
  worker *w = arg;
  ito__tls_worker = w;
  w->os_tid = (int)gettid();
  ito__altstack_setup(w);
  bind_worker(w);
  pthread_attr_t a;
  if (ito__os.pthread_getattr_np(ito__os.pthread_self(), &a) == 0) {
    pthread_attr_getstack(&a, &w->native_lo, &w->native_size);
    pthread_attr_destroy(&a);
  }
  fiber tmp;
  tmp.hi = w->sched_hi;
  ito__ctx_make(&tmp, first_sched);
#if ITO_ASAN
  /* the scheduler stack may be a previous run's: frames that never returned
   * left their redzones poisoned */
  ASAN_UNPOISON_MEMORY_REGION(w->sched_lo, (size_t)(w->sched_hi - w->sched_lo));
  void *fake = NULL;
  ito__asan_start(&fake, w->sched_lo, (size_t)(w->sched_hi - w->sched_lo));
#endif
#if ITO_TSAN
  w->native_tsan = ito__tsan_current();
  if (!w->sched_tsan) w->sched_tsan = ito__tsan_new_ctx();
#endif
  TSAN_TO_CTX(w->sched_tsan);
  ito__ctx_jump(&w->native_sp, tmp.sp, w);
#if ITO_ASAN
  ito__asan_finish(fake);
#endif
  ito__tls_worker = NULL;
  return NULL;
}

/* Called by a worker's scheduler when the runtime stops. */
HIDDEN void ito__worker_stop(worker *w) __attribute__((noreturn));
void ito__worker_stop(worker *w) {
  void *dummy, *sp = w->native_sp;
  w->native_sp = NULL;
#if ITO_ASAN
  ito__asan_start(NULL, w->native_lo, w->native_size);
#endif
  TSAN_TO_CTX(w->native_tsan);
  ito__ctx_jump(&dummy, sp, NULL);
  __builtin_unreachable();
}

/* The thread that starts the runtime on the program's main thread becomes
 * the root lightweight thread of worker 0 and keeps its own stack. */
static void adopt_main(worker *w) {
  static fiber root_fiber;
  uint32_t gen = root_fiber.th.gen;
  memset(&root_fiber, 0, sizeof root_fiber);
  root_fiber.th.gen = gen + 1;
#if ITO_TSAN
  /* the root keeps the main thread's own context: the frames of main() and
   * its callers are on that context's shadow stack. Worker 0's scheduler
   * stack gets a context of its own. */
  root_fiber.tsan = ito__tsan_current();
  if (!w->sched_tsan) w->sched_tsan = ito__tsan_new_ctx();
#endif
  ithread *t = ito__thread_init(&root_fiber);
  t->flags = TH_ROOT;
  t->keys = ito__take_os_keys(); /* values main set before the runtime started */
  root_fiber.kind = FIBER_NATIVE;
  pthread_attr_t a;
  if (ito__os.pthread_getattr_np(ito__os.pthread_self(), &a) == 0) {
    void *lo;
    size_t sz;
    pthread_attr_getstack(&a, &lo, &sz);
    root_fiber.lo = lo;
    root_fiber.hi = (char *)lo + sz;
    pthread_attr_destroy(&a);
  }
  ito__rt.root = t;
  w->cur = &root_fiber;
  w->os = ito__os.pthread_self();
  w->os_tid = (int)gettid();
  ito__tls_worker = w;
  ito__altstack_setup(w);
  bind_worker(w);
}

static void start(void) {
  read_env();
  ito__rt_asym_fence =
      ito__os.syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  const char *fence = env("ITO_DEQUE_FENCE");
  if (fence) {
    if (!strcmp(fence, "symmetric")) ito__rt_asym_fence = 0;
    else if (strcmp(fence, "asymmetric") != 0)
      env_error("ITO_DEQUE_FENCE=%s is not valid: expected asymmetric or symmetric", fence);
  }
  ito__install_segv();
  int n = ito__rt.nworkers;
  if (!ito__rt.workers) ito__rt.workers = calloc(MAX_WORKERS, sizeof(worker *));
  if (!ito__rt.workers) ito__fatal("out of memory starting the runtime");
  for (int i = 0; i < n; i++)
    if (!ito__rt.workers[i]) ito__rt.workers[i] = worker_new(i);
  atomic_store(&ito__rt.stop, 0);
  __atomic_store_n(&ito__rt_idle.v, ito__rt_asym_fence ? 0 : IDLE_SYM, __ATOMIC_RELAXED);
  ito__rt.sleep_top = NULL;
  for (int i = 0; i < n; i++) {
    worker *w = ito__rt.workers[i];
    w->spinning = 0;
    w->ws_hint = -1;
    w->on_list = 0;
    w->wake_word = 0;
    w->spin_ns = ito__rt.spin_ns;
    w->fence_pops = ito__rt_asym_fence ? 0 : 1 << 30;
  }
  /* C++ exception globals follow lightweight threads across switches when
   * the C++ runtime is loaded (docs/dropin.md section 5) */
  if (!ito__eh_get) ito__eh_get = (void *(*)(void))dlsym(RTLD_DEFAULT, "__cxa_get_globals");
  int is_main = (int)gettid() == (int)getpid();
  ito__rt.root_is_main = is_main;
  if (is_main) adopt_main(ito__rt.workers[0]);
  for (int i = is_main ? 1 : 0; i < n; i++) {
    worker *w = ito__rt.workers[i];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 << 10);
    int rc = ito__os.pthread_create(&w->os, &a, worker_main, w);
    pthread_attr_destroy(&a);
    if (rc) ito__fatal("cannot start worker %d: %s", i, strerror(rc));
    w->started = 1;
  }
}

int ito__ensure(void) {
  if (LIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) == 2)) return 0;
  spin_lock(&ito__rt.init_lock);
  if (ito__rt.state != 2) {
    ito__rt.state = 1;
    start();
    __atomic_store_n(&ito__rt.state, 2, __ATOMIC_RELEASE);
  }
  spin_unlock(&ito__rt.init_lock);
  return 0;
}

int ito_init(void) { return ito__ensure(); }

int ito_num_workers(void) {
  ito__ensure();
  return ito__rt.nworkers;
}

int ito_worker_id(void) {
  worker *w = cur_worker();
  return w ? w->id : -1;
}

/* Waits for every other lightweight thread to end, brings the caller back to
 * its own OS thread and stops the workers. */
int ito_finalize(void) {
  if (__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2) return 0;
  worker *w = cur_worker();
  if (w && (!w->cur || !w->cur->thread || !(w->cur->thread->flags & TH_ROOT)))
    return EPERM; /* only the root thread or an outside thread may stop the runtime */
  HIDDEN long ito__live_threads(void);
  while (ito__live_threads() > 0) {
    if (w) {
      ito_yield();
    } else {
      struct timespec ts = {0, 100000};
      ito__os.nanosleep(&ts, NULL);
    }
  }
  w = cur_worker();
  if (w && w->id != 0) {
    ito__suspend(ACT_MIGRATE, ito__rt.workers[0], NULL, NULL);
    w = cur_worker();
  }
  spin_lock(&ito__rt.init_lock);
  ito__rt.state = 3;
  atomic_store(&ito__rt.stop, 1);
  ito__wake_all();
  for (int i = 0; i < ito__rt.nworkers; i++) {
    worker *x = ito__rt.workers[i];
    if (x->started) {
      ito__os.pthread_join(x->os, NULL);
      x->started = 0;
    }
  }
  if (w) {
    w->cur = NULL;
    ito__tls_worker = NULL;
    if (ito__rt.root) {
      ito__rt.root->flags = 0;
      ito__rt.root = NULL;
    }
  }
  __atomic_store_n(&ito__rt.state, 0, __ATOMIC_RELEASE);
  spin_unlock(&ito__rt.init_lock);
  return 0;
}
