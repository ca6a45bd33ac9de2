/* Start-up and shut-down: the settings, the workers, the root thread.
 * Invariants at the top of runtime.h; design in docs/architecture.md. */
#define _GNU_SOURCE
#include "runtime.h"
#include "san.h"

#include "forkpart.h"
#include "config.h"
#include "elfsym.h"
#include "fiber.h"
#include "handle.h"
#include "hooks.h"
#include "idle.h"
#include "monitor.h"
#include "nodeq.h"
#include "observe.h"
#include "os.h"
#include "places.h"
#include "sched.h"
#include "switch.h"
#include "thread.h"
#include "topo.h"
#include "posix_hooks.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the scheduler's settings ------------------------------------------------------------ */

struct ito_settings ito__cfg;

static const struct ito_cfg_choice guard_words[] = {
    {"auto", GUARD_AUTO}, {"always", GUARD_ALWAYS}, {"never", GUARD_NEVER}, {0, 0}};
static const struct ito_cfg_choice fence_words[] = {{"asymmetric", 0}, {"symmetric", 1}, {0, 0}};
static const struct ito_cfg_choice wait_words[] = {{"passive", 0}, {"active", 1}, {0, 0}};

/* (a table: one row per variable, packed) */
/* clang-format off */
static const struct ito_cfg rows[] = {
    {.name = "ITO_NUM_WORKERS", .kind = ITO_CFG_INT, .dst = &ito__cfg.workers, .lo = 1,
     .hi = ITO_MAX_WORKERS, .dflt = "the usable CPUs",
     .what = "number of workers (the affinity mask's CPUs, capped by the cgroup CPU quota, by "
             "default)"},
    {.name = "ITO_STACK_SIZE", .kind = ITO_CFG_SIZE, .dst = &ito__cfg.stack_size,
     .lo = ITO_MIN_STACK, .hi = ITO_MAX_STACK, .dflt = "128K",
     .what = "stack size of a lightweight thread"},
    {.name = "ITO_STACK_GUARD", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.stack_guard,
     .choices = guard_words, .dflt = "auto", .what = "a guard page below each thread stack"},
    {.name = "ITO_STACK_CACHE", .kind = ITO_CFG_SIZE, .dst = &ito__cfg.stack_cache, .lo = 0,
     .hi = (size_t)1 << 40, .dflt = "40M",
     .what = "bytes of free thread stacks kept in memory; beyond, freed stacks give their pages "
             "back"},
    {.name = "ITO_DEQUE_FENCE", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.deque_fence,
     .choices = fence_words, .dflt = "asymmetric",
     .what = "symmetric: a fence in every pop instead of membarrier on steals"},
    {.name = "ITO_WAIT_POLICY", .kind = ITO_CFG_CHOICE, .dst = &ito__cfg.wait_active,
     .choices = wait_words, .dflt = "passive",
     .what = "active: idle workers never sleep"},
    {.name = "ITO_SPIN_US", .kind = ITO_CFG_INT, .dst = &ito__cfg.spin_us, .lo = 0,
     .hi = 10 * 1000 * 1000, .dflt = "50",
     .what = "microseconds an idle worker looks for work before it sleeps"},
};
/* clang-format on */

static void defaults(void *settings) {
  *(struct ito_settings *)settings = (struct ito_settings){
      .workers = ito__config_workers(),
      .stack_size = ITO_DEFAULT_STACK,
      .stack_guard = GUARD_AUTO,
      .stack_cache = ITO_DEFAULT_STACK_CACHE,
      .spin_us = 50,
  };
}

static void finish(void *settings) {
  struct ito_settings *s = settings;
  s->stack_size = (s->stack_size + 4095) & ~(size_t)4095;
}

ITO_CONFIG_MODULE(sched_config, rows, ito__cfg, defaults, finish);

/* ---- the runtime's state ----------------------------------------------------------------- */

int ito__rt_state_;
__thread worker *ito__tls_worker;

static int init_lock;
static ithread *root; /* the adopted main thread, while the runtime runs */
static struct idler *idlers[ITO_MAX_WORKERS];
static worker *all_workers[ITO_MAX_WORKERS]; /* kept across restarts */
static int
    made; /* 1 + the highest slot of all_workers ever filled (the monitor's thread or a start) */
extern const struct idle_ops ito__sched_idle_ops HIDDEN;

#define DEQUE_LOG2 20
#define SCHED_STACK (256UL << 10)

/* ---- workers ---------------------------------------------------------------------- */

/* A worker's memory: the structure, the deque's slots, the scheduler stack
 * (with a guard page). NULL when out of memory. */
static worker *worker_new(int id) {
  worker *w =
      mmap(NULL, sizeof(worker), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (w == MAP_FAILED) return NULL;
  memset(w, 0, sizeof *w);
  char *s = mmap(NULL, SCHED_STACK, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (s == MAP_FAILED || ito__deque_init(&w->dq, DEQUE_LOG2) != 0) {
    if (s != MAP_FAILED) munmap(s, SCHED_STACK);
    munmap(w, sizeof(worker));
    return NULL;
  }
  mprotect(s, 4096, PROT_NONE);
  w->id = id;
  w->sched_lo = s + 4096;
  w->sched_hi = s + SCHED_STACK;
  ito__vg_stack_register(w->sched_lo, w->sched_hi); /* for ever: workers' memory is kept */
  w->rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(id + 1) | 1;
  return w;
}

/* Back to a worker's state at start (its memory is kept across runs). */
static void worker_reset(worker *w, bool new_stacks) {
  ito__deque_reset(&w->dq);
  w->cur = NULL;
  w->post_fn = NULL;
  w->poll_pass = 0;
  w->extra = 0;
  if (new_stacks) w->fibers = (struct fiber_cache){NULL, 0}; /* of another size */
}

/* The process's CPUs when the runtime started (a bound worker's own mask
 * is one CPU). */
static cpu_set_t proc_cpus;
static int all_bound; /* every worker is bound (ITO_BIND=1, or an affinity asked for) */

const cpu_set_t *ito__process_cpus(void) { return &proc_cpus; }

/* ITO_BIND's rule: worker id runs on the (id mod n)-th of the n CPUs of
 * the process; -1 if it has none. */
int ito__worker_cpu(int id) {
  int n = CPU_COUNT(&proc_cpus), k = id % (n ? n : 1), seen = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &proc_cpus) && seen++ == k) return c;
  return -1;
}

/* Binds w's OS thread (kernel id tid) to its CPU. By the kernel id, not
 * glibc's pthread_t: with TLS per thread, the descriptor of worker 0's OS
 * thread (the program's main thread) is the root thread's block, whose tid
 * follows the worker that runs the root (tls.h, invariant 2), so binding
 * through it bound whichever worker ran main at the time. */
static void bind_to(worker *w, int tid) {
  if (tid <= 0) return;
  int pl = ito__worker_place(w->id);
  if (pl >= 0) { /* its place (places.h): only on the machine's own topology */
    if (ito__topo()->real)
      ito__os.syscall(SYS_sched_setaffinity, tid, sizeof(cpu_set_t), ito__place_cpus(pl));
    return;
  }
  int c = ito__worker_cpu(w->id);
  if (c < 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(c, &one);
  ito__os.syscall(SYS_sched_setaffinity, tid, sizeof one, &one);
}

static void bind_worker(worker *w) {
  if (ito__places_count() || LOAD_ACQ(&all_bound)) bind_to(w, (int)gettid());
}

void ito__bind_all(void) {
  if (LOAD_ACQ(&all_bound)) return;
  spin_lock(&init_lock, LR_INIT);
  if (!all_bound) {
    STORE_REL(&all_bound, 1); /* (workers started from now on bind themselves) */
    for (int i = 0; i < __atomic_load_n(&ito__nslots, __ATOMIC_ACQUIRE); i++) {
      worker *w = all_workers[i];
      if (w && w->os_tid) bind_to(w, w->os_tid);
    }
  }
  spin_unlock(&init_lock);
}

static void *sched_tsan_ctx(worker *w) {
#if ITO_TSAN
  if (!w->sched_tsan) w->sched_tsan = ito__tsan_new_ctx();
  return w->sched_tsan;
#else
  (void)w;
  return NULL;
#endif
}

static void first_sched(void *arg) {
  if (ASAN_ON) ito__asan_finish(NULL);
  ito__sched_loop(arg);
}

/* ---- extra workers (monitor.c): slots beyond the configured ones ------------------------ */

int ito__nslots;
int ito__slots_counted;

static void count_slot(int id) {
  int c = __atomic_load_n(&ito__slots_counted, __ATOMIC_RELAXED);
  while (id + 1 > c && !__atomic_compare_exchange_n(&ito__slots_counted, &c, id + 1, 1,
                                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

worker *ito__worker_slot(int id) {
  if (id < 0 || id >= ITO_MAX_WORKERS) return NULL;
  worker *w = all_workers[id];
  if (!w && !(w = all_workers[id] = worker_new(id))) return NULL;
  if (id >= made) made = id + 1;
  worker_reset(w, false);
  w->idle.id = id;
  ito__idle_init(&w->idle, id);
  idlers[id] = &w->idle;
  return w;
}

static void *worker_main(void *arg);

int ito__worker_launch(worker *w) {
  /* the slot's memory is set before any worker can count it */
  count_slot(w->id);
  int n = __atomic_load_n(&ito__nslots, __ATOMIC_RELAXED);
  ITO_ASSERT(w->id < ITO_MAX_WORKERS);
  if (w->id >= n)
    __atomic_store_n(&ito__nslots, w->id + 1, __ATOMIC_RELEASE); /* invariant 2: grows */
  w->started = 1;
  int rc = ito__os_thread(&w->os, 256 << 10, worker_main, w, ito__sig_on);
  if (rc) w->started = 0;
  return rc;
}

void ito__worker_join(worker *w) {
  if (w->started) {
    ito__os.pthread_join(w->os, NULL);
    w->started = 0;
  }
}

static void *worker_main(void *arg) {
  worker *w = arg;
  ito__tls_worker = w;
  w->os_tid = (int)gettid();
  ITO_ASSERT(!w->cur);
  ito__observe(OBSERVE_WORKER); /* its TLS block, signal mask, alternate stack */
  bind_worker(w);
  pthread_attr_t a;
  if (ito__os.pthread_getattr_np(ito__os.pthread_self(), &a) == 0) {
    pthread_attr_getstack(&a, &w->native_lo, &w->native_size);
    pthread_attr_destroy(&a);
  }
#if ITO_TSAN
  w->native_tsan = ito__tsan_current();
#endif
  void *fake = NULL;
  ito__enter_fresh(&w->native_sp, &fake, w->sched_lo, w->sched_hi, first_sched, w,
                   sched_tsan_ctx(w));
  ito__tls_worker = NULL;
  return NULL;
}

/* ---- the root ---------------------------------------------------------------------------- */

/* The thread that starts the runtime on the program's main thread becomes
 * the root lightweight thread of worker 0 and keeps its own stack. */
static fiber root_fiber;

/* The root keeps its OS thread outside what a drop-in library lets it
 * leave (ito__dropin_root_stay): asked before the start, applied at the
 * adoption unless signals are per thread (libito-pthread.so gives the
 * program's threads identities of their own). */
static int root_stay_asked, root_stay;
void ito__root_stay_ask(void) { STORE_RLX(&root_stay_asked, 1); }
bool ito__root_stays(void) { return LOAD_RLX(&root_stay) != 0; }

static int adopt_main(worker *w) {
  uint32_t idx = root_fiber.th.idx;
  memset(&root_fiber, 0, sizeof root_fiber);
  if (idx)
    root_fiber.th.idx = idx;
  else if (ito__handle_register(&root_fiber.th))
    return EAGAIN;
#if ITO_TSAN
  /* the root keeps the main thread's own context: the frames of main() and
   * its callers are on that context's shadow stack */
  root_fiber.tsan = ito__tsan_current();
#endif
  sched_tsan_ctx(w);
  root = ito__thread_adopt_root(&root_fiber);
  root_fiber.kind = FIBER_NATIVE;
  /* the policy and priority main runs with (set before the runtime started),
   * kept for a drop-in library to read back and hand to its children */
  int sched[2];
  ito__os_sched(sched);
  root->policy = sched[0];
  root->prio = sched[1];
  pthread_attr_t a;
  if (ito__os.pthread_getattr_np(ito__os.pthread_self(), &a) == 0) {
    void *lo;
    size_t sz;
    pthread_attr_getstack(&a, &lo, &sz);
    root_fiber.lo = lo;
    root_fiber.hi = (char *)lo + sz;
    pthread_attr_destroy(&a);
  }
  w->cur = &root_fiber;
  STORE_RLX(&root_stay, LOAD_RLX(&root_stay_asked) && !ito__sig_on);
  if (root_stay) {
    root_fiber.home = w;
    ito__set_homes();
  }
  w->os = ito__os.pthread_self();
  w->os_tid = (int)gettid();
  ito__tls_worker = w;
  ITO_ASSERT(w->cur == &root_fiber && root_fiber.thread == root);
  ito__observe(OBSERVE_WORKER); /* the root keeps main's block (tls.h, invariant 4) and mask */
  bind_worker(w);
  return 0;
}

static void unadopt_main(worker *w) {
  ito__setxid_unrepresent(); /* worker 0's block off glibc's list of threads */
  w->cur = NULL;
  ito__tls_worker = NULL;
  if (root) {
    root->flags = 0;
    ito__handle_retire(root); /* handles of this run's root go stale */
    root = NULL;
  }
}

ithread *ito__root_thread(void) { return LOAD_ACQ(&root); }

bool ito__is_root(void) {
  worker *w = cur_worker();
  return w && w->cur && w->cur->thread && (w->cur->thread->flags & TH_ROOT);
}

/* ---- start and stop ------------------------------------------------------------------------ */

/* Invariant 1 of observe.h: the observers of one point, by order. */
ITO_REGISTRY(ito_observe, struct ito_observer);

static bool order_at(const void *e, const void *point, int *k) {
  const struct ito_observer *o = e;
  *k = o->order;
  return o->point == *(const int *)point;
}

void ito__observe(int point) {
  ITO_ASSERT(point >= 0 && point < OBSERVE_POINTS);
  ITO_ASSERT(point == OBSERVE_WORKER || spin_held(&init_lock));
  int at = INT_MIN;
  for (const struct ito_observer *o;
       (o = ito__registry_next(ITO_REGISTRY_ALL(ito_observe), ITO_REGISTRY_N(ito_observe), order_at,
                               &point, at, false));) {
    o->fn();
    at = o->order;
  }
}

/* Stops and joins the worker OS threads started so far (init lock held). */
static void stop_workers(int n) {
  __atomic_store_n(&ito__stopping, 1, __ATOMIC_RELEASE);
  ito__idle_wake_all();
  for (int i = 0; i < n; i++) ito__worker_join(all_workers[i]);
}

/* 0, or ENOMEM / EAGAIN with nothing left running (invariant 1). */
/* Invariant 1: the one way state changes. */
static void set_state(int to) {
  ITO_ASSERT(spin_held(&init_lock));
  int from = ito__rt_state_;
  ITO_ASSERT((from == RT_OFF && to == RT_STARTING) ||
             (from == RT_STARTING && (to == RT_RUNNING || to == RT_OFF)) ||
             (from == RT_RUNNING && to == RT_STOPPING) || (from == RT_STOPPING && to == RT_OFF));
  (void)from;
  __atomic_store_n(&ito__rt_state_, to, __ATOMIC_RELEASE);
}

static int start(void) {
  static size_t last_stack;
  ito__config_read_modules();
  ito__san_setup(); /* before the first switch: a program's AddressSanitizer */
  int n = (int)ito__cfg.workers;
  if (sched_getaffinity(0, sizeof proc_cpus, &proc_cpus) != 0) CPU_ZERO(&proc_cpus);
  ito__asym_fence = !ito__cfg.deque_fence && ito__membarrier_register();
  bool new_stacks = last_stack && last_stack != ito__cfg.stack_size;
  last_stack = ito__cfg.stack_size;
  ito__fiber_setup(ito__cfg.stack_size, ito__cfg.stack_guard, ito__cfg.stack_cache);
  ito__tls_setup();
  for (int i = 0; i < n; i++) {
    if (!all_workers[i] && !(all_workers[i] = worker_new(i))) return ENOMEM;
    if (i >= made) made = i + 1;
    worker_reset(all_workers[i], new_stacks);
    idlers[i] = &all_workers[i]->idle;
  }
  for (int i = n; i < made && new_stacks; i++) /* slots of extra workers */
    if (all_workers[i]) all_workers[i]->fibers = (struct fiber_cache){NULL, 0};
  ito__workers = all_workers;
  ito__nworkers = n;
  ito__observe(OBSERVE_SETUP); /* the recorder, NUMA, places, node queues */
  count_slot(n - 1);
  __atomic_store_n(&ito__nslots, n, __ATOMIC_RELEASE);
  __atomic_store_n(&ito__stopping, 0, __ATOMIC_RELAXED);
  ito__idle_setup(idlers, n, &ito__sched_idle_ops, ito__cfg.wait_active, ito__cfg.spin_us * 1000L,
                  LOAD_RLX(&ito__hooks_on));
  /* C++ exception globals follow lightweight threads across switches when
   * the C++ runtime is loaded (docs/dropin.md section 5) */
  ito__find_eh();
  bool is_main = (int)gettid() == (int)getpid();
  if (is_main && adopt_main(all_workers[0]) != 0) return EAGAIN;
  for (int i = is_main ? 1 : 0; i < n; i++) {
    if (ito__worker_launch(all_workers[i])) {
      stop_workers(i);
      if (is_main) unadopt_main(all_workers[0]);
      return EAGAIN;
    }
  }
  ito__observe(OBSERVE_LAUNCHED); /* signals, the monitor, set*id */
  void (*at_start)(void) = LOAD_ACQ(&ito__rt_at_start);
  if (at_start) at_start();
  return 0;
}

static void call_setup(void *fn, void *arg) {
  (void)arg;
  ((void (*)(void))fn)();
}

void (*ito__rt_at_start)(void);

int ito__ensure(void) {
  if (LIKELY(ito__running())) return 0;
  /* Every drop-in library loaded is set up before the runtime starts: its
   * table of libc's calls, its configuration rows and defaults are read at
   * start. A constructor of another library may start the runtime before
   * the drop-in library's own constructor has run (docs/dropin.md section
   * 2). Outside the lock: a library's set-up may start the runtime itself
   * (its last step), which then comes back here. */
  ito__elf_each("__ito_dropin_setup", call_setup, NULL);
  spin_lock(&init_lock, LR_INIT);
  int rc = 0;
  if (ito__rt_state_ != RT_RUNNING) {
    set_state(RT_STARTING);
    rc = start();
    set_state(rc ? RT_OFF : RT_RUNNING);
    if (!rc) ito__observe(OBSERVE_RUNNING);
  }
  spin_unlock(&init_lock);
  return rc;
}

int ito_init(void) { return ito__ensure(); }

int ito_num_workers(void) {
  if (ito__ensure() != 0) return -1;
  return ito__nworkers;
}

int ito_worker_id(void) {
  worker *w = cur_worker();
  return w ? w->id : -1;
}

/* Waits for every other lightweight thread to end, brings the caller back to
 * its own OS thread and stops the workers. */
int ito_finalize(void) {
  if (!ito__running()) return 0;
  worker *w = cur_worker();
  if (w && !ito__is_root())
    return EPERM; /* only the root thread or an outside thread may stop the runtime */
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
    ito__suspend(ACT_MIGRATE, all_workers[0], NULL, NULL);
    w = cur_worker();
  }
  spin_lock(&init_lock, LR_INIT);
  set_state(RT_STOPPING);
  ito__monitor_stop(); /* it starts and joins extra workers: first */
  stop_workers(__atomic_load_n(&ito__nslots, __ATOMIC_ACQUIRE));
  ito__observe(OBSERVE_STOPPED);
  if (w) unadopt_main(w);
  set_state(RT_OFF);
  spin_unlock(&init_lock);
  return 0;
}

/* ---- fork: the child's runtime (atfork.h, invariant 3) ------------------------------------- */

static void runtime_fork_child(worker *w, ithread *self) {
  (void)self;
  int old = w->id;
  if (old != 0) { /* the caller's worker becomes worker 0 */
    worker *z = all_workers[0];
    all_workers[0] = w;
    all_workers[old] = z;
    if (z) z->id = old;
    w->id = 0;
  }
  bool orphan = !root || root->flags & TH_GHOST;
  for (int i = 0; i < made; i++) {
    worker *x = all_workers[i];
    if (!x) continue;
    if (x != w) { /* its OS thread is the parent's */
      x->started = 0;
      x->cur = NULL;
    }
    ito__deque_drop_all(&x->dq);
    memset(&x->rq, 0, sizeof x->rq);
    x->mail = NULL;
    x->mail_lock = 0;
    x->kwait = 0; /* (the monitor of the parent may have held kwait_lock) */
    x->kwait_lock = 0;
    x->created = x->ended = 0;
    x->extra = 0;
  }
  memset(&ito__preempted, 0, sizeof ito__preempted);
  w->created = orphan ? 1 : 0; /* the caller, alive (thread.h, invariant 4) */
  idlers[0] = &w->idle;
  ito__nworkers = 1;
  __atomic_store_n(&ito__nslots, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&ito__stopping, 0, __ATOMIC_RELAXED);
  ito__idle_setup(idlers, 1, &ito__sched_idle_ops, ito__cfg.wait_active, ito__cfg.spin_us * 1000L,
                  LOAD_RLX(&ito__hooks_on));
  init_lock = 0;
  if (orphan) __atomic_store_n(&root, NULL, __ATOMIC_RELEASE);
  if (ito__places_count() || all_bound) bind_to(w, w->os_tid); /* worker 0's CPU now */
}
ITO_FORK_PART(runtime_fork, .child_order = FORK_RUNTIME, .child = runtime_fork_child);
