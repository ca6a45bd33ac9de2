/* Strassen's matrix product with tasks, in the style of KASTORS'
 * strassen-task and strassen-task-dep (the NUMA depend paper, section 4.3;
 * docs/references.md): C = A B for n x n doubles, n a power of two times
 * the base size. Each level splits the three matrices into quadrants and
 * forms seven products of sums of quadrants:
 *   M1 = (A11 + A22)(B11 + B22)   M5 = (A11 + A12) B22
 *   M2 = (A21 + A22) B11          M6 = (A21 - A11)(B11 + B12)
 *   M3 = A11 (B12 - B22)          M7 = (A12 - A22)(B21 + B22)
 *   M4 = A22 (B21 - B11)
 *   C11 = M1 + M4 - M5 + M7   C12 = M3 + M5   C21 = M2 + M4
 *   C22 = M1 - M2 + M3 + M6
 * recursively down to blocks of `base` x `base`, multiplied by the plain
 * triple loop. The sums and products of a level live in a buffer the level
 * allocates (first touched by the tasks that write them).
 *  - mode 1 (depend, the default): per level, the ten sums, the seven
 *    products and the four quadrants of C are tasks ordered by depend
 *    (out: a sum; in: its sums, out: a product; in: the products, out: a
 *    quadrant), then taskwait;
 *  - mode 0 (task): per level, seven tasks, each forming its sums and its
 *    product, taskwait, then four tasks for the quadrants of C, taskwait.
 * A, B and C are placed block-cyclically over the NUMA nodes with libnuma
 * (numa_place.h): bands of `base` rows, band k on node k % nodes, whatever
 * the runtime; local_pct is the share of the tasks writing a quadrant of C
 * itself (not of a level's product) that ran on a CPU of the node of the
 * quadrant's first row.
 *
 *   strassen_dep [n=1024] [base=64] [reps=3] [mode=1]
 *
 * The tasks do the serial recursion's arithmetic on every element in the
 * same order, so C must equal the serial Strassen's bit for bit; both are
 * also checked against dot products of A's rows and B's columns at 1,000
 * seeded entries (relative error below 1e-9). serial_s is the serial
 * recursion. CSV, one line per repetition:
 *   system,workers,n,base,rep,serial_s,parallel_s,ratio,local_pct
 * Exits 1 on a wrong result. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include <math.h>

#include "numa_place.h"
#include "omp_common.h"

static int BASE;
static size_t BAND_ROWS;               /* rows per band of the placement */
static const double *C_ORIGIN, *C_END; /* the C of the current run */
static int C_LD;

/* A view of an h x h matrix: its first element and its row stride. */
typedef struct {
  double *p;
  int ld;
} mat;

static inline mat quad(mat m, int h, int qi, int qj) {
  return (mat){m.p + (size_t)qi * h * m.ld + (size_t)qj * h, m.ld};
}

/* z = x + s y (s = 1 or -1) */
static void add(mat z, mat x, mat y, double s, int h) {
  for (int i = 0; i < h; i++)
    for (int j = 0; j < h; j++)
      z.p[(size_t)i * z.ld + j] = x.p[(size_t)i * x.ld + j] + s * y.p[(size_t)i * y.ld + j];
}

/* c = a b, the plain loop */
static void mul_base(mat c, mat a, mat b, int h) {
  for (int i = 0; i < h; i++) {
    double *ci = c.p + (size_t)i * c.ld;
    for (int j = 0; j < h; j++) ci[j] = 0.0;
    for (int k = 0; k < h; k++) {
      double aik = a.p[(size_t)i * a.ld + k];
      const double *bk = b.p + (size_t)k * b.ld;
      for (int j = 0; j < h; j++) ci[j] += aik * bk[j];
    }
  }
}

/* A quadrant task of the run's C (not of a level's product) starting at
 * element p: counted by the node of its first row. */
static void count_c(const double *p) {
  if (p < C_ORIGIN || p >= C_END) return;
  size_t row = (size_t)(p - C_ORIGIN) / (size_t)C_LD;
  np_count(np_node_of_chunk(row / BAND_ROWS));
}

/* The sums of one product (T, U; b-only or a-only products use one). */
enum {
  S_A11_A22,
  S_B11_B22,
  S_A21_A22,
  S_B12_B22,
  S_B21_B11,
  S_A11_A12,
  S_A21_A11,
  S_B11_B12,
  S_A12_A22,
  S_B21_B22,
  NSUMS
};

/* The sums and products of one level: [NSUMS + 7] h x h matrices. */
static double *level_buffer(int h) {
  double *t = malloc(sizeof(double) * (size_t)h * h * (NSUMS + 7));
  if (!t) {
    fprintf(stderr, "strassen_dep: out of memory\n");
    exit(3);
  }
  return t;
}

static inline mat tmp(double *buf, int h, int k) { return (mat){buf + (size_t)k * h * h, h}; }

static void form_sum(int k, mat t, mat A, mat B, int h) {
  mat a11 = quad(A, h, 0, 0), a12 = quad(A, h, 0, 1), a21 = quad(A, h, 1, 0),
      a22 = quad(A, h, 1, 1);
  mat b11 = quad(B, h, 0, 0), b12 = quad(B, h, 0, 1), b21 = quad(B, h, 1, 0),
      b22 = quad(B, h, 1, 1);
  switch (k) {
    case S_A11_A22:
      add(t, a11, a22, 1, h);
      break;
    case S_B11_B22:
      add(t, b11, b22, 1, h);
      break;
    case S_A21_A22:
      add(t, a21, a22, 1, h);
      break;
    case S_B12_B22:
      add(t, b12, b22, -1, h);
      break;
    case S_B21_B11:
      add(t, b21, b11, -1, h);
      break;
    case S_A11_A12:
      add(t, a11, a12, 1, h);
      break;
    case S_A21_A11:
      add(t, a21, a11, -1, h);
      break;
    case S_B11_B12:
      add(t, b11, b12, 1, h);
      break;
    case S_A12_A22:
      add(t, a12, a22, -1, h);
      break;
    default:
      add(t, b21, b22, 1, h);
      break;
  }
}

/* The factors of product i (0..6): a sum or a quadrant of A, of B. */
static void factors(int i, double *buf, mat A, mat B, int h, mat *x, mat *y) {
  switch (i) {
    case 0:
      *x = tmp(buf, h, S_A11_A22);
      *y = tmp(buf, h, S_B11_B22);
      break;
    case 1:
      *x = tmp(buf, h, S_A21_A22);
      *y = quad(B, h, 0, 0);
      break;
    case 2:
      *x = quad(A, h, 0, 0);
      *y = tmp(buf, h, S_B12_B22);
      break;
    case 3:
      *x = quad(A, h, 1, 1);
      *y = tmp(buf, h, S_B21_B11);
      break;
    case 4:
      *x = tmp(buf, h, S_A11_A12);
      *y = quad(B, h, 1, 1);
      break;
    case 5:
      *x = tmp(buf, h, S_A21_A11);
      *y = tmp(buf, h, S_B11_B12);
      break;
    default:
      *x = tmp(buf, h, S_A12_A22);
      *y = tmp(buf, h, S_B21_B22);
      break;
  }
}
/* The sums product i needs (-1: none). */
static const int sums_of[7][2] = {{S_A11_A22, S_B11_B22}, {S_A21_A22, -1}, {S_B12_B22, -1},
                                  {S_B21_B11, -1},        {S_A11_A12, -1}, {S_A21_A11, S_B11_B12},
                                  {S_A12_A22, S_B21_B22}};

/* Quadrant q (0: C11, 1: C12, 2: C21, 3: C22) of C from the products. */
static void combine(int q, mat C, double *buf, int h) {
  mat m[7];
  for (int i = 0; i < 7; i++) m[i] = tmp(buf, h, NSUMS + i);
  mat c = quad(C, h, q / 2, q % 2);
  for (int i = 0; i < h; i++)
    for (int j = 0; j < h; j++) {
      size_t e = (size_t)i * h + j;
      double v;
      switch (q) {
        case 0:
          v = m[0].p[e] + m[3].p[e] - m[4].p[e] + m[6].p[e];
          break;
        case 1:
          v = m[2].p[e] + m[4].p[e];
          break;
        case 2:
          v = m[1].p[e] + m[3].p[e];
          break;
        default:
          v = m[0].p[e] - m[1].p[e] + m[2].p[e] + m[5].p[e];
          break;
      }
      c.p[(size_t)i * c.ld + j] = v;
    }
}

static void strassen_serial(mat C, mat A, mat B, int n) {
  if (n <= BASE) {
    mul_base(C, A, B, n);
    return;
  }
  int h = n / 2;
  double *buf = level_buffer(h);
  for (int k = 0; k < NSUMS; k++) form_sum(k, tmp(buf, h, k), A, B, h);
  for (int i = 0; i < 7; i++) {
    mat x, y;
    factors(i, buf, A, B, h, &x, &y);
    strassen_serial(tmp(buf, h, NSUMS + i), x, y, h);
  }
  for (int q = 0; q < 4; q++) combine(q, C, buf, h);
  free(buf);
}

/* mode 0: seven product tasks (each forms its own sums), taskwait, four
 * quadrant tasks, taskwait */
static void strassen_task(mat C, mat A, mat B, int n) {
  if (n <= BASE) {
    mul_base(C, A, B, n);
    return;
  }
  int h = n / 2;
  double *buf = level_buffer(h);
  for (int i = 0; i < 7; i++) {
#pragma omp task firstprivate(i, h, buf, A, B)
    {
      for (int s = 0; s < 2; s++)
        if (sums_of[i][s] >= 0) form_sum(sums_of[i][s], tmp(buf, h, sums_of[i][s]), A, B, h);
      mat x, y;
      factors(i, buf, A, B, h, &x, &y);
      strassen_task(tmp(buf, h, NSUMS + i), x, y, h);
    }
  }
#pragma omp taskwait
  for (int q = 0; q < 4; q++) {
#pragma omp task firstprivate(q, h, buf, C)
    {
      count_c(quad(C, h, q / 2, q % 2).p);
      combine(q, C, buf, h);
    }
  }
#pragma omp taskwait
  free(buf);
}

/* mode 1: sums, products and quadrants as tasks ordered by depend; the
 * dependence object of a sum or product is its first element, of a
 * quadrant of C its first element */
static void strassen_dep(mat C, mat A, mat B, int n) {
  if (n <= BASE) {
    mul_base(C, A, B, n);
    return;
  }
  int h = n / 2;
  double *buf = level_buffer(h);
  double *t[NSUMS + 7];
  for (int k = 0; k < NSUMS + 7; k++) t[k] = buf + (size_t)k * h * h;
  for (int k = 0; k < NSUMS; k++) {
#pragma omp task firstprivate(k, h, buf, A, B) depend(out : t[k][0])
    form_sum(k, tmp(buf, h, k), A, B, h);
  }
  for (int i = 0; i < 7; i++) {
    /* a product that needs one sum names it twice (a repeated in: is harmless) */
    int s0 = sums_of[i][0], s1 = sums_of[i][1] >= 0 ? sums_of[i][1] : sums_of[i][0];
#pragma omp task firstprivate(i, h, buf, A, B) depend(in                    \
                                                      : t[s0][0], t[s1][0]) \
    depend(out                                                              \
           : t[NSUMS + i][0])
    {
      mat x, y;
      factors(i, buf, A, B, h, &x, &y);
      strassen_dep(tmp(buf, h, NSUMS + i), x, y, h);
    }
  }
  double *c11 = quad(C, h, 0, 0).p, *c12 = quad(C, h, 0, 1).p, *c21 = quad(C, h, 1, 0).p,
         *c22 = quad(C, h, 1, 1).p;
#pragma omp task firstprivate(h, buf, C)                                                    \
    depend(in                                                                               \
           : t[NSUMS + 0][0], t[NSUMS + 3][0], t[NSUMS + 4][0], t[NSUMS + 6][0]) depend(out \
                                                                                        : c11[0])
  {
    count_c(c11);
    combine(0, C, buf, h);
  }
#pragma omp task firstprivate(h, buf, C) depend(in                                  \
                                                : t[NSUMS + 2][0], t[NSUMS + 4][0]) \
    depend(out                                                                      \
           : c12[0])
  {
    count_c(c12);
    combine(1, C, buf, h);
  }
#pragma omp task firstprivate(h, buf, C) depend(in                                  \
                                                : t[NSUMS + 1][0], t[NSUMS + 3][0]) \
    depend(out                                                                      \
           : c21[0])
  {
    count_c(c21);
    combine(2, C, buf, h);
  }
#pragma omp task firstprivate(h, buf, C)                                                    \
    depend(in                                                                               \
           : t[NSUMS + 0][0], t[NSUMS + 1][0], t[NSUMS + 2][0], t[NSUMS + 5][0]) depend(out \
                                                                                        : c22[0])
  {
    count_c(c22);
    combine(3, C, buf, h);
  }
#pragma omp taskwait
  free(buf);
}

static void run_parallel(void (*f)(mat, mat, mat, int), mat C, mat A, mat B, int n) {
#pragma omp parallel
#pragma omp single
  f(C, A, B, n);
}

/* Relative error of C at 1,000 seeded entries against the dot products. */
static double sample_error(mat C, mat A, mat B, int n) {
  double worst = 0;
  for (int s = 0; s < 1000; s++) {
    int i = (int)(ompb_mix((uint64_t)s * 2) % (uint64_t)n);
    int j = (int)(ompb_mix((uint64_t)s * 2 + 1) % (uint64_t)n);
    double d = 0;
    for (int k = 0; k < n; k++) d += A.p[(size_t)i * A.ld + k] * B.p[(size_t)k * B.ld + j];
    double e = fabs(C.p[(size_t)i * C.ld + j] - d) / (fabs(d) > 1e-300 ? fabs(d) : 1.0);
    if (e > worst) worst = e;
  }
  return worst;
}

int main(int argc, char **argv) {
  const int n = (int)bench_arg("strassen_dep", argc, argv, 1, 1024, 1, 1 << 15);
  BASE = (int)bench_arg("strassen_dep", argc, argv, 2, 64, 1, 1 << 15);
  const int reps = (int)bench_arg("strassen_dep", argc, argv, 3, 3, 1, 100000);
  const int mode = (int)bench_arg("strassen_dep", argc, argv, 4, 1, 0, 1);
  int levels = 0;
  while ((BASE << levels) < n) levels++;
  if ((BASE << levels) != n) {
    fprintf(stderr, "strassen_dep: n (%d) must be base (%d) times a power of two\n", n, BASE);
    return 2;
  }
  np_init();
  BAND_ROWS = (size_t)BASE;
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel),       OMPB_ENTRY(GOMP_single_start),
                                OMPB_ENTRY(GOMP_task),           OMPB_ENTRY(GOMP_taskwait),
                                OMPB_ENTRY(omp_get_max_threads), OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);
  const int workers = omp_get_max_threads();
  void (*par)(mat, mat, mat, int) = mode ? strassen_dep : strassen_task;
  const size_t nn = (size_t)n * (size_t)n, bytes = nn * sizeof(double);
  const size_t band = (size_t)BASE * (size_t)n * sizeof(double);
  mat A = {np_alloc(bytes, band), n}, B = {np_alloc(bytes, band), n};
  mat S = {np_alloc(bytes, band), n}, P = {np_alloc(bytes, band), n};
  for (size_t e = 0; e < nn; e++) {
    A.p[e] = (double)(ompb_mix(e) >> 11) * 0x1p-53;
    B.p[e] = (double)(ompb_mix(e + nn) >> 11) * 0x1p-53;
  }
  C_LD = n;
  { /* warm-up: the parallel version on the top-left quarter */
    int wn = n > BASE ? n / 2 : n;
    C_ORIGIN = P.p;
    C_END = P.p + nn;
    run_parallel(par, P, A, B, wn);
  }
  const char *sys = ompb_system(entries, nent);
  ompb_meta(mode ? "omp_strassen" : "omp_strassen_task", entries, nent, workers);
  printf("# mode=%s numa_nodes=%d levels=%d\n", mode ? "depend" : "task", np_nodes, levels);
  printf("system,workers,n,base,rep,serial_s,parallel_s,ratio,local_pct\n");
  fflush(stdout);
  for (int rep = 0; rep < reps; rep++) {
    C_ORIGIN = S.p;
    C_END = S.p + nn;
    double t0 = ompb_now_s();
    strassen_serial(S, A, B, n);
    double ts = ompb_now_s() - t0;
    C_ORIGIN = P.p;
    C_END = P.p + nn;
    np_reset();
    t0 = ompb_now_s();
    run_parallel(par, P, A, B, n);
    double tp = ompb_now_s() - t0;
    if (memcmp(S.p, P.p, bytes) != 0) {
      for (size_t e = 0; e < nn; e++)
        if (S.p[e] != P.p[e]) {
          fprintf(stderr, "strassen_dep: WRONG ANSWER: C[%zu][%zu] = %.17g, serial %.17g\n",
                  e / (size_t)n, e % (size_t)n, P.p[e], S.p[e]);
          break;
        }
      return 1;
    }
    if (rep == 0) {
      double err = sample_error(P, A, B, n);
      if (!(err < 1e-9)) {
        fprintf(stderr, "strassen_dep: WRONG ANSWER: relative error %g against dot products\n",
                err);
        return 1;
      }
    }
    printf("%s,%d,%d,%d,%d,%.6f,%.6f,%.4f,%.1f\n", sys, workers, n, BASE, rep, ts, tp,
           ts > 0 ? tp / ts : 0.0, np_local_pct());
    fflush(stdout);
  }
  np_free(A.p, bytes);
  np_free(B.p, bytes);
  np_free(S.p, bytes);
  np_free(P.p, bytes);
  return 0;
}
