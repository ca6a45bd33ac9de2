// HPCC RandomAccess (GUPS) across MPI ranks (docs/mpi.md, "Benchmarks"): a
// table of 2^m 64-bit words spread over the ranks in equal blocks (word i
// on rank i / (2^m / R); R a power of two), 4 x 2^m updates
// `T[a & (2^m - 1)] ^= a` with a from HPCC's random stream (x <- 2x, xor
// the polynomial 7 when the top bit was set), each rank the updates of its
// stretch of the stream (HPCC's starts()). An update whose word is on
// another rank travels there.
//  - reference: HPCC's MPI algorithm, one thread a rank (MPI's own calls,
//    PMPI_*): each update is applied at once when its word is local, else
//    put in the bucket of its rank; a full bucket (1,024 updates) goes out
//    with a non-blocking send, and between updates the rank polls one
//    posted receive for buckets from the others and applies them; at the
//    end every rank tells every other it is done and keeps receiving until
//    all said so;
//  - threads: remote updates carried by lightweight threads that block in
//    MPI, as the MassiveThreads I/O paper (Nakashima and Taura) runs
//    Chapel's RandomAccess on MassiveThreads, on ito: the rank's stretch of
//    the stream is cut into chunks that ito's workers generate in
//    parallel; each chunk's bucket for a rank goes out from a lightweight
//    thread of its own that blocks in MPI_Send, and from every other rank
//    a receiver thread blocks in MPI_Recv and applies what comes (both
//    parked by libito-mpi.so while the workers generate). Updates race on
//    the table as HPCC allows (a lost update is an error it counts).
// Verification (HPCC's rule): the same updates once more with the reference
// algorithm undo them (xor); the words that are not back to their index are
// errors, and the run is valid with at most 1% of the table in error.
//
//   mpirun -np R gups reference|threads [m=22] [chunk=4096]
// prints on rank 0:
//   version,ranks,workers,log2_table,updates,seconds,gups,errors,valid
#include <ito/ito_mpi.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using u64 = std::uint64_t;
constexpr u64 POLY = 7;
constexpr u64 PERIOD = 1317624576693539401ull;
constexpr int BUCKET = 1024;  // updates a message in the reference version
constexpr int TAG_UPD = 1, TAG_DONE = 2, TAG_T = 3;

int rank, nranks, logn;
u64 tsize, lsize, lbase;  // the table's words, this rank's, its first
std::vector<u64> table;

// HPCC's random stream: the n-th value (n >= 0), by squaring the step matrix
// (HPCC's starts(), written here from its definition: x_{n} = x_0 * 2^n in
// GF(2)[x] / (x^64 + 7), with x_0 = 1).
u64 next_of(u64 x) { return (x << 1) ^ ((std::int64_t)x < 0 ? POLY : 0); }
u64 starts(std::int64_t n) {
  while (n < 0) n += PERIOD;
  while (n > std::int64_t(PERIOD)) n -= PERIOD;
  if (n == 0) return 1;
  u64 m2[64];
  u64 t = 1;
  for (int i = 0; i < 64; i++) {
    m2[i] = t;
    t = next_of(next_of(t));
  }
  int i = 62;
  while (i >= 0 && !((n >> i) & 1)) i--;
  u64 r = 2;
  while (i > 0) {
    u64 s = 0;
    for (int j = 0; j < 64; j++)
      if ((r >> j) & 1) s ^= m2[j];
    r = s;
    i--;
    if ((n >> i) & 1) r = next_of(r);
  }
  return r;
}

inline int owner(u64 a) { return int((a & (tsize - 1)) / lsize); }
// (relaxed loads and stores: two updates of one word at once may lose one,
// which HPCC's error count allows; no torn words)
inline void apply(u64 a) {
  u64 *w = &table[(a & (tsize - 1)) - lbase];
  __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) ^ a, __ATOMIC_RELAXED);
}

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "gups: %s: MPI error %d\n", what, rc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// ---- reference: HPCC's MPI algorithm, on one thread, MPI's own calls ----
void reference(u64 nupd, u64 first) {
  std::vector<std::vector<u64>> bucket(nranks);
  for (auto &b : bucket) b.reserve(BUCKET);
  std::vector<u64> in(BUCKET);
  std::vector<std::vector<u64>> out;  // buffers of sends in flight
  std::vector<MPI_Request> sends;
  MPI_Request rq;
  MPI_Status st;
  int done_from = 0, flag;
  bool posted = false;
  auto post = [&] {
    check(PMPI_Irecv(in.data(), BUCKET, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                     &rq),
          "Irecv");
    posted = true;
  };
  auto got = [&] {  // the posted receive completed with st
    posted = false;
    if (st.MPI_TAG == TAG_DONE) {
      done_from++;
    } else {
      int cnt;
      PMPI_Get_count(&st, MPI_UINT64_T, &cnt);
      for (int k = 0; k < cnt; k++) apply(in[size_t(k)]);
    }
  };
  // what came so far, without waiting
  auto poll = [&] {
    for (;;) {
      check(PMPI_Test(&rq, &flag, &st), "Test");
      if (!flag) return;
      got();
      post();
    }
  };
  post();
  auto flush = [&](int d) {
    out.emplace_back(std::move(bucket[size_t(d)]));
    bucket[size_t(d)] = std::vector<u64>();
    bucket[size_t(d)].reserve(BUCKET);
    sends.emplace_back();
    check(PMPI_Isend(out.back().data(), int(out.back().size()), MPI_UINT64_T, d, TAG_UPD,
                     MPI_COMM_WORLD, &sends.back()),
          "Isend");
    if (sends.size() >= 64) {  // bounded memory: finish the older ones
      check(PMPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE), "Waitall");
      sends.clear();
      out.clear();
    }
  };
  u64 a = starts(std::int64_t(first));
  for (u64 i = 0; i < nupd; i++) {
    a = next_of(a);
    int d = owner(a);
    if (d == rank) {
      apply(a);
    } else {
      bucket[size_t(d)].push_back(a);
      if (bucket[size_t(d)].size() == BUCKET) flush(d);
    }
    if ((i & 255) == 0) poll();
  }
  for (int d = 0; d < nranks; d++)
    if (d != rank && !bucket[size_t(d)].empty()) flush(d);
  check(PMPI_Waitall(int(sends.size()), sends.data(), MPI_STATUSES_IGNORE), "Waitall");
  sends.clear();
  out.clear();
  // done: an empty message of its own tag to each; receive until all are
  std::vector<MPI_Request> dones;
  for (int d = 0; d < nranks; d++) {
    if (d == rank) continue;
    dones.emplace_back();
    check(PMPI_Isend(nullptr, 0, MPI_UINT64_T, d, TAG_DONE, MPI_COMM_WORLD, &dones.back()),
          "Isend");
  }
  while (done_from < nranks - 1) {
    check(PMPI_Wait(&rq, &st), "Wait");
    got();
    if (done_from < nranks - 1) post();
  }
  check(PMPI_Waitall(int(dones.size()), dones.data(), MPI_STATUSES_IGNORE), "Waitall");
  // every rank said it is done (perhaps while this one generated): nothing
  // more of this run comes, and a receive still posted goes
  if (posted) {
    check(PMPI_Cancel(&rq), "Cancel");
    check(PMPI_Wait(&rq, MPI_STATUS_IGNORE), "Wait");
  }
}

// ---- threads: lightweight threads that block in MPI ----
int chunk;

struct send_arg {
  std::vector<u64> buf;
  int dst;
};
void *sender(void *p) {
  auto *s = static_cast<send_arg *>(p);
  check(MPI_Send(s->buf.data(), int(s->buf.size()), MPI_UINT64_T, s->dst, TAG_T, MPI_COMM_WORLD),
        "Send");
  delete s;
  return nullptr;
}

// One rank's updates from `src` until its empty message.
void *receiver(void *p) {
  int src = int(reinterpret_cast<std::intptr_t>(p));
  std::vector<u64> in(static_cast<size_t>(chunk));
  for (;;) {
    MPI_Status st;
    check(MPI_Recv(in.data(), chunk, MPI_UINT64_T, src, TAG_T, MPI_COMM_WORLD, &st), "Recv");
    int cnt;
    MPI_Get_count(&st, MPI_UINT64_T, &cnt);
    if (cnt == 0) return nullptr;
    for (int k = 0; k < cnt; k++) apply(in[size_t(k)]);
  }
}

void *threads_main(void *p) {
  auto nupd = *static_cast<u64 *>(p);
  u64 first = u64(rank) * nupd;
  std::vector<ito_thread_t> recv(static_cast<size_t>(nranks));
  for (int s = 0; s < nranks; s++)
    if (s != rank)
      check(ito_create(receiver, reinterpret_cast<void *>(std::intptr_t(s)), &recv[size_t(s)])
                ? MPI_ERR_OTHER
                : MPI_SUCCESS,
            "create");
  // the chunks, generated in parallel; each chunk's bucket for a rank
  // leaves from a lightweight thread of its own, which parks in MPI_Send
  // while the workers go on; the end markers go after every bucket
  u64 nchunks = (nupd + u64(chunk) - 1) / u64(chunk);
  ito::parallel_for(u64(0), nchunks, u64(1), [&](u64 c) {
    u64 lo = c * u64(chunk), hi = lo + u64(chunk) < nupd ? lo + u64(chunk) : nupd;
    std::vector<std::vector<u64>> b(static_cast<size_t>(nranks));
    u64 a = starts(std::int64_t(first + lo));
    for (u64 i = lo; i < hi; i++) {
      a = next_of(a);
      int d = owner(a);
      if (d == rank)
        apply(a);
      else
        b[size_t(d)].push_back(a);
    }
    ito::task_group g;
    for (int d = 0; d < nranks; d++) {
      if (b[size_t(d)].empty()) continue;
      auto *s = new send_arg{std::move(b[size_t(d)]), d};
      g.run([s] { sender(s); });
    }
    g.wait();
  });
  for (int d = 0; d < nranks; d++)
    if (d != rank) check(MPI_Send(nullptr, 0, MPI_UINT64_T, d, TAG_T, MPI_COMM_WORLD), "Send");
  for (int s = 0; s < nranks; s++)
    if (s != rank) ito_join(recv[size_t(s)], nullptr);
  return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  bool threads = argc > 1 && !std::strcmp(argv[1], "threads");
  if (argc < 2 || (!threads && std::strcmp(argv[1], "reference"))) {
    if (rank == 0) std::fprintf(stderr, "usage: gups reference|threads [log2 table] [chunk]\n");
    MPI_Finalize();
    return 2;
  }
  logn = argc > 2 ? std::atoi(argv[2]) : 22;
  chunk = argc > 3 ? std::atoi(argv[3]) : 4096;
  if (logn < 10 || logn > 34 || chunk < 64 || (nranks & (nranks - 1)) ||
      (u64(1) << logn) < u64(nranks) * 1024) {
    if (rank == 0)
      std::fprintf(stderr,
                   "gups: the ranks must be a power of two, log2 table 10 to 34 with 1024 "
                   "words a rank at least, chunk 64 or more\n");
    MPI_Finalize();
    return 2;
  }
  tsize = u64(1) << logn;
  lsize = tsize / u64(nranks);
  lbase = lsize * u64(rank);
  table.resize(lsize);
  for (u64 i = 0; i < lsize; i++) table[i] = lbase + i;
  u64 nupd = 4 * tsize / u64(nranks);  // this rank's (HPCC: 4 x the table)
  if (ito_init() != 0) return 3;

  MPI_Barrier(MPI_COMM_WORLD);
  auto t0 = std::chrono::steady_clock::now();
  if (threads) {
    ito_thread_t t;
    if (ito_create(threads_main, &nupd, &t) != 0 || ito_join(t, nullptr) != 0) return 3;
  } else {
    reference(nupd, u64(rank) * nupd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // HPCC's verification: the same updates again (exactly, one thread) undo
  // them; what is not back is an error
  reference(nupd, u64(rank) * nupd);
  MPI_Barrier(MPI_COMM_WORLD);
  unsigned long long err = 0, errs = 0;
  for (u64 i = 0; i < lsize; i++) err += table[i] != lbase + i;
  MPI_Reduce(&err, &errs, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (rank == 0) {
    bool valid = double(errs) <= 0.01 * double(tsize);
    double total = 4.0 * double(tsize);
    std::printf("version,ranks,workers,log2_table,updates,seconds,gups,errors,valid\n");
    std::printf("%s,%d,%d,%d,%.0f,%.6f,%.6f,%llu,%s\n", argv[1], nranks, ito_num_workers(), logn,
                total, secs, total / secs * 1e-9, errs, valid ? "yes" : "no");
    if (!valid) {
      std::fprintf(stderr, "gups: %llu words in error, more than 1%% of %llu: FAILED\n", errs,
                   (unsigned long long)tsize);
      rc = 1;
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
