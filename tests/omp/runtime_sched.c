/* schedule(runtime) under the OMP_SCHEDULE of the environment (ctest runs
 * this program once per kind: static, static,K, dynamic[,K], guided[,K],
 * auto, monotonic:/nonmonotonic: prefixes). Loops in a region, combined
 * parallel for (GOMP_parallel_loop_runtime), unsigned long long, ordered
 * with schedule(runtime), and nowait. Every iteration runs once; when
 * OMP_SCHEDULE says "static,K" the chunks must go round-robin in thread
 * order, as the specification requires of a static schedule with a chunk
 * size. Ordered regions must run in iteration order. */
#include "omptest.h"
#include <ctype.h>

#define N 3000

static int cnt[N], owner[N];

/* The chunk size of "static,K" (with an optional monotonic: or
 * nonmonotonic: prefix), or 0. */
static int static_chunk(void) {
  const char *s = getenv("OMP_SCHEDULE");
  if (!s) return 0;
  const char *c = strchr(s, ':');
  if (c) s = c + 1;
  while (isspace((unsigned char)*s)) s++;
  if (strncasecmp(s, "static", 6)) return 0;
  s = strchr(s, ',');
  return s ? atoi(s + 1) : 0;
}

static void reset(void) {
  memset(cnt, 0, sizeof cnt);
  memset(owner, -1, sizeof owner);
}

static void hit(long k) {
  if (k < 0 || k >= N) {
    CHECK(k >= 0 && k < N);
    return;
  }
  AINC(&cnt[k]);
  owner[k] = omp_get_thread_num();
}

static void verify(const char *what, long n, int nthr) {
  long bad = omptest_all_eq(cnt, n, 1);
  if (bad >= 0) fprintf(stderr, "%s: iteration %ld ran %d times\n", what, bad, cnt[bad]);
  CHECK(bad < 0);
  int chunk = static_chunk();
  if (chunk > 0)
    for (long k = 0; k < n; k++)
      if (owner[k] != (k / chunk) % nthr) {
        fprintf(stderr, "%s: OMP_SCHEDULE=%s: iteration %ld in thread %d, not %ld\n", what,
                getenv("OMP_SCHEDULE"), k, owner[k], (k / chunk) % nthr);
        CHECK(!"round-robin static chunks");
        break;
      }
  printf("%-24s %ld iterations: ok\n", what, n);
}

int main(void) {
  const char *env = getenv("OMP_SCHEDULE");
  printf("OMP_SCHEDULE=%s (static chunk %d)\n", env ? env : "(unset)", static_chunk());
  int nthr = 1;
#pragma omp parallel
#pragma omp single
  nthr = omp_get_num_threads();

  reset();
#pragma omp parallel
  {
#pragma omp for schedule(runtime)
    for (int i = 0; i < N; i++) hit(i);
  }
  verify("for", N, nthr);

  reset();
#pragma omp parallel for schedule(runtime)
  for (int i = 0; i < N; i++) hit(i);
  verify("parallel for", N, nthr);

  reset();
#pragma omp parallel for schedule(runtime)
  for (long i = 10 * N; i > 0; i -= 10) hit((10 * N - i) / 10);
  verify("parallel for, step -10", N, nthr);

  reset();
#pragma omp parallel
  {
#pragma omp for schedule(runtime) nowait
    for (unsigned long long u = 1ULL << 50; u < (1ULL << 50) + 3ULL * N; u += 3)
      hit((long)((u - (1ULL << 50)) / 3));
  }
  verify("ull for nowait", N, nthr);

  reset();
#pragma omp parallel for schedule(runtime) collapse(2)
  for (int i = 0; i < 50; i++)
    for (int j = 0; j < 60; j++) hit(i * 60 + j);
  verify("collapse(2)", N, nthr);

  /* Ordered with a runtime schedule: the ordered parts in iteration
   * order, recorded with a ticket. */
  {
    static int seq[N];
    int next = 0, bad = 0;
#pragma omp parallel for schedule(runtime) ordered
    for (int i = 0; i < N; i++) {
      int x = i * 2;
#pragma omp ordered
      seq[next++] = x;
    }
    for (int i = 0; i < N; i++) bad += seq[i] != 2 * i;
    printf("ordered: %d out of order\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* Many runtime loops in one region, nowait, mixing types. */
  {
    long sum = 0;
#pragma omp parallel reduction(+ : sum)
    for (int r = 0; r < 200; r++) {
#pragma omp for schedule(runtime) nowait
      for (int i = 0; i < 100; i++) sum += i;
#pragma omp for schedule(runtime) nowait
      for (unsigned long long u = 0; u < 100; u++) sum += (long)u;
    }
    printf("400 runtime loops: %ld\n", sum);
    CHECK_EQ(sum, 400L * 4950);
  }
  return omptest_finish("runtime_sched");
}
