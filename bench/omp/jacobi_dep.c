/* A blocked Jacobi sweep for the 2-D Poisson equation with tasks, in the
 * style of KASTORS' jacobi-task-dep and jacobi-block-task (the NUMA depend
 * paper, section 4.1; docs/references.md): the n x n grid is cut into
 * blocks of b x b points; each sweep reads one grid and writes the other
 * (the two alternate), and the update of one block is one task.
 *  - mode 1 (depend, the default): each task has depend(in:) on its own
 *    block and its four neighbours in the grid it reads and depend(out:) on
 *    its block in the grid it writes; one thread creates the tasks of all
 *    the sweeps at once (parallel + single) and the dependences alone order
 *    them, with no barrier between sweeps. A block's dependence object is
 *    its first point.
 *  - mode 0 (task): the tasks of one sweep, then taskwait.
 * The grids are placed block-cyclically over the NUMA nodes with libnuma
 * (numa_place.h): the band of block rows bx on node bx % nodes, whatever
 * the runtime; local_pct is the share of tasks that ran on a CPU of the
 * node of the block they write.
 *
 *   jacobi_dep [n=2048] [block=128] [sweeps=50] [reps=3] [mode=1]
 *
 * -u'' = f on the unit square, u = g on the boundary: every point computes
 * unew = (u_N + u_S + u_W + u_E + h^2 f) / 4, boundary points copy g. The
 * tasks do exactly the serial loop's arithmetic on each point, so the
 * result must equal the serial one bit for bit; serial_s is that serial
 * run (the same block loops without tasks, on the same placement). CSV,
 * one line per repetition:
 *   system,workers,n,block,sweeps,rep,serial_s,parallel_s,ratio,local_pct
 * Exits 1 on a wrong result. */
#define _GNU_SOURCE /* dladdr, in omp_common.h */
#include <math.h>

#include "numa_place.h"
#include "omp_common.h"

typedef struct {
  int n, b, nb;    /* grid points per side, block side, blocks per side */
  double h2;       /* grid step squared */
  const double *f; /* right-hand side; boundary values where on the boundary */
} grid;

/* One block of one sweep: src -> dst. */
static void sweep_block(const grid *g, const double *src, double *dst, int bx, int by) {
  const int n = g->n;
  const int i0 = bx * g->b, i1 = i0 + g->b < n ? i0 + g->b : n;
  const int j0 = by * g->b, j1 = j0 + g->b < n ? j0 + g->b : n;
  for (int i = i0; i < i1; i++)
    for (int j = j0; j < j1; j++) {
      long p = (long)i * n + j;
      if (i == 0 || j == 0 || i == n - 1 || j == n - 1)
        dst[p] = g->f[p];
      else
        dst[p] = 0.25 * (src[p - n] + src[p + n] + src[p - 1] + src[p + 1] + g->h2 * g->f[p]);
    }
}

/* The first point of block (bx, by): its dependence object. */
#define BLK(a, bx, by) (a)[(long)(bx)*g->b * g->n + (long)(by)*g->b]

/* mode 0: the tasks of a sweep, then taskwait */
static void jacobi_sweep_tasks(const grid *g, double *u0, double *u1, int sweeps) {
#pragma omp parallel
#pragma omp single
  for (int s = 0; s < sweeps; s++) {
    double *src = s % 2 ? u1 : u0, *dst = s % 2 ? u0 : u1;
    for (int bx = 0; bx < g->nb; bx++)
      for (int by = 0; by < g->nb; by++) {
#pragma omp task firstprivate(src, dst, bx, by)
        {
          np_count(np_node_of_chunk((size_t)bx));
          sweep_block(g, src, dst, bx, by);
        }
      }
#pragma omp taskwait
  }
}

/* mode 1: every sweep's tasks at once, ordered by their dependences */
static void jacobi_tasks(const grid *g, double *u0, double *u1, int sweeps) {
#pragma omp parallel
#pragma omp single
  for (int s = 0; s < sweeps; s++) {
    double *src = s % 2 ? u1 : u0, *dst = s % 2 ? u0 : u1;
    for (int bx = 0; bx < g->nb; bx++)
      for (int by = 0; by < g->nb; by++) {
        /* a missing neighbour is the block itself (a repeated in: is harmless) */
        int xm = bx > 0 ? bx - 1 : bx, xp = bx < g->nb - 1 ? bx + 1 : bx;
        int ym = by > 0 ? by - 1 : by, yp = by < g->nb - 1 ? by + 1 : by;
        // clang-format off
#pragma omp task firstprivate(src, dst, bx, by) \
    depend(in: BLK(src, bx, by), BLK(src, xm, by), BLK(src, xp, by), BLK(src, bx, ym), \
               BLK(src, bx, yp)) \
    depend(out: BLK(dst, bx, by))
        // clang-format on
        {
          np_count(np_node_of_chunk((size_t)bx));
          sweep_block(g, src, dst, bx, by);
        }
      }
  }
  /* the barrier at the end of single waits for every task */
}

static void jacobi_serial(const grid *g, double *u0, double *u1, int sweeps) {
  for (int s = 0; s < sweeps; s++) {
    double *src = s % 2 ? u1 : u0, *dst = s % 2 ? u0 : u1;
    for (int bx = 0; bx < g->nb; bx++)
      for (int by = 0; by < g->nb; by++) sweep_block(g, src, dst, bx, by);
  }
}

static void init(const grid *g, double *u0, double *u1) {
  const long nn = (long)g->n * g->n;
  for (long p = 0; p < nn; p++) u0[p] = u1[p] = 0.0;
}

int main(int argc, char **argv) {
  grid g;
  g.n = (int)bench_arg("jacobi_dep", argc, argv, 1, 2048, 3, 1 << 15);
  g.b = (int)bench_arg("jacobi_dep", argc, argv, 2, 128, 1, 1 << 15);
  const int sweeps = (int)bench_arg("jacobi_dep", argc, argv, 3, 50, 1, 1000000);
  const int reps = (int)bench_arg("jacobi_dep", argc, argv, 4, 3, 1, 100000);
  const int mode = (int)bench_arg("jacobi_dep", argc, argv, 5, 1, 0, 1);
  void (*run_tasks)(const grid *, double *, double *, int) =
      mode ? jacobi_tasks : jacobi_sweep_tasks;
  np_init();
  if (g.b > g.n) g.b = g.n;
  g.nb = (g.n + g.b - 1) / g.b;
  const int n = g.n;
  const double h = 1.0 / (n - 1);
  g.h2 = h * h;
  const ompb_entry entries[] = {OMPB_ENTRY(GOMP_parallel), OMPB_ENTRY(GOMP_single_start),
                                OMPB_ENTRY(GOMP_task),     OMPB_ENTRY(GOMP_barrier),
                                OMPB_ENTRY(GOMP_taskwait), OMPB_ENTRY(omp_get_max_threads),
                                OMPB_META_ENTRIES};
  const int nent = (int)(sizeof entries / sizeof entries[0]);
  const int workers = omp_get_max_threads();
  const size_t nn = (size_t)n * (size_t)n;
  const size_t band = (size_t)g.b * (size_t)n * sizeof(double); /* a row of blocks */
  double *f = np_alloc(nn * sizeof *f, band);
  double *s0 = np_alloc(nn * sizeof *s0, band), *s1 = np_alloc(nn * sizeof *s1, band);
  double *p0 = np_alloc(nn * sizeof *p0, band), *p1 = np_alloc(nn * sizeof *p1, band);
  /* f: a smooth source inside, g = a smooth function on the boundary */
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double x = i * h, y = j * h;
      int edge = i == 0 || j == 0 || i == n - 1 || j == n - 1;
      f[(long)i * n + j] = edge ? exp(x * y) : -(x * x + y * y) * exp(x * y);
    }
  g.f = f;

  /* warm-up: one sweep with tasks */
  init(&g, p0, p1);
  run_tasks(&g, p0, p1, 1);
  const char *sys = ompb_system(entries, nent);
  ompb_meta(mode ? "omp_jacobi" : "omp_jacobi_task", entries, nent, workers);
  printf("# mode=%s numa_nodes=%d\n", mode ? "depend" : "task", np_nodes);
  printf("system,workers,n,block,sweeps,rep,serial_s,parallel_s,ratio,local_pct\n");
  fflush(stdout);

  for (int rep = 0; rep < reps; rep++) {
    init(&g, s0, s1);
    double t0 = ompb_now_s();
    jacobi_serial(&g, s0, s1, sweeps);
    double ts = ompb_now_s() - t0;

    init(&g, p0, p1);
    np_reset();
    t0 = ompb_now_s();
    run_tasks(&g, p0, p1, sweeps);
    double tp = ompb_now_s() - t0;

    const double *want = sweeps % 2 ? s1 : s0, *got = sweeps % 2 ? p1 : p0;
    if (memcmp(want, got, nn * sizeof *want) != 0) {
      for (size_t p = 0; p < nn; p++)
        if (want[p] != got[p]) {
          fprintf(stderr,
                  "jacobi_dep: WRONG ANSWER after %d sweeps: u[%zu][%zu] = %.17g, serial %.17g\n",
                  sweeps, p / (size_t)n, p % (size_t)n, got[p], want[p]);
          break;
        }
      return 1;
    }
    printf("%s,%d,%d,%d,%d,%d,%.6f,%.6f,%.4f,%.1f\n", sys, workers, n, g.b, sweeps, rep, ts, tp,
           ts > 0 ? tp / ts : 0.0, np_local_pct());
    fflush(stdout);
  }
  np_free(f, nn * sizeof *f);
  np_free(s0, nn * sizeof *s0);
  np_free(s1, nn * sizeof *s1);
  np_free(p0, nn * sizeof *p0);
  np_free(p1, nn * sizeof *p1);
  return 0;
}
