/* The matrix product of the nested-OpenMP paper (docs/references.md), figure 13: integer matrices,
 * two nested `parallel for` (rows outside, columns inside, the k loop serial). Whether the inner
 * loop gets a team of its own is up to the runtime and OMP_MAX_ACTIVE_LEVELS (1: the inner regions
 * run on teams of one; >= 2: every inner region is a nested team). B is kept transposed so that the
 * k loop walks both operands contiguously (figure 13 walks a column of B; the parallel structure is
 * the same).
 *
 *   matmul_omp [n=1000] [reps=3]
 *
 * Entries of A and B are small seeded integers, so C = A B is exact. The
 * result is checked without a second product: C x = A (B x) for two fixed
 * vectors with nonzero entries, in 64-bit integers (a wrong entry of C
 * changes C x). C is overwritten with a sentinel before every product.
 * serial_s is the same loops without pragmas, in the same binary. CSV, one
 * line per repetition:
 *   system,workers,n,max_levels,rep,serial_s,parallel_s,ratio,active_levels,inner_threads
 * max_levels is omp_get_max_active_levels(); active_levels and
 * inner_threads are what an untimed probe of the same nest saw inside the
 * inner region (omp_get_active_level(), omp_get_num_threads()): whether
 * the runtime really nested. Exits 1 on a wrong result. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include "omp_common.h"

/* The k loop: one function for both versions, so that both run the same
 * machine code (inlined, the same loop compiled twice ran at 1 and at 2
 * cycles per iteration here, from its placement alone). */
__attribute__((noinline)) static int dot(const int *restrict x, const int *restrict y, int n) {
  int s = 0;
  for (int k = 0; k < n; k++) s += x[k] * y[k];
  return s;
}

static void product_omp(int n, const int *a, const int *bt, int *c) {
  int i, j;
#pragma omp parallel for private(i)
  for (i = 0; i < n; i++)
#pragma omp parallel for private(j)
    for (j = 0; j < n; j++) c[(long)i * n + j] = dot(&a[(long)i * n], &bt[(long)j * n], n);
}

static void product_serial(int n, const int *a, const int *bt, int *c) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) c[(long)i * n + j] = dot(&a[(long)i * n], &bt[(long)j * n], n);
}

/* The nest of product_omp, untimed: what the inner region sees. */
static void probe(int n, int *levels, int *inner) {
  int lv = 0, in = 0;
#pragma omp parallel for reduction(max : lv, in)
  for (int i = 0; i < n; i++)
#pragma omp parallel for reduction(max : lv, in)
    for (int j = 0; j < n; j++) {
      int l = omp_get_active_level(), t = omp_get_num_threads();
      if (l > lv) lv = l;
      if (t > in) in = t;
    }
  *levels = lv;
  *inner = in;
}

static long entry(uint64_t seed, long i) { return (long)(ompb_mix(seed + (uint64_t)i) % 19) - 9; }

/* C x == A (B x) for x_j = 1 + (j * m) % 13, with bt = B transposed. */
static int verify(int n, const int *a, const int *bt, const int *c, int m) {
  int64_t *x = malloc(sizeof(int64_t) * (size_t)n * 3);
  if (!x) return 0;
  int64_t *y = x + n, *z = x + 2 * n;
  for (int j = 0; j < n; j++) x[j] = 1 + ((int64_t)j * m) % 13;
  for (int k = 0; k < n; k++) y[k] = 0;
  for (int j = 0; j < n; j++) /* y = B x: y_k = sum_j B[k][j] x_j = sum_j bt[j][k] x_j */
    for (int k = 0; k < n; k++) y[k] += (int64_t)bt[(long)j * n + k] * x[j];
  int ok = 1;
  for (int i = 0; i < n && ok; i++) {
    int64_t want = 0, got = 0;
    for (int k = 0; k < n; k++) want += (int64_t)a[(long)i * n + k] * y[k];
    for (int j = 0; j < n; j++) got += (int64_t)c[(long)i * n + j] * x[j];
    z[i] = got;
    if (got != want) {
      fprintf(stderr, "matmul_omp: WRONG ANSWER: (C x)[%d] = %lld, (A B x)[%d] = %lld\n", i,
              (long long)got, i, (long long)want);
      ok = 0;
    }
  }
  free(x);
  return ok;
}

int main(int argc, char **argv) {
  const int n = (int)bench_arg("matmul_omp", argc, argv, 1, 1000, 1, 20000);
  const int reps = (int)bench_arg("matmul_omp", argc, argv, 2, 3, 1, 100000);
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel),       OMPB_ENTRY(omp_get_num_threads),
                                OMPB_ENTRY(omp_get_thread_num),  OMPB_ENTRY(omp_get_active_level),
                                OMPB_ENTRY(GOMP_atomic_start),   OMPB_ENTRY(GOMP_atomic_end),
                                OMPB_ENTRY(omp_get_max_threads), OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);
  const int workers = omp_get_max_threads();
  const size_t nn = (size_t)n * (size_t)n;
  int *a = malloc(nn * sizeof *a), *bt = malloc(nn * sizeof *bt), *c = malloc(nn * sizeof *c);
  if (!a || !bt || !c) {
    fprintf(stderr, "matmul_omp: out of memory for n=%d\n", n);
    return 3;
  }
  for (size_t i = 0; i < nn; i++) {
    a[i] = (int)entry(0xA000000000ull, (long)i);
    bt[i] = (int)entry(0xB000000000ull, (long)i);
  }

  int levels = 0, inner = 0;
  probe(n < 64 ? n : 64, &levels, &inner); /* also the warm-up */
  const char *sys = ompb_system(entries, nent);
  ompb_meta("omp_matmul", entries, nent, workers);
  printf("system,workers,n,max_levels,rep,serial_s,parallel_s,ratio,active_levels,inner_threads\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    memset(c, 0x5a, nn * sizeof *c);
    double t0 = ompb_now_s();
    product_serial(n, a, bt, c);
    double ts = ompb_now_s() - t0;
    if (!verify(n, a, bt, c, 7)) return 1;

    memset(c, 0x5a, nn * sizeof *c);
    t0 = ompb_now_s();
    product_omp(n, a, bt, c);
    double tp = ompb_now_s() - t0;
    if (!verify(n, a, bt, c, 5 + 2 * rep)) return 1;
    printf("%s,%d,%d,%d,%d,%.6f,%.6f,%.4f,%d,%d\n", sys, workers, n, omp_get_max_active_levels(),
           rep, ts, tp, ts > 0 ? tp / ts : 0.0, levels, inner);
    fflush(stdout);
  }
  free(a);
  free(bt);
  free(c);
  return 0;
}
