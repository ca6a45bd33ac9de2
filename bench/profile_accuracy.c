/* The profiler's accuracy (docs/profile.md), a benchmark: programs whose
 * work T1 and span Tinf are known in closed form, each run in a region of
 * its own, and the figures the profiler measured next to the closed forms.
 *
 *   bin(n, K, A): the binary-tree program of the six-systems study
 *     (bench/bin.cpp gives the recurrences), with a = the time of one
 *     consume(A), measured in this process before the run:
 *       T1 = a / (2K-1) (3K (2K)^n - (K+1)),
 *       Tinf = a (2n+1) for K = 1, a / (K-1) (2 K^(n+1) - (K+1)) for K > 1;
 *   chains: P lightweight threads of M consume(A) each: parallelism P;
 *   handoff: two threads that take turns M times through a mutex and a
 *     condition variable, one consume(A) a turn: a serial chain,
 *     parallelism 1.
 *
 *   ITO_PROFILE=1 profile_accuracy [n=10] [K=2] [A=20000] [M=200]
 *
 * Prints one CSV line per program:
 *   program,workers,t1_closed_s,t1_s,t1_ratio,tinf_closed_s,tinf_s,tinf_ratio,parallelism_expected,parallelism
 * (a ratio is measured / closed form; chains and handoff give their
 * expected parallelism instead of a span). Without ITO_PROFILE it says so
 * and exits 2. */
#include <ito/ito.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t sink; /* atomic adds: tasks add to it at once */
#define SINK(x) __atomic_add_fetch(&sink, (x), __ATOMIC_RELAXED)

static __attribute__((noinline)) uint64_t consume(long a) {
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (long i = 0; i < a; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x));
  }
  return x;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The time of one consume(A): the median of five batches of about 2 ms. */
static double time_of_consume(long A) {
  double t0 = now_s();
  long calls = 0;
  while (now_s() - t0 < 0.002) {
    SINK(consume(A));
    calls++;
  }
  double m[5];
  for (int r = 0; r < 5; r++) {
    double s = now_s();
    for (long i = 0; i < calls; i++) SINK(consume(A));
    m[r] = (now_s() - s) / calls;
  }
  qsort(m, 5, sizeof m[0], cmp);
  return m[2];
}

/* ---- bin ---- */
struct bin_arg {
  int n, k;
  long a;
};
static void bin(int n, int k, long a);
static void bin_task(void *p) {
  struct bin_arg *b = p;
  bin(b->n, b->k, b->a);
}
static void bin(int n, int k, long a) {
  SINK(consume(a));
  if (n <= 0) return;
  for (int i = 0; i < k; i++) {
    ito_tg_t tg;
    ito_tg_init(&tg);
    struct bin_arg c = {n - 1, k, a};
    ito_tg_fork(&tg, bin_task, &c, sizeof c);
    bin(n - 1, k, a);
    ito_tg_join(&tg);
    SINK(consume(a));
  }
}

/* ---- chains ---- */
static long chain_a, chain_m;
static void *chain(void *p) {
  (void)p;
  for (long i = 0; i < chain_m; i++) SINK(consume(chain_a));
  return NULL;
}

/* ---- handoff ---- */
static ito_mutex_t mu;
static ito_cond_t cv;
static int turn;
static void *handoff(void *p) {
  int me = (int)(intptr_t)p;
  for (long i = 0; i < chain_m; i++) {
    ito_mutex_lock(&mu);
    while (turn != me) ito_cond_wait(&cv, &mu);
    ito_mutex_unlock(&mu);
    SINK(consume(chain_a));
    ito_mutex_lock(&mu);
    turn = 1 - me;
    ito_cond_broadcast(&cv);
    ito_mutex_unlock(&mu);
  }
  return NULL;
}

static void row(const char *name, int P, double t1c, double tinfc, double parx) {
  struct ito_profile f;
  if (ito_profile_get(name, &f) != 0) {
    fprintf(stderr, "profile_accuracy: no figures for %s\n", name);
    exit(1);
  }
  printf("%s,%d,%.6f,%.6f,%.3f,%.6f,%.6f,%.3f,%.2f,%.2f\n", name, P, t1c, f.work,
         t1c > 0 ? f.work / t1c : 0, tinfc, f.span, tinfc > 0 ? f.span / tinfc : 0, parx,
         f.parallelism);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10;
  int K = argc > 2 ? atoi(argv[2]) : 2;
  long A = argc > 3 ? atol(argv[3]) : 20000;
  long M = argc > 4 ? atol(argv[4]) : 200;
  if (n < 0 || K < 1 || A < 1 || M < 1) {
    fprintf(stderr, "usage: profile_accuracy [n>=0] [K>=1] [A>=1] [M>=1]\n");
    return 2;
  }
  if (ito_init() != 0) return 1;
  struct ito_profile probe;
  if (ito_profile_get(NULL, &probe) == ENOTSUP) {
    fprintf(stderr, "profile_accuracy: set ITO_PROFILE (for example ITO_PROFILE=1)\n");
    return 2;
  }
  int P = ito_num_workers();
  printf(
      "program,workers,t1_closed_s,t1_s,t1_ratio,tinf_closed_s,tinf_s,tinf_ratio,"
      "parallelism_expected,parallelism\n");

  double a = time_of_consume(A);
  ito_profile_begin("bin");
  bin(n, K, A);
  ito_profile_end("bin");
  double t1 = a / (2 * K - 1) * (3.0 * K * pow(2.0 * K, n) - (K + 1));
  double tinf = K == 1 ? a * (2 * n + 1) : a / (K - 1) * (2 * pow(K, n + 1) - (K + 1));
  row("bin", P, t1, tinf, t1 / tinf);

  chain_a = A;
  chain_m = M;
  ito_thread_t th[64];
  int nc = P < 64 ? P : 64;
  a = time_of_consume(A);
  ito_profile_begin("chains");
  for (int i = 0; i < nc; i++) ito_create(chain, NULL, &th[i]);
  for (int i = 0; i < nc; i++) ito_join(th[i], NULL);
  ito_profile_end("chains");
  row("chains", P, a * M * nc, a * M, nc);

  ito_mutex_init(&mu);
  ito_cond_init(&cv);
  a = time_of_consume(A);
  ito_profile_begin("handoff");
  ito_create(handoff, (void *)(intptr_t)0, &th[0]);
  ito_create(handoff, (void *)(intptr_t)1, &th[1]);
  ito_join(th[0], NULL);
  ito_join(th[1], NULL);
  ito_profile_end("handoff");
  row("handoff", P, a * M * 2, a * M * 2, 1);
  ito_finalize();
  return 0;
}
