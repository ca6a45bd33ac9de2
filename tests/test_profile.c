/* The profiler (docs/profile.md) on programs whose graph is known: the
 * figures it reports for each region have the shape of that graph, and
 * its counts are exact. Checked are shapes (a parallelism near the
 * graph's, whatever the workers) and counts, never seconds.
 *
 *   test_profile shapes [LOOSE]  chains, a fan, a tree, a blocking hand-off,
 *                         the region API's errors, a restart of the runtime
 *                         (LOOSE multiplies the shapes' tolerances)
 *   test_profile overflow many short slices: more trace records than fit
 *   test_profile off      without ITO_PROFILE: the API is inert
 *   test_profile plain    a tree; prints its result (the same with or
 *                         without the profiler)
 *   test_profile stretch  with a baseline: stretch in the figures back
 *   test_profile exit     returns from main without ito_finalize, a thread
 *                         parked: the profile is written at exit
 *   test_profile load     trees beside busy processes it starts itself (two
 *                         per CPU): each tree's span and work near its
 *                         nodes' own times on the CPU
 *
 * tests/profile/check.sh runs it with ITO_PROFILE and reads the files. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static uint64_t sink; /* atomic adds: tasks add to it at once */
#define SINK(x) __atomic_add_fetch(&sink, (x), __ATOMIC_RELAXED)

/* About a = 80,000 dependent multiply-adds: 40-120 us (large against
 * the runtime's own code around it, also under an emulator). */
static __attribute__((noinline)) uint64_t consume(long a) {
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (long i = 0; i < a; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

#define A 80000

static struct ito_profile get(const char *tag) {
  struct ito_profile f;
  CHECK_EQ(ito_profile_get(tag, &f), 0);
  printf("  %-8s parallelism %6.2f  spawns %llu  creates %llu  parks %llu\n", tag ? tag : "(run)",
         f.parallelism, f.spawns, f.creates, f.parks);
  CHECK(f.work > 0 && f.span > 0 && f.span <= f.work * 1.05);
  CHECK(f.burdened_span >= f.span && f.elapsed > 0);
  return f;
}

/* The tolerance's factor: 1, or the second argument of `shapes`. On two
 * workers or more, parallel strands slow each other down (they share the
 * machine: caches, a core's other half) by as much as the machine's load
 * makes them, and the graph's shape shows through that noise only
 * roughly: tests/profile/check.sh checks the shapes closely on one worker
 * and loosely on two. */
static double loose = 1;

static void near(double got, double want, double tol) {
  tol *= loose;
  if (tol > 0.9) tol = 0.9;
  if (got < want * (1 - tol) || got > want * (1 + tol)) {
    fprintf(stderr, "parallelism %.3f, expected %.3f within %.0f%%\n", got, want, tol * 100);
    CHECK(0);
  }
}

/* Each task of equal work measures its own time on a CPU: on a loaded
 * machine one of them may take longer than the others (a busy sibling
 * hyperthread, a cold cache), and the shape to expect is then the sum of
 * their times over the longest (summed over a region's instances), which
 * the profiler sees too. */
static double own_cpu[8];
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static void own_shape(int n, double *sum, double *longest) {
  for (int i = 0; i < n; i++) {
    *sum += own_cpu[i];
    if (own_cpu[i] > *longest) *longest = own_cpu[i];
  }
  memset(own_cpu, 0, sizeof own_cpu);
}
static double own_parallelism(int n) {
  double sum = 0, longest = 0;
  own_shape(n, &sum, &longest);
  printf("  (own shape %.2f)\n", sum / longest);
  return sum / longest;
}

/* ---- chains: independent threads of equal work ---- */
static void *chain(void *p) {
  int slot = (int)(intptr_t)p;
  double t0 = cpu_now();
  for (int i = 0; i < 160; i++) SINK(consume(A));
  own_cpu[slot] = cpu_now() - t0;
  return NULL;
}

/* ---- a fan: one group forks 8 equal children ---- */
static void leaf(void *p) {
  int slot = *(int *)p;
  double t0 = cpu_now();
  for (int i = 0; i < 40; i++) SINK(consume(A));
  own_cpu[slot] = cpu_now() - t0;
}

/* ---- a tree of depth d: 2^d - 1 forks ---- */
static void tree(int d);
static void tree_task(void *p) { tree(*(int *)p); }
static void tree(int d) {
  SINK(consume(A));
  if (d == 0) return;
  ito_tg_t tg;
  ito_tg_init(&tg);
  int c = d - 1;
  ito_tg_fork(&tg, tree_task, &c, sizeof c);
  tree(d - 1);
  ito_tg_join(&tg);
}

/* ---- a blocking hand-off: a serial chain through a mutex and a condition ---- */
static ito_mutex_t mu;
static ito_cond_t cv;
static int turn;
static void *handoff(void *p) {
  int me = (int)(intptr_t)p;
  for (int i = 0; i < 30; i++) {
    ito_mutex_lock(&mu);
    while (turn != me) ito_cond_wait(&cv, &mu);
    ito_mutex_unlock(&mu);
    SINK(consume(A));
    ito_mutex_lock(&mu);
    turn = 1 - me;
    ito_cond_broadcast(&cv);
    ito_mutex_unlock(&mu);
  }
  return NULL;
}

static void *nothing(void *p) { return p; }

static void shapes(void) {
  CHECK_EQ(ito_init(), 0);
  /* warm: the first thread's stack is mapped and touched on the caller's
   * path, which would put it on every chain's (a real cost: not measured
   * here) */
  ito_thread_t w;
  CHECK_EQ(ito_create(nothing, NULL, &w), 0);
  CHECK_EQ(ito_join(w, NULL), 0);

  /* the region API's errors */
  CHECK_EQ(ito_profile_begin(NULL), EINVAL);
  CHECK_EQ(ito_profile_begin(""), EINVAL);
  CHECK_EQ(ito_profile_end("never"), EINVAL);
  struct ito_profile f;
  CHECK_EQ(ito_profile_get("never", &f), ENOENT);
  CHECK_EQ(ito_profile_get(NULL, NULL), EINVAL);
  char longtag[100];
  memset(longtag, 'x', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = 0;
  CHECK_EQ(ito_profile_begin(longtag), EINVAL);

  /* regions that overlap: all, then chains inside it, all ends first */
  CHECK_EQ(ito_profile_begin("all"), 0);
  CHECK_EQ(ito_profile_begin("all"), EINVAL); /* already open */
  CHECK_EQ(ito_profile_begin("chains"), 0);
  ito_thread_t th[4];
  for (int i = 0; i < 4; i++) CHECK_EQ(ito_create(chain, (void *)(intptr_t)i, &th[i]), 0);
  for (int i = 0; i < 4; i++) CHECK_EQ(ito_join(th[i], NULL), 0);
  CHECK_EQ(ito_profile_end("all"), 0);
  CHECK_EQ(ito_profile_end("chains"), 0);
  f = get("chains");
  near(f.parallelism, own_parallelism(4), 0.25);
  CHECK_EQ(f.creates, 4);
  CHECK_EQ(f.instances, 1);

  /* a fan, twice: the region sums its instances */
  double fan_sum = 0, fan_span = 0;
  for (int r = 0; r < 2; r++) {
    CHECK_EQ(ito_profile_begin("fan"), 0);
    ito_tg_t tg;
    ito_tg_init(&tg);
    for (int i = 0; i < 8; i++) ito_tg_fork(&tg, leaf, &i, sizeof i);
    ito_tg_join(&tg);
    CHECK_EQ(ito_profile_end("fan"), 0);
    double longest = 0;
    own_shape(8, &fan_sum, &longest);
    fan_span += longest;
  }
  f = get("fan");
  printf("  (own shape %.2f)\n", fan_sum / fan_span);
  near(f.parallelism, fan_sum / fan_span, 0.25);
  CHECK_EQ(f.spawns, 16);
  CHECK_EQ(f.instances, 2);

  /* a tree nested inside a region */
  CHECK_EQ(ito_profile_begin("tree"), 0);
  tree(6);
  CHECK_EQ(ito_profile_end("tree"), 0);
  f = get("tree");
  CHECK_EQ(f.spawns, 63);
  /* 64 leaves and 63 inner nodes of equal work on a path of 7: about 18.
   * Under ThreadSanitizer every fork starts a thread of its own (lazy.c),
   * and the sanitizer's fiber set-up, about 150 us a thread, lies between
   * the fork's events, on the path, against nodes of 20 us: the shape is
   * the sanitizer's, and only the counts are checked. */
#if !defined(__SANITIZE_THREAD__)
  if (!(f.parallelism > 8 / loose && f.parallelism < 30))
    fprintf(stderr, "tree: work %g span %g parallelism %g\n", f.work, f.span, f.parallelism);
  CHECK(f.parallelism > 8 / loose && f.parallelism < 30);
#else
  puts("  tree: parallelism not checked under ThreadSanitizer (thread set-up on the path)");
#endif

  /* a serial chain of blocking hand-offs */
  CHECK_EQ(ito_mutex_init(&mu), 0);
  CHECK_EQ(ito_cond_init(&cv), 0);
  CHECK_EQ(ito_profile_begin("handoff"), 0);
  CHECK_EQ(ito_create(handoff, (void *)(intptr_t)0, &th[0]), 0);
  CHECK_EQ(ito_create(handoff, (void *)(intptr_t)1, &th[1]), 0);
  CHECK_EQ(ito_join(th[0], NULL), 0);
  CHECK_EQ(ito_join(th[1], NULL), 0);
  CHECK_EQ(ito_profile_end("handoff"), 0);
  f = get("handoff");
  near(f.parallelism, 1, 0.2);
  CHECK(f.parks > 0);

  f = get(NULL);
  CHECK_EQ(f.instances, 1);
  /* P: the workers, and any extra worker the monitor started beside one
   * it found blocked (under ThreadSanitizer on a loaded machine, a worker
   * asleep in the sanitizer's own lock), counted from its start */
  CHECK(f.workers >= ito_num_workers());
  double total = f.work + f.overhead + f.idle + f.idle_ready + f.blocked + f.descheduled;
  /* the split of P x Tp has no gap (about: the clocks are read apart) */
  CHECK(total > 0.8 * ito_num_workers() * f.elapsed && total < 1.2 * f.workers * f.elapsed);
  CHECK_EQ(ito_finalize(), 0);

  /* a second run: recorded afresh, its regions its own */
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_profile_get("fan", &f), ENOENT);
  CHECK_EQ(ito_profile_begin("again"), 0);
  ito_tg_t tg;
  ito_tg_init(&tg);
  for (int i = 0; i < 4; i++) ito_tg_fork(&tg, leaf, &i, sizeof i);
  ito_tg_join(&tg);
  CHECK_EQ(ito_profile_end("again"), 0);
  f = get("again");
  CHECK_EQ(f.spawns, 4);
  near(f.parallelism, own_parallelism(4), 0.25);
  CHECK_EQ(ito_finalize(), 0);
  puts("test_profile shapes: OK");
}

/* Two threads that yield to each other: three trace records a switch. */
static void *yielder(void *p) {
  long n = (long)(intptr_t)p;
  for (long i = 0; i < n; i++) ito_yield();
  return NULL;
}

static void overflow(void) {
  CHECK_EQ(ito_init(), 0);
  ito_thread_t a, b;
  CHECK_EQ(ito_create(yielder, (void *)(intptr_t)40000, &a), 0);
  CHECK_EQ(ito_create(yielder, (void *)(intptr_t)40000, &b), 0);
  CHECK_EQ(ito_join(a, NULL), 0);
  CHECK_EQ(ito_join(b, NULL), 0);
  struct ito_profile f;
  CHECK_EQ(ito_profile_get(NULL, &f), 0);
  CHECK(f.work > 0);
  CHECK_EQ(f.creates, 2);
  CHECK_EQ(ito_finalize(), 0);
  puts("test_profile overflow: OK");
}

static void off(void) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_profile_begin("x"), 0);
  CHECK_EQ(ito_profile_end("x"), 0);
  struct ito_profile f;
  CHECK_EQ(ito_profile_get(NULL, &f), ENOTSUP);
  CHECK_EQ(ito_profile_begin(""), EINVAL);
  CHECK_EQ(ito_finalize(), 0);
  puts("test_profile off: OK");
}

/* A computation whose output must not change with the profiler on. */
static void plain(void) {
  CHECK_EQ(ito_init(), 0);
  tree(8);
  printf("test_profile plain: %llu\n", (unsigned long long)sink);
  CHECK_EQ(ito_finalize(), 0);
}

/* Returns from main with the runtime running: the profile is written at
 * exit, with a thread still parked. */
static ito_mutex_t never_mu;
static ito_cond_t never_cv;
static void *parked_forever(void *p) {
  ito_mutex_lock(&never_mu);
  for (;;) ito_cond_wait(&never_cv, &never_mu);
  return p;
}

static void no_finalize(void) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_mutex_init(&never_mu), 0);
  CHECK_EQ(ito_cond_init(&never_cv), 0);
  ito_thread_t t;
  CHECK_EQ(ito_create(parked_forever, NULL, &t), 0);
  tree(6);
  puts("test_profile exit: returning from main");
}

/* With ITO_PROFILE_BASELINE (a CSV of this mode on one worker): the figures
 * back carry work-time stretch, for the run and for the region; without,
 * none. */
static void stretch(void) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_profile_begin("tree"), 0);
  tree(8);
  CHECK_EQ(ito_profile_end("tree"), 0);
  struct ito_profile f;
  bool baseline = getenv("ITO_PROFILE_BASELINE") != NULL; /* (else: making one) */
  CHECK_EQ(ito_profile_get(NULL, &f), 0);
  CHECK(baseline ? f.stretch > 0 : f.stretch == 0);
  CHECK_EQ(ito_profile_get("tree", &f), 0);
  CHECK(baseline ? f.stretch > 0 : f.stretch == 0);
  CHECK_EQ(ito_finalize(), 0);
  puts("test_profile stretch: OK");
}

/* ---- collapsing: a tree of forks far finer than the recorder ---- */
static long fine_forks; /* counted by the program itself (atomic adds) */
static long fine(int n);
struct fine_arg {
  int n;
  long r;
};
static void fine_task(void *p) {
  struct fine_arg *a = *(struct fine_arg **)p; /* (the fork copies its argument: a pointer) */
  a->r = fine(a->n);
}
static long fine(int n) {
  if (n < 2) return n;
  struct fine_arg a = {n - 1, 0}, *pa = &a;
  ito_tg_t tg;
  ito_tg_init(&tg);
  __atomic_add_fetch(&fine_forks, 1, __ATOMIC_RELAXED);
  ito_tg_fork(&tg, fine_task, &pa, sizeof pa);
  long b = fine(n - 2);
  ito_tg_join(&tg);
  return a.r + b;
}

/* A chain of small trees one after the other: the span is the sum of
 * theirs; 8 of them forked at once. 1,000 trees: a chain's span is then
 * about 1 ms, against which the odd millisecond that a loaded machine adds
 * to one strand (a page fault's, an interrupt's time on the thread's
 * clock) moves the fan's parallelism by a factor of 2, not of 5; 300
 * under ThreadSanitizer, where each fork is a thread of its own. */
#if defined(__SANITIZE_THREAD__)
static const int fine_trees = 300;
#else
static const int fine_trees = 1000;
#endif
static void fine_chain(void *p) {
  (void)p;
  for (int i = 0; i < fine_trees; i++) CHECK_EQ(fine(9), 34);
}

/* fib(24) by forks, three times: the spawns counted exactly whether the
 * subtrees were collapsed or not; collapsed ones only where
 * ITO_PROFILE_COLLAPSE allows (the second argument: expect some, or
 * none). Then a fan of 8 chains of small trees, whose parallelism
 * (printed for tests/profile/check.sh to hold against an exact run's) is
 * 8 times a small tree's: estimated from the trees recorded whole when
 * they are collapsed. */
static void collapse(bool expect) {
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_profile_begin("fine"), 0);
  for (int i = 0; i < 3; i++) CHECK_EQ(fine(24), 46368);
  CHECK_EQ(ito_profile_end("fine"), 0);
  long nfine = fine_forks;
  struct ito_profile f, g;
  CHECK_EQ(ito_profile_begin("fan8"), 0);
  ito_tg_t tg;
  ito_tg_init(&tg);
  for (int i = 0; i < 8; i++) ito_tg_fork(&tg, fine_chain, NULL, 0);
  ito_tg_join(&tg);
  CHECK_EQ(ito_profile_end("fan8"), 0);
  CHECK_EQ(ito_profile_get("fan8", &g), 0);
  CHECK(g.work > 0 && g.span > 0 && g.span <= g.work * 1.05);
  CHECK_EQ((long)g.spawns, fine_forks - nfine + 8);
  CHECK_EQ(ito_profile_get("fine", &f), 0);
  CHECK_EQ((long)f.spawns, nfine);
  CHECK(f.collapsed_forks <= f.spawns);
  if (!(f.work > 0 && f.span > 0 && f.span <= f.work * 1.05))
    fprintf(stderr, "fine: work %g span %g\n", f.work, f.span);
  CHECK(f.work > 0 && f.span > 0 && f.span <= f.work * 1.05);
#if defined(__SANITIZE_THREAD__)
  expect = false; /* every fork is a thread of its own there (docs/fibers.md): none collapses */
#endif
  if (expect) {
    CHECK(f.collapsed > 0 && f.collapsed_forks >= f.collapsed);
  } else {
    CHECK_EQ(f.collapsed, 0);
    CHECK_EQ(f.collapsed_forks, 0);
  }
  printf(
      "test_profile collapse: %llu spawns, %llu collapsed in %llu subtrees; fan8 parallelism "
      "%.2f\n",
      f.spawns, f.collapsed_forks, f.collapsed, g.parallelism);
  CHECK_EQ(ito_finalize(), 0);
}

/* ---- load: the figures while other processes share the CPUs ---- */

/* Two busy processes per CPU, forked before the runtime starts (one
 * thread to copy); each dies with this process, whatever ends it. */
static pid_t busy[64];
static int nbusy;
static void load_start(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  nbusy = cpus < 1 ? 2 : cpus > 32 ? 64 : (int)(2 * cpus);
  pid_t parent = getpid();
  for (int i = 0; i < nbusy; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0); /* (the parent is gone already) */
      alarm(600);                        /* (and in any case) */
      for (volatile unsigned long x = 0;; x++) {
      }
    }
    busy[i] = pid;
  }
}
static void load_stop(void) {
  for (int i = 0; i < nbusy; i++) kill(busy[i], SIGKILL);
  for (int i = 0; i < nbusy; i++) waitpid(busy[i], NULL, 0);
}

/* The tree of `shapes`, each node timing its own consume on its thread's
 * CPU clock: returns the time on the CPU of its longest path (its own
 * time plus the longer of its two subtrees'), and adds its own to
 * tree_cpu_ns. */
static uint64_t tree_cpu_ns;
static double cpu_tree(int d);
struct cpu_tree_arg {
  int d;
  double path;
};
static void cpu_tree_task(void *p) {
  struct cpu_tree_arg *a = *(struct cpu_tree_arg **)p; /* (the fork copies a pointer) */
  a->path = cpu_tree(a->d);
}
static double cpu_tree(int d) {
  double t0 = cpu_now();
  SINK(consume(A));
  double own = cpu_now() - t0;
  __atomic_add_fetch(&tree_cpu_ns, (uint64_t)(own * 1e9), __ATOMIC_RELAXED);
  if (d == 0) return own;
  struct cpu_tree_arg c = {d - 1, 0}, *pc = &c;
  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_fork(&tg, cpu_tree_task, &pc, sizeof pc);
  double me = cpu_tree(d - 1);
  ito_tg_join(&tg);
  return own + (c.path > me ? c.path : me);
}

/* Trees of 127 nodes on paths of 7, each in a region of its own, beside
 * the busy processes (tests/profile/check.sh runs it on more workers than
 * CPUs): the span the profiler reports is the longest path's time on the
 * CPU, what the OS took of it reported apart, within generous bounds (the
 * runtime's forks lie on the path too: under ThreadSanitizer a thread's
 * set-up each, as in the shapes' tree), and so is the work. A recorder
 * that counts a fork's owner's wait for a thief that the OS took off its
 * CPU holding the owner's steal lock as the owner's code gives one tree
 * in about thirty a span of 3 to 30 times its path (the spin's time on
 * the CPU). Counts and ratios of times on the CPU are checked, never
 * times. */
#define LOAD_TREES 40
static void load(void) {
  load_start();
  CHECK_EQ(ito_init(), 0);
#if defined(__SANITIZE_THREAD__)
  /* every fork is a thread of its own, whose set-up (the sanitizer's, 0.2
   * to 0.5 ms under load) lies between the fork's events, on the path and
   * in the work: span and work are checked from below only */
  const double most = 1e9, most_work = 1e9, most_burden = 1e9;
#else
  const double most = 3, most_work = 2, most_burden = 50e-6;
#endif
  /* warm: the stacks the steals take are mapped and touched (under
   * AddressSanitizer, set up) the first time on the thief's path: a real
   * cost of the first trees, not measured here */
  for (int i = 0; i < 3; i++) (void)cpu_tree(6);
  double lo = 1e9, hi = 0;
  for (int i = 0; i < LOAD_TREES; i++) {
    char tag[16];
    snprintf(tag, sizeof tag, "load%d", i);
    tree_cpu_ns = 0;
    CHECK_EQ(ito_profile_begin(tag), 0);
    double path = cpu_tree(6);
    CHECK_EQ(ito_profile_end(tag), 0);
    struct ito_profile f;
    CHECK_EQ(ito_profile_get(tag, &f), 0);
    double work = (double)tree_cpu_ns * 1e-9, r = f.span / path;
    printf(
        "  %-6s span %.3f ms, the path on the CPU %.3f ms (%.2f); work %.3f ms, the nodes on "
        "the CPU %.3f ms (%.2f); off the CPU %.3f ms\n",
        tag, f.span * 1e3, path * 1e3, r, f.work * 1e3, work * 1e3, f.work / work,
        f.descheduled * 1e3);
    fflush(stdout);
    CHECK_EQ(f.spawns, 63);
    /* the burden per fork on the path (6 forks): a steal's and a sync's
     * cost, less what the OS took (a few microseconds; the recorder's own
     * wait for a preempted owner's mark, or a sleeper's way back to a
     * CPU, made it a time slice: 150 to 500 us a fork under load) */
    double per_fork = (f.burdened_span - f.span) / 6;
    printf("         burden %.2f us a fork\n", per_fork * 1e6);
    if (!(per_fork >= 0 && per_fork < most_burden)) {
      fprintf(stderr, "%s: a burden of %.1f us a fork on the path\n", tag, per_fork * 1e6);
      load_stop();
      CHECK(0);
    }
    if (!(r > 0.5 && r < most && f.work > 0.7 * work && f.work < most_work * work)) {
      fprintf(stderr,
              "%s: span %.6f s against a path of %.6f s on the CPU, work %.6f s against %.6f s\n",
              tag, f.span, path, f.work, work);
      load_stop();
      CHECK(0);
    }
    if (r < lo) lo = r;
    if (r > hi) hi = r;
  }
  CHECK_EQ(ito_finalize(), 0);
  load_stop();
  printf(
      "test_profile load: %d trees beside %d busy processes, span / path on the CPU %.2f to "
      "%.2f: OK\n",
      LOAD_TREES, nbusy, lo, hi);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "shapes";
  if (!strcmp(mode, "shapes")) {
    if (argc > 2) loose = atof(argv[2]);
    shapes();
  } else if (!strcmp(mode, "overflow"))
    overflow();
  else if (!strcmp(mode, "off"))
    off();
  else if (!strcmp(mode, "plain"))
    plain();
  else if (!strcmp(mode, "exit"))
    no_finalize();
  else if (!strcmp(mode, "stretch"))
    stretch();
  else if (!strcmp(mode, "collapse"))
    collapse(argc > 2 && !strcmp(argv[2], "some"));
  else if (!strcmp(mode, "load"))
    load();
  else {
    fprintf(
        stderr,
        "usage: test_profile shapes|overflow|off|plain|exit|stretch|collapse [some|none]|load\n");
    return 2;
  }
  return 0;
}
