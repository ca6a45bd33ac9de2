// A halo-exchange stencil across MPI ranks (docs/mpi.md, "Benchmarks"):
// Jacobi sweeps of the 2-D Poisson equation on an n x n grid cut into bands
// of rows, one band a rank, each band into `blocks` blocks of rows that
// ito's workers update in parallel. Before a sweep a rank needs its
// neighbours' edge rows (the halo).
//  - plain: the bulk-synchronous MPI program: the halo exchange
//    (MPI's own blocking MPI_Sendrecv, PMPI_Sendrecv, up and down: the
//    worker waits in it), then every block of the sweep;
//  - overlap: every block of a sweep is a lightweight thread; the two edge
//    blocks exchange their halo with a blocking MPI_Sendrecv first, which
//    parks them (libito-mpi.so) while the workers update the inner blocks.
// Both do the same arithmetic on every point in the same order, so their
// grids must be equal bit for bit; rank 0 also checks a sample of points
// against the sweeps done on the whole grid in one process.
//
//   mpirun -np R halo plain|overlap [n=2048] [sweeps=100] [blocks=16]
// prints on rank 0: version,ranks,workers,n,sweeps,blocks,seconds,checksum
#include <ito/ito_mpi.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int rank, nranks, n, sweeps, blocks;
int r0, r1;  // this rank's rows [r0, r1) of the grid

double source(int i, int j) {
  double x = double(i) / (n - 1), y = double(j) / (n - 1);
  return -(x * x + y * y) * std::exp(x * y);
}
double boundary(int i, int j) {
  double x = double(i) / (n - 1), y = double(j) / (n - 1);
  return std::exp(x * y);
}

// Local rows 1..rows of u (row 0 and rows+1 are the halo), global row r0 + k - 1.
struct band {
  int rows;
  std::vector<double> u, v, f;
  double *row(std::vector<double> &a, int k) { return a.data() + size_t(k) * n; }
};

void update_rows(band &b, const std::vector<double> &src, std::vector<double> &dst, int k0,
                 int k1) {
  const double h2 = 1.0 / double(n - 1) / double(n - 1);
  for (int k = k0; k < k1; k++) {
    int i = r0 + k - 1;
    const double *up = src.data() + size_t(k - 1) * n, *mid = src.data() + size_t(k) * n,
                 *dn = src.data() + size_t(k + 1) * n;
    double *out = dst.data() + size_t(k) * n;
    const double *f = b.f.data() + size_t(k) * n;
    for (int j = 0; j < n; j++) {
      if (i == 0 || i == n - 1 || j == 0 || j == n - 1)
        out[j] = boundary(i, j);
      else
        out[j] = 0.25 * (up[j] + dn[j] + mid[j - 1] + mid[j + 1] + h2 * f[j]);
    }
  }
}

// The plain version calls MPI's own blocking call (its worker waits in it,
// as a plain MPI program's core does); the overlap version the one
// libito-mpi.so interposes (the calling thread parks).
bool plain;
int sendrecv(void *sbuf, int dst, int stag, void *rbuf, int src, int rtag) {
  if (plain)
    return PMPI_Sendrecv(sbuf, n, MPI_DOUBLE, dst, stag, rbuf, n, MPI_DOUBLE, src, rtag,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return MPI_Sendrecv(sbuf, n, MPI_DOUBLE, dst, stag, rbuf, n, MPI_DOUBLE, src, rtag,
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

// The halo of src: row 1 goes up and row `rows` down; rows 0 and rows+1 come back.
int exchange_up(std::vector<double> &src) {
  if (rank == 0) return MPI_SUCCESS;
  return sendrecv(src.data() + n, rank - 1, 1, src.data(), rank - 1, 2);
}
int exchange_down(band &b, std::vector<double> &src) {
  if (rank == nranks - 1) return MPI_SUCCESS;
  return sendrecv(src.data() + size_t(b.rows) * n, rank + 1, 2, src.data() + size_t(b.rows + 1) * n,
                  rank + 1, 1);
}

void check(int rc) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "halo: MPI error %d\n", rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

struct run_args {
  band *b;
  bool overlap;
};

// The sweeps, on an ito thread.
void *sweep_all(void *p) {
  run_args *a = static_cast<run_args *>(p);
  band &b = *a->b;
  const int per = (b.rows + blocks - 1) / blocks;
  for (int s = 0; s < sweeps; s++) {
    std::vector<double> &src = s % 2 ? b.v : b.u, &dst = s % 2 ? b.u : b.v;
    if (!a->overlap) {
      check(exchange_up(src));
      check(exchange_down(b, src));
      ito::parallel_for(0, blocks, 1, [&](int k) {
        int k0 = 1 + k * per, k1 = std::min(b.rows + 1, k0 + per);
        if (k0 < k1) update_rows(b, src, dst, k0, k1);
      });
      continue;
    }
    ito::task_group g;
    for (int k = 0; k < blocks; k++) {
      g.run([&, k] {
        int k0 = 1 + k * per, k1 = std::min(b.rows + 1, k0 + per);
        if (k0 >= k1) return;
        // an edge block waits for its halo (parked), the others compute at once
        if (k0 == 1) check(exchange_up(src));
        if (k1 == b.rows + 1) check(exchange_down(b, src));
        update_rows(b, src, dst, k0, k1);
      });
    }
    g.wait();
  }
  return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 2 || (std::strcmp(argv[1], "plain") && std::strcmp(argv[1], "overlap"))) {
    if (rank == 0) std::fprintf(stderr, "usage: halo plain|overlap [n] [sweeps] [blocks]\n");
    MPI_Finalize();
    return 2;
  }
  bool overlap = std::strcmp(argv[1], "overlap") == 0;
  plain = !overlap;
  n = argc > 2 ? std::atoi(argv[2]) : 2048;
  sweeps = argc > 3 ? std::atoi(argv[3]) : 100;
  blocks = argc > 4 ? std::atoi(argv[4]) : 16;
  if (n < 8 || sweeps < 1 || blocks < 2 || n / nranks < blocks) {
    if (rank == 0) std::fprintf(stderr, "halo: bad sizes\n");
    MPI_Finalize();
    return 2;
  }
  r0 = int(long(n) * rank / nranks);
  r1 = int(long(n) * (rank + 1) / nranks);
  band b;
  b.rows = r1 - r0;
  b.u.assign(size_t(b.rows + 2) * n, 0.0);
  b.v.assign(size_t(b.rows + 2) * n, 0.0);
  b.f.assign(size_t(b.rows + 2) * n, 0.0);
  for (int k = 1; k <= b.rows; k++)
    for (int j = 0; j < n; j++) b.f[size_t(k) * n + j] = source(r0 + k - 1, j);
  if (ito_init() != 0) return 3;
  run_args a{&b, overlap};
  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  ito_thread_t t;
  if (ito_create(sweep_all, &a, &t) != 0 || ito_join(t, nullptr) != 0) return 3;
  MPI_Barrier(MPI_COMM_WORLD);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // the result: a checksum of the whole grid, and every rank's rows
  const std::vector<double> &res = sweeps % 2 ? b.v : b.u;
  double part = 0, sum = 0;
  for (int k = 1; k <= b.rows; k++)
    for (int j = 0; j < n; j++) part += res[size_t(k) * n + j] * (1 + (r0 + k + j) % 7);
  MPI_Reduce(&part, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  // rank 0 checks its own rows against the same sweeps on the whole grid
  if (rank == 0) {
    std::vector<double> u(size_t(n) * n, 0.0), v(size_t(n) * n, 0.0), f(size_t(n) * n);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) f[size_t(i) * n + j] = source(i, j);
    const double h2 = 1.0 / double(n - 1) / double(n - 1);
    for (int s = 0; s < sweeps; s++) {
      std::vector<double> &src = s % 2 ? v : u, &dst = s % 2 ? u : v;
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
          dst[size_t(i) * n + j] =
              (i == 0 || i == n - 1 || j == 0 || j == n - 1)
                  ? boundary(i, j)
                  : 0.25 * (src[size_t(i - 1) * n + j] + src[size_t(i + 1) * n + j] +
                            src[size_t(i) * n + j - 1] + src[size_t(i) * n + j + 1] +
                            h2 * f[size_t(i) * n + j]);
    }
    const std::vector<double> &want = sweeps % 2 ? v : u;
    for (int k = 1; k <= b.rows; k++)
      if (std::memcmp(&res[size_t(k) * n], &want[size_t(r0 + k - 1) * n], sizeof(double) * n)) {
        std::fprintf(stderr, "halo: WRONG ANSWER in row %d\n", r0 + k - 1);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    std::printf("version,ranks,workers,n,sweeps,blocks,seconds,checksum\n");
    std::printf("%s,%d,%d,%d,%d,%d,%.6f,%.10e\n", argv[1], nranks, ito_num_workers(), n, sweeps,
                blocks, secs, sum);
  }
  MPI_Finalize();
  return 0;
}
