// fib across MPI ranks (docs/mpi.md, "Benchmarks"): a task tree whose
// upper levels are spread over the ranks, where a task that sends a
// subtree to another rank blocks in MPI_Recv for its result.
//  - fib(n) at depth d < ship (and more than one rank): fib(n - 1) is a fork
//    on this rank, fib(n - 2) goes to rank (r + 1 + d mod (R - 1)) mod R
//    as a request (MPI_Send) and the task waits for the answer in a
//    blocking MPI_Recv, which parks it (libito-mpi.so) while its worker
//    runs fib(n - 1) and whatever else is ready;
//  - every rank serves requests: a thread blocked in MPI_Recv takes each
//    request and starts a lightweight thread that computes it (spreading
//    further from there) and sends the answer back with MPI_Send;
//  - below depth `ship` the tree is plain fork-join on the rank's workers,
//    serial under `cutoff`.
// On plain blocking MPI with a few workers a rank whose workers all wait
// for answers would never serve the requests those answers need; on ito
// the waits park. Rank 0 checks the result against fib computed by
// iteration and stops the servers.
//
//   mpirun -np R dfib [n=38] [ship=6] [cutoff=22]
// prints on rank 0: ranks,workers,n,ship,cutoff,shipped,seconds,result
#include <ito/ito_mpi.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int TAG_REQ = 1, TAG_REPLY0 = 100, NTAGS = 20000;
int rank, nranks, ship, cutoff;
std::atomic<long> shipped{0}, serving{0};
std::atomic<unsigned> next_tag{0};

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "dfib: %s: MPI error %d\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

__attribute__((noinline)) long fib_serial(int n) {
  return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

long fib_local(int n) {
  if (n < cutoff) return fib_serial(n);
  long a = 0;
  ito::task_group g;
  g.run([&] { a = fib_local(n - 1); });
  long b = fib_local(n - 2);
  g.wait();
  return a + b;
}

// fib(n) at depth d of the spread part of the tree
long fib_dist(int n, int d) {
  if (d >= ship || nranks == 1 || n < cutoff) return fib_local(n);
  int to = (rank + 1 + d % (nranks - 1)) % nranks;  // (never this rank)
  long a = 0;
  ito::task_group g;
  g.run([&] { a = fib_dist(n - 1, d + 1); });
  // fib(n - 2) on rank `to`: a request, then a blocking wait for its answer
  int tag = TAG_REPLY0 + int(next_tag.fetch_add(1) % NTAGS);
  long req[3] = {n - 2, d + 1, tag}, b = 0;
  check(MPI_Send(req, 3, MPI_LONG, to, TAG_REQ, MPI_COMM_WORLD), "Send");
  check(MPI_Recv(&b, 1, MPI_LONG, to, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "Recv");
  shipped++;
  g.wait();
  return a + b;
}

struct request {
  long n, d, tag;
  int from;
};

void *serve_one(void *p) {
  request *r = static_cast<request *>(p);
  long v = fib_dist(int(r->n), int(r->d));
  check(MPI_Send(&v, 1, MPI_LONG, r->from, int(r->tag), MPI_COMM_WORLD), "Send");
  delete r;
  serving--;
  return nullptr;
}

// Requests until an empty one (n < 0) from rank 0; then until the threads
// it started have returned from their last MPI_Send.
void *server(void *) {
  for (;;) {
    long req[3];
    MPI_Status st;
    check(MPI_Recv(req, 3, MPI_LONG, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD, &st), "Recv");
    if (req[0] < 0) {
      while (serving.load()) ito_yield();
      return nullptr;
    }
    serving++;
    auto *r = new request{req[0], req[1], req[2], st.MPI_SOURCE};
    ito_thread_t t;
    if (ito_create(serve_one, r, &t) != 0 || ito_detach(t) != 0) {
      std::fprintf(stderr, "dfib: cannot create a thread\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

struct job {
  int n;
  long result;
};
void *run_root(void *p) {
  job *j = static_cast<job *>(p);
  j->result = fib_dist(j->n, 0);
  return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int n = argc > 1 ? std::atoi(argv[1]) : 38;
  ship = argc > 2 ? std::atoi(argv[2]) : 6;
  cutoff = argc > 3 ? std::atoi(argv[3]) : 22;
  if (n < 2 || n > 60 || ship < 0 || ship > 12 || cutoff < 2) {
    if (rank == 0) std::fprintf(stderr, "usage: dfib [n 2..60] [ship 0..12] [cutoff >= 2]\n");
    MPI_Finalize();
    return 2;
  }
  if (ito_init() != 0) return 3;
  ito_thread_t srv;
  if (ito_create(server, nullptr, &srv) != 0) return 3;
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = 0;
  job j{n, 0};
  double secs = 0;
  if (rank == 0) {
    auto t0 = std::chrono::steady_clock::now();
    ito_thread_t t;
    if (ito_create(run_root, &j, &t) != 0 || ito_join(t, nullptr) != 0) return 3;
    secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long a = 0, b = 1;
    for (int i = 0; i < n; i++) {
      long c = a + b;
      a = b;
      b = c;
    }
    if (j.result != a) {
      std::fprintf(stderr, "dfib: WRONG ANSWER fib(%d) = %ld, not %ld\n", n, j.result, a);
      rc = 1;
    }
    // every answer came back: the servers stop
    long stop[3] = {-1, 0, 0};
    for (int r = 0; r < nranks; r++)
      check(MPI_Send(stop, 3, MPI_LONG, r, TAG_REQ, MPI_COMM_WORLD), "Send");
  }
  ito_join(srv, nullptr);
  long mine = shipped.load(), all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("ranks,workers,n,ship,cutoff,shipped,seconds,result\n");
    std::printf("%d,%d,%d,%d,%d,%ld,%.6f,%ld\n", nranks, ito_num_workers(), n, ship, cutoff, all,
                secs, j.result);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
