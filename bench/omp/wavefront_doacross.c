/* A doacross wavefront: in-place Gauss-Seidel sweeps (the 5-point stencil
 * of the 2-D Poisson equation, as Polybench's seidel-2d) with the rows
 * shared by `omp for ordered(2) schedule(static, 1)` and each row cut into
 * blocks of b columns: block (i, jb) waits for block (i - 1, jb)
 * (`depend(sink: i - 1, jb)`) and posts itself when done
 * (`depend(source)`), so rows run as a pipeline, one block behind each
 * other. A point reads its north and west neighbours new (the row above
 * has posted the block; the west one is the same row, earlier) and its
 * south and east ones old (not updated yet), exactly as the serial sweep,
 * so the result must equal the serial one bit for bit.
 *
 *   wavefront_doacross [n=2048] [block=128] [sweeps=20] [reps=3]
 *
 * serial_s is the serial sweeps (the same block loops without pragmas).
 * CSV, one line per repetition:
 *   system,workers,n,block,sweeps,rep,serial_s,parallel_s,ratio
 * Exits 1 on a wrong result. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include <math.h>

#include "omp_common.h"

typedef struct {
  int n, b, nb;    /* grid points per side, block width, blocks per row */
  double h2;       /* grid step squared */
  const double *f; /* right-hand side */
} grid;

/* Row i (an interior row), columns of block jb: in place. */
static void seidel_block(const grid *g, double *u, int i, int jb) {
  const int n = g->n;
  int j0 = jb * g->b, j1 = j0 + g->b < n - 1 ? j0 + g->b : n - 1;
  if (j0 < 1) j0 = 1;
  double *r = u + (long)i * n;
  const double *fr = g->f + (long)i * n;
  for (int j = j0; j < j1; j++)
    r[j] = 0.25 * (r[j - n] + r[j + n] + r[j - 1] + r[j + 1] + g->h2 * fr[j]);
}

static void seidel_doacross(const grid *g, double *u, int sweeps) {
  const int n = g->n, nb = g->nb;
#pragma omp parallel
  for (int s = 0; s < sweeps; s++) {
    /* (the loop's barrier ends the sweep) */
#pragma omp for ordered(2) schedule(static, 1)
    for (int i = 1; i < n - 1; i++)
      for (int jb = 0; jb < nb; jb++) {
#pragma omp ordered depend(sink : i - 1, jb)
        seidel_block(g, u, i, jb);
#pragma omp ordered depend(source)
      }
  }
}

static void seidel_serial(const grid *g, double *u, int sweeps) {
  for (int s = 0; s < sweeps; s++)
    for (int i = 1; i < g->n - 1; i++)
      for (int jb = 0; jb < g->nb; jb++) seidel_block(g, u, i, jb);
}

/* u: 0 inside, the boundary values on the edges */
static void init(const grid *g, double *u) {
  const int n = g->n;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int edge = i == 0 || j == 0 || i == n - 1 || j == n - 1;
      u[(long)i * n + j] = edge ? g->f[(long)i * n + j] : 0.0;
    }
}

int main(int argc, char **argv) {
  grid g;
  g.n = (int)bench_arg("wavefront_doacross", argc, argv, 1, 2048, 3, 1 << 15);
  g.b = (int)bench_arg("wavefront_doacross", argc, argv, 2, 128, 1, 1 << 15);
  const int sweeps = (int)bench_arg("wavefront_doacross", argc, argv, 3, 20, 1, 1000000);
  const int reps = (int)bench_arg("wavefront_doacross", argc, argv, 4, 3, 1, 100000);
  if (g.b > g.n) g.b = g.n;
  g.nb = (g.n + g.b - 1) / g.b;
  const int n = g.n;
  const double h = 1.0 / (n - 1);
  g.h2 = h * h;
  const ompb_entry entries[] = {
      OMPB_ENTRY(GOMP_parallel),         OMPB_ENTRY(GOMP_loop_doacross_static_start),
      OMPB_ENTRY(GOMP_loop_static_next), OMPB_ENTRY(GOMP_doacross_post),
      OMPB_ENTRY(GOMP_doacross_wait),    OMPB_ENTRY(GOMP_loop_end),
      OMPB_ENTRY(omp_get_max_threads),   OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);
  const int workers = omp_get_max_threads();
  const size_t nn = (size_t)n * (size_t)n;
  double *f = malloc(nn * sizeof *f);
  double *s = malloc(nn * sizeof *s), *p = malloc(nn * sizeof *p);
  if (!f || !s || !p) {
    fprintf(stderr, "wavefront_doacross: out of memory for n=%d\n", n);
    return 3;
  }
  /* f: a smooth source inside, g = a smooth function on the boundary */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double x = i * h, y = j * h;
      int edge = i == 0 || j == 0 || i == n - 1 || j == n - 1;
      f[(long)i * n + j] = edge ? exp(x * y) : -(x * x + y * y) * exp(x * y);
    }
  g.f = f;

  /* warm-up: one sweep */
  init(&g, p);
  seidel_doacross(&g, p, 1);
  const char *sys = ompb_system(entries, nent);
  ompb_meta("omp_wavefront", entries, nent, workers);
  printf("system,workers,n,block,sweeps,rep,serial_s,parallel_s,ratio\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    init(&g, s);
    double t0 = ompb_now_s();
    seidel_serial(&g, s, sweeps);
    double ts = ompb_now_s() - t0;

    init(&g, p);
    t0 = ompb_now_s();
    seidel_doacross(&g, p, sweeps);
    double tp = ompb_now_s() - t0;

    if (memcmp(s, p, nn * sizeof *s) != 0) {
      for (size_t q = 0; q < nn; q++)
        if (s[q] != p[q]) {
          fprintf(stderr,
                  "wavefront_doacross: WRONG ANSWER after %d sweeps: u[%zu][%zu] = %.17g, "
                  "serial %.17g\n",
                  sweeps, q / (size_t)n, q % (size_t)n, p[q], s[q]);
          break;
        }
      return 1;
    }
    printf("%s,%d,%d,%d,%d,%d,%.6f,%.6f,%.4f\n", sys, workers, n, g.b, sweeps, rep, ts, tp,
           ts > 0 ? tp / ts : 0.0);
    fflush(stdout);
  }
  free(f);
  free(s);
  free(p);
  return 0;
}
