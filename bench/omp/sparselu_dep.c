/* Blocked sparse LU factorisation with tasks, in the style of KASTORS'
 * sparselu-task-dep and sparselu-task (the NUMA depend paper, section 4.2;
 * docs/references.md): an nb x nb matrix of bs x bs blocks, many of them
 * absent (NULL). For each diagonal step k, one thread creates the tasks
 *   lu0(A[k][k])                 depend(inout: A[k][k])
 *   fwd(A[k][k], A[k][j])        depend(in: A[k][k]) depend(inout: A[k][j])
 *   bdiv(A[k][k], A[i][k])       depend(in: A[k][k]) depend(inout: A[i][k])
 *   bmod(A[i][k], A[k][j], A[i][j])  depend(in: A[i][k], A[k][j]) depend(inout: A[i][j])
 * for the present blocks (an absent A[i][j] that bmod fills in is
 * allocated first, by the creating thread); the dependence object of block
 * (i, j) is its slot in the array of block pointers. Mode 1 (depend, the
 * default): no barrier between the steps, the dependences alone order the
 * tasks. Mode 0 (task): lu0 runs in the creating thread, then the fwd and
 * bdiv tasks, taskwait, the bmod tasks, taskwait.
 *
 * Block (i, j) lives on NUMA node (i * nb + j) % nodes, placed with libnuma
 * (numa_place.h) whatever the runtime; local_pct is the share of tasks that
 * ran on a CPU of the node of the block they update.
 *
 *   sparselu_dep [nb=40] [bs=48] [reps=3] [mode=1]
 *
 * No pivoting: the seeded matrix is made diagonally dominant. Every block
 * is updated in the serial order (the inout chains keep it), so the factors
 * must equal the serial factorisation's bit for bit; they are compared, and
 * L U x is checked against A x for a fixed x (the serial factors too).
 * serial_s is the serial factorisation (the same kernels without tasks).
 * CSV, one line per repetition:
 *   system,workers,nb,bs,rep,serial_s,parallel_s,ratio,local_pct
 * Exits 1 on a wrong result. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include <math.h>

#include "numa_place.h"
#include "omp_common.h"

static int BS; /* block side */

/* diag = L U in place: L unit lower, U upper */
static void lu0(double *d) {
  for (int k = 0; k < BS; k++)
    for (int i = k + 1; i < BS; i++) {
      d[i * BS + k] /= d[k * BS + k];
      double l = d[i * BS + k];
      for (int j = k + 1; j < BS; j++) d[i * BS + j] -= l * d[k * BS + j];
    }
}

/* row block to the right of the diagonal: row = L^-1 row */
static void fwd(const double *d, double *row) {
  for (int k = 0; k < BS; k++)
    for (int i = k + 1; i < BS; i++) {
      double l = d[i * BS + k];
      for (int j = 0; j < BS; j++) row[i * BS + j] -= l * row[k * BS + j];
    }
}

/* column block below the diagonal: col = col U^-1 */
static void bdiv(const double *d, double *col) {
  for (int i = 0; i < BS; i++)
    for (int k = 0; k < BS; k++) {
      col[i * BS + k] /= d[k * BS + k];
      double l = col[i * BS + k];
      for (int j = k + 1; j < BS; j++) col[i * BS + j] -= l * d[k * BS + j];
    }
}

/* inner -= col row */
static void bmod(const double *col, const double *row, double *inner) {
  for (int i = 0; i < BS; i++)
    for (int k = 0; k < BS; k++) {
      double l = col[i * BS + k];
      for (int j = 0; j < BS; j++) inner[i * BS + j] -= l * row[k * BS + j];
    }
}

static int NB; /* blocks per side */

/* Block (i, j), zeroed, on its node. */
static double *new_block(int i, int j) {
  return np_alloc_on(sizeof(double) * (size_t)BS * BS, (i * NB + j) % np_nodes);
}
static void free_block(double *b) { np_free(b, sizeof(double) * (size_t)BS * BS); }
static int node_of_block(int i, int j) { return (i * NB + j) % np_nodes; }

/* The seeded matrix: block (i, j) present on the diagonal, next to it, and
 * on a sparse pattern of its own; entries in [-1, 1), the diagonal raised so
 * that every row is diagonally dominant (LU without pivoting is stable). */
static double **genmat(int nb) {
  double **m = calloc((size_t)nb * nb, sizeof *m);
  if (!m) exit(3);
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) {
      int present = i == j || i == j + 1 || j == i + 1 || (i % 4 == 0 && j % 3 == 0) ||
                    (j % 4 == 0 && i % 5 == 0);
      if (!present) continue;
      double *b = m[i * nb + j] = new_block(i, j);
      for (int p = 0; p < BS * BS; p++)
        b[p] =
            (double)(ompb_mix(((uint64_t)(i * nb + j) << 32) + (uint64_t)p) >> 11) * 0x1p-52 - 1.0;
    }
  for (int i = 0; i < nb; i++)
    for (int r = 0; r < BS; r++) m[i * nb + i][r * BS + r] += (double)nb * BS;
  return m;
}

static double **copy_matrix(double **src, int nb) {
  double **m = calloc((size_t)nb * nb, sizeof *m);
  if (!m) exit(3);
  for (int p = 0; p < nb * nb; p++)
    if (src[p]) {
      m[p] = new_block(p / nb, p % nb);
      memcpy(m[p], src[p], sizeof(double) * (size_t)BS * BS);
    }
  return m;
}

static void free_matrix(double **m, int nb) {
  for (int p = 0; p < nb * nb; p++)
    if (m[p]) free_block(m[p]);
  free(m);
}

static void sparselu_serial(double **m, int nb) {
  for (int k = 0; k < nb; k++) {
    lu0(m[k * nb + k]);
    for (int j = k + 1; j < nb; j++)
      if (m[k * nb + j]) fwd(m[k * nb + k], m[k * nb + j]);
    for (int i = k + 1; i < nb; i++)
      if (m[i * nb + k]) bdiv(m[k * nb + k], m[i * nb + k]);
    for (int i = k + 1; i < nb; i++)
      if (m[i * nb + k])
        for (int j = k + 1; j < nb; j++)
          if (m[k * nb + j]) {
            if (!m[i * nb + j]) m[i * nb + j] = new_block(i, j);
            bmod(m[i * nb + k], m[k * nb + j], m[i * nb + j]);
          }
  }
}

/* mode 1: every step's tasks at once, ordered by their dependences */
static void sparselu_tasks(double **m, int nb) {
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < nb; k++) {
    double *d = m[k * nb + k];
#pragma omp task firstprivate(d, k) depend(inout : m[k * nb + k])
    {
      np_count(node_of_block(k, k));
      lu0(d);
    }
    for (int j = k + 1; j < nb; j++)
      if (m[k * nb + j]) {
        double *row = m[k * nb + j];
#pragma omp task firstprivate(d, row, k, j) depend(in : m[k * nb + k]) depend(inout : m[k * nb + j])
        {
          np_count(node_of_block(k, j));
          fwd(d, row);
        }
      }
    for (int i = k + 1; i < nb; i++)
      if (m[i * nb + k]) {
        double *col = m[i * nb + k];
#pragma omp task firstprivate(d, col, i, k) depend(in : m[k * nb + k]) depend(inout : m[i * nb + k])
        {
          np_count(node_of_block(i, k));
          bdiv(d, col);
        }
      }
    for (int i = k + 1; i < nb; i++)
      if (m[i * nb + k])
        for (int j = k + 1; j < nb; j++)
          if (m[k * nb + j]) {
            if (!m[i * nb + j]) m[i * nb + j] = new_block(i, j);
            double *col = m[i * nb + k], *row = m[k * nb + j], *inner = m[i * nb + j];
            // clang-format off
#pragma omp task firstprivate(col, row, inner, i, j) depend(in: m[i * nb + k], m[k * nb + j]) \
    depend(inout: m[i * nb + j])
            // clang-format on
            {
              np_count(node_of_block(i, j));
              bmod(col, row, inner);
            }
          }
  }
}

/* mode 0: lu0 in the creating thread, fwd and bdiv tasks, taskwait, bmod
 * tasks, taskwait */
static void sparselu_step_tasks(double **m, int nb) {
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < nb; k++) {
    double *d = m[k * nb + k];
    lu0(d);
    for (int j = k + 1; j < nb; j++)
      if (m[k * nb + j]) {
        double *row = m[k * nb + j];
#pragma omp task firstprivate(d, row, k, j)
        {
          np_count(node_of_block(k, j));
          fwd(d, row);
        }
      }
    for (int i = k + 1; i < nb; i++)
      if (m[i * nb + k]) {
        double *col = m[i * nb + k];
#pragma omp task firstprivate(d, col, i, k)
        {
          np_count(node_of_block(i, k));
          bdiv(d, col);
        }
      }
#pragma omp taskwait
    for (int i = k + 1; i < nb; i++)
      if (m[i * nb + k])
        for (int j = k + 1; j < nb; j++)
          if (m[k * nb + j]) {
            if (!m[i * nb + j]) m[i * nb + j] = new_block(i, j);
            double *col = m[i * nb + k], *row = m[k * nb + j], *inner = m[i * nb + j];
#pragma omp task firstprivate(col, row, inner, i, j)
            {
              np_count(node_of_block(i, j));
              bmod(col, row, inner);
            }
          }
#pragma omp taskwait
  }
}

/* |L U x - A x| / |A x| for x_p = 1 + p % 7, with L U the factors in f. */
static double residual(double **a, double **f, int nb) {
  const int n = nb * BS;
  double *x = malloc(sizeof(double) * (size_t)n * 3);
  if (!x) exit(3);
  double *y = x + n, *z = x + 2 * n;
  for (int p = 0; p < n; p++) {
    x[p] = 1 + p % 7;
    y[p] = z[p] = 0;
  }
  double num = 0, den = 0;
  /* y = U x: the upper triangle of the diagonal blocks, blocks right of it */
  for (int bi = 0; bi < nb; bi++)
    for (int bj = bi; bj < nb; bj++) {
      const double *b = f[bi * nb + bj];
      if (!b) continue;
      for (int r = 0; r < BS; r++)
        for (int c = bj == bi ? r : 0; c < BS; c++)
          y[bi * BS + r] += b[r * BS + c] * x[bj * BS + c];
    }
  /* z = L y: unit diagonal, the strict lower triangle, blocks left of it */
  for (int bi = 0; bi < nb; bi++)
    for (int bj = 0; bj <= bi; bj++) {
      const double *b = f[bi * nb + bj];
      if (!b) continue;
      for (int r = 0; r < BS; r++) {
        if (bj == bi) z[bi * BS + r] += y[bi * BS + r];
        for (int c = 0; c < (bj == bi ? r : BS); c++)
          z[bi * BS + r] += b[r * BS + c] * y[bj * BS + c];
      }
    }
  /* A x, against z */
  for (int bi = 0; bi < nb; bi++) {
    for (int r = 0; r < BS; r++) {
      double ax = 0;
      for (int bj = 0; bj < nb; bj++) {
        const double *b = a[bi * nb + bj];
        if (!b) continue;
        for (int c = 0; c < BS; c++) ax += b[r * BS + c] * x[bj * BS + c];
      }
      double d = z[bi * BS + r] - ax;
      num += d * d;
      den += ax * ax;
    }
  }
  free(x);
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

int main(int argc, char **argv) {
  const int nb = (int)bench_arg("sparselu_dep", argc, argv, 1, 40, 1, 4096);
  BS = (int)bench_arg("sparselu_dep", argc, argv, 2, 48, 1, 4096);
  const int reps = (int)bench_arg("sparselu_dep", argc, argv, 3, 3, 1, 100000);
  const int mode = (int)bench_arg("sparselu_dep", argc, argv, 4, 1, 0, 1);
  void (*run_tasks)(double **, int) = mode ? sparselu_tasks : sparselu_step_tasks;
  np_init();
  NB = nb;
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel), OMPB_ENTRY(GOMP_single_start),
                                OMPB_ENTRY(GOMP_task),     OMPB_ENTRY(GOMP_barrier),
                                OMPB_ENTRY(GOMP_taskwait), OMPB_ENTRY(omp_get_max_threads),
                                OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);
  const int workers = omp_get_max_threads();
  const double tol = 1e-10;

  double **orig = genmat(nb);
  { /* warm-up: a small factorisation with tasks */
    int wb = nb < 4 ? nb : 4;
    NB = wb;
    double **w = genmat(wb);
    run_tasks(w, wb);
    free_matrix(w, wb);
    NB = nb;
  }
  const char *sys = ompb_system(entries, nent);
  ompb_meta(mode ? "omp_sparselu" : "omp_sparselu_task", entries, nent, workers);
  printf("# mode=%s numa_nodes=%d\n", mode ? "depend" : "task", np_nodes);
  printf("system,workers,nb,bs,rep,serial_s,parallel_s,ratio,local_pct\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    double **s = copy_matrix(orig, nb), **p = copy_matrix(orig, nb);
    double t0 = ompb_now_s();
    sparselu_serial(s, nb);
    double ts = ompb_now_s() - t0;
    np_reset();
    t0 = ompb_now_s();
    run_tasks(p, nb);
    double tp = ompb_now_s() - t0;

    for (int q = 0; q < nb * nb; q++) {
      if (!s[q] != !p[q] || (s[q] && memcmp(s[q], p[q], sizeof(double) * (size_t)BS * BS) != 0)) {
        fprintf(stderr,
                "sparselu_dep: WRONG ANSWER: block (%d, %d) differs from the serial "
                "factorisation\n",
                q / nb, q % nb);
        return 1;
      }
    }
    if (rep == 0) {
      double res = residual(orig, p, nb);
      if (!(res < tol)) {
        fprintf(stderr, "sparselu_dep: WRONG ANSWER: |LUx - Ax| / |Ax| = %g (limit %g)\n", res,
                tol);
        return 1;
      }
    }
    printf("%s,%d,%d,%d,%d,%.6f,%.6f,%.4f,%.1f\n", sys, workers, nb, BS, rep, ts, tp,
           ts > 0 ? tp / ts : 0.0, np_local_pct());
    fflush(stdout);
    free_matrix(s, nb);
    free_matrix(p, nb);
  }
  free_matrix(orig, nb);
  return 0;
}
