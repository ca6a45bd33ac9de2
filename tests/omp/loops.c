/* Worksharing loops on every schedule: static, static with a chunk,
 * dynamic, guided (with and without chunks), auto, runtime, monotonic:
 * and nonmonotonic: modifiers; in a region and combined (parallel for).
 * Loop shapes: int ascending, int descending with step -3, long with step
 * 5 below -2^32, unsigned long long ascending across 2^63 and descending
 * from 2^40 (the GOMP_loop_ull_* entry points), a runtime step,
 * collapse(2), zero-trip and fewer iterations than threads. Every
 * iteration must run exactly once. For static schedules the ownership
 * rules of the specification are checked: chunks round-robin in thread
 * order; without a chunk, at most one contiguous block per thread, block
 * sizes within one of each other. Also: nowait loops (with the static
 * same-schedule guarantee), 300 consecutive nowait dynamic loops (threads
 * several loops apart), and a lastprivate-free loop in an if(0) region. */
#include "omptest.h"

#define PRAGMA(x) _Pragma(#x)
#define N 2000
#define MAXT 64

static int cnt[N];
static int owner[N];
static int runtime_zero = 0, runtime_three = 3, runtime_step = -7;

static void reset(void) {
  memset(cnt, 0, sizeof cnt);
  for (int i = 0; i < N; i++) owner[i] = -1;
}

static void hit(long k, long n) {
  if (k < 0 || k >= n || k >= N) {
    CHECK(k >= 0 && k < n && k < N);
    return;
  }
  AINC(&cnt[k]);
  owner[k] = omp_get_thread_num();
}

/* Each of n iterations ran once; chunk > 0: static round-robin ownership;
 * chunk == 0: static blocks; chunk < 0: no ownership rule. */
static void verify(const char *sched, const char *shape, long n, int nthr, int chunk) {
  long bad = omptest_all_eq(cnt, n, 1);
  if (bad >= 0) {
    fprintf(stderr, "%s %s: iteration %ld ran %d times\n", sched, shape, bad, cnt[bad]);
    CHECK(bad < 0);
  }
  for (long k = n; k < N; k++) CHECK_EQ(cnt[k], 0);
  if (chunk > 0) {
    for (long k = 0; k < n; k++)
      if (owner[k] != (k / chunk) % nthr) {
        fprintf(stderr, "%s %s: iteration %ld ran in thread %d, not %ld\n", sched, shape, k,
                owner[k], (k / chunk) % nthr);
        CHECK(owner[k] == (k / chunk) % nthr);
        break;
      }
  } else if (chunk == 0) {
    int first[MAXT], last[MAXT], size[MAXT];
    for (int t = 0; t < MAXT; t++) first[t] = -1, last[t] = -1, size[t] = 0;
    for (long k = 0; k < n; k++) {
      int t = owner[k];
      if (t < 0 || t >= MAXT) continue;
      if (first[t] < 0)
        first[t] = k;
      else if (last[t] != k - 1)
        CHECK(!"static: a thread got two blocks");
      last[t] = k;
      size[t]++;
    }
    int mn = 1 << 30, mx = 0;
    for (int t = 0; t < nthr && t < MAXT; t++) {
      if (size[t] < mn) mn = size[t];
      if (size[t] > mx) mx = size[t];
    }
    if (mx - mn > 1) {
      fprintf(stderr, "%s %s: static blocks of %d to %d iterations\n", sched, shape, mn, mx);
      CHECK(mx - mn <= 1);
    }
  }
  printf("%-32s %-18s %ld iterations: ok\n", sched, shape, n);
}

#define SHAPES(NAME, SCHED, CHUNK)                                                            \
  static void NAME(void) {                                                                    \
    const char *s = #SCHED;                                                                   \
    int nthr = 0;                                                                             \
    reset();                                                                                  \
    _Pragma("omp parallel shared(nthr)") {                                                    \
      _Pragma("omp single") nthr = omp_get_num_threads();                                     \
      PRAGMA(omp for SCHED)                                                                   \
      for (int i = 0; i < N; i++) hit(i, N);                                                  \
    }                                                                                         \
    verify(s, "int up", N, nthr, CHUNK);                                                      \
    reset();                                                                                  \
    PRAGMA(omp parallel for SCHED)                                                            \
    for (int i = 0; i < N; i++) hit(i, N);                                                    \
    verify(s, "parallel for", N, nthr, CHUNK);                                                \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      PRAGMA(omp for SCHED)                                                                   \
      for (int i = 2 * N; i > -N / 2; i -= 3) hit((2 * N - i) / 3, 1667);                     \
    }                                                                                         \
    verify(s, "int down -3", 1667, nthr, CHUNK);                                              \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      PRAGMA(omp for SCHED)                                                                   \
      for (long i = -5000000000L; i < -5000000000L + 5L * 1500; i += 5)                       \
        hit((i + 5000000000L) / 5, 1500);                                                     \
    }                                                                                         \
    verify(s, "long step 5", 1500, nthr, CHUNK);                                              \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      const unsigned long long base = (1ULL << 63) - 7ULL * 600;                              \
      PRAGMA(omp for SCHED)                                                                   \
      for (unsigned long long u = base; u < base + 7ULL * 1234; u += 7)                       \
        hit((long)((u - base) / 7), 1234);                                                    \
    }                                                                                         \
    verify(s, "ull up across 2^63", 1234, nthr, CHUNK);                                       \
    reset();                                                                                  \
    PRAGMA(omp parallel for SCHED)                                                            \
    for (unsigned long long u = (1ULL << 40) + 3; u > (1ULL << 40) + 3 - 4ULL * 1777; u -= 4) \
      hit((long)(((1ULL << 40) + 3 - u) / 4), 1777);                                          \
    verify(s, "ull down", 1777, nthr, CHUNK);                                                 \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      PRAGMA(omp for SCHED)                                                                   \
      for (long i = 1000; i > -3000; i += runtime_step) hit((1000 - i) / 7, 572);             \
    }                                                                                         \
    verify(s, "runtime step -7", 572, nthr, CHUNK);                                           \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      PRAGMA(omp for SCHED collapse(2))                                                       \
      for (int i = 0; i < 37; i++)                                                            \
        for (int j = -5; j < 22; j++) hit(i * 27 + (j + 5), 999);                             \
    }                                                                                         \
    verify(s, "collapse(2)", 999, nthr, CHUNK);                                               \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      PRAGMA(omp for SCHED)                                                                   \
      for (int i = 0; i < runtime_zero; i++) hit(i, 0);                                       \
      PRAGMA(omp for SCHED)                                                                   \
      for (unsigned long long u = 10; u < 10ULL + runtime_zero; u++) hit(0, 0);               \
    }                                                                                         \
    verify(s, "zero trip", 0, nthr, CHUNK);                                                   \
    reset();                                                                                  \
    _Pragma("omp parallel") {                                                                 \
      PRAGMA(omp for SCHED)                                                                   \
      for (int i = 0; i < runtime_three; i++) hit(i, 3);                                      \
    }                                                                                         \
    verify(s, "3 iterations", 3, nthr, CHUNK);                                                \
  }

SHAPES(s_static, schedule(static), 0)
SHAPES(s_static1, schedule(static, 1), 1)
SHAPES(s_static7, schedule(static, 7), 7)
SHAPES(s_mono_static, schedule(monotonic : static, 5), 5)
SHAPES(s_dynamic, schedule(dynamic), -1)
SHAPES(s_dynamic13, schedule(dynamic, 13), -1)
SHAPES(s_mono_dynamic, schedule(monotonic : dynamic), -1)
SHAPES(s_mono_dynamic4, schedule(monotonic : dynamic, 4), -1)
SHAPES(s_nonmono_dynamic, schedule(nonmonotonic : dynamic, 3), -1)
SHAPES(s_guided, schedule(guided), -1)
SHAPES(s_guided5, schedule(guided, 5), -1)
SHAPES(s_mono_guided, schedule(monotonic : guided, 2), -1)
SHAPES(s_nonmono_guided, schedule(nonmonotonic : guided), -1)
SHAPES(s_auto, schedule(auto), -1)
SHAPES(s_runtime, schedule(runtime), -1)
SHAPES(s_mono_runtime, schedule(monotonic : runtime), -1)
SHAPES(s_nonmono_runtime, schedule(nonmonotonic : runtime), -1)
SHAPES(s_default, , -1)

int main(void) {
  s_static();
  s_static1();
  s_static7();
  s_mono_static();
  s_dynamic();
  s_dynamic13();
  s_mono_dynamic();
  s_mono_dynamic4();
  s_nonmono_dynamic();
  s_guided();
  s_guided5();
  s_mono_guided();
  s_nonmono_guided();
  s_auto();
  s_runtime();
  s_mono_runtime();
  s_nonmono_runtime();
  s_default();

  /* nowait: two static loops with the same iteration count and schedule
   * give each thread the same iterations, so the second may read what
   * the first wrote without a barrier in between. */
  {
    static int a[N], b[N], c[N];
    int bad = 0;
#pragma omp parallel shared(bad)
    {
      for (int r = 0; r < 50; r++) {
#pragma omp for schedule(static) nowait
        for (int i = 0; i < N; i++) a[i] = i + r;
#pragma omp for schedule(static) nowait
        for (int i = 0; i < N; i++) b[i] = a[i] + 1;
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) a[i] = b[i] * 2;
#pragma omp for schedule(static, 3) nowait
        for (int i = 0; i < N; i++)
          if (a[i] != (i + r + 1) * 2) AINC(&bad);
#pragma omp for schedule(static, 3) nowait
        for (int i = 0; i < N; i++) c[i] = a[i] + 5;
#pragma omp for schedule(static, 3)
        for (int i = 0; i < N; i++)
          if (c[i] != (i + r + 1) * 2 + 5) AINC(&bad);
      }
    }
    printf("static nowait chains: %d wrong values\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* 300 nowait dynamic/guided loops back to back: fast threads run ahead
   * into later loops while slow ones finish earlier loops. */
  {
    static int hits[300][64];
    memset(hits, 0, sizeof hits);
#pragma omp parallel
    {
      for (int r = 0; r < 300; r++) {
        if (r % 2) {
#pragma omp for schedule(dynamic, 1) nowait
          for (int i = 0; i < 64; i++) AINC(&hits[r][i]);
        } else {
#pragma omp for schedule(guided) nowait
          for (int i = 0; i < 64; i++) AINC(&hits[r][i]);
        }
      }
    }
    int bad = 0;
    for (int r = 0; r < 300; r++)
      for (int i = 0; i < 64; i++) bad += hits[r][i] != 1;
    printf("300 nowait loops: %d iterations not run exactly once\n", bad);
    CHECK_EQ(bad, 0);
  }

  /* A loop in a region of one thread (if(0)) and in an orphaned context
   * (no enclosing region): the whole range runs in thread 0. */
  {
    reset();
    int zero = 0;
#pragma omp parallel if (zero)
    {
#pragma omp for schedule(dynamic, 5)
      for (int i = 0; i < 100; i++) hit(i, 100);
    }
    verify("if(0) region", "dynamic,5", 100, 1, 1000);
    reset();
#pragma omp for schedule(guided)
    for (int i = 0; i < 100; i++) hit(i, 100);
    verify("orphaned (no region)", "guided", 100, 1, 1000);
  }
  return omptest_finish("loops");
}
