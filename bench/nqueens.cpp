// nqueens(n): count the placements of n non-attacking queens, one task per
// safe column at each row; each child gets its own copy of the board.
//
//   nqueens_<system> [n=12] [reps=3]
//
// Prints one CSV line per repetition:
//   system,workers,n,rep,serial_s,parallel_s,ratio     (ratio = parallel/serial)
// and exits nonzero with a message if either version counts wrong (known
// counts for n = 1..16).
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/spawn.hpp"
#include "common/util.hpp"

namespace {

constexpr int kMaxN = 16;
const long kKnown[kMaxN + 1] = {1,   1,   0,    0,     2,     10,     4,       40,      92,
                                352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512};

// May a queen go at (row, col) given board[0..row-1] (board[r] = column of row r)?
inline bool safe(const signed char *board, int row, int col) {
  for (int r = 0; r < row; r++) {
    int c = board[r];
    if (c == col || c - col == row - r || col - c == row - r) return false;
  }
  return true;
}

// The baseline: the same recursion, plain serial, one board copy per child.
__attribute__((noinline)) long nq_serial(int n, int row, const signed char *board) {
  if (row == n) return 1;
  long total = 0;
  for (int col = 0; col < n; col++) {
    if (!safe(board, row, col)) continue;
    signed char child[kMaxN];
    std::memcpy(child, board, static_cast<std::size_t>(row));
    child[row] = static_cast<signed char>(col);
    total += nq_serial(n, row + 1, child);
  }
  return total;
}

long nq_par(int n, int row, const signed char *board);

// A child: copies the parent's board, places a queen at (row, col), recurses.
__attribute__((noinline)) long nq_child(int n, int row, const signed char *board, int col) {
  signed char child[kMaxN];
  std::memcpy(child, board, static_cast<std::size_t>(row));
  child[row] = static_cast<signed char>(col);
  return nq_par(n, row + 1, child);
}

// The benchmark: one spawn per safe column, one sync per row. Each child gets
// its own copy of the column (BENCH_SPAWN_COPY): a deferred child (TBB,
// OpenMP, or an ito parent whose continuation was stolen) must not read the
// loop variable after the parent has moved it on.
__attribute__((noinline)) long nq_par(int n, int row, const signed char *board) {
  if (row == n) return 1;
  long cnt[kMaxN] = {0};
  BENCH_TASK_GROUP(tg);
  for (int col = 0; col < n; col++) {
    if (safe(board, row, col)) {
      BENCH_SPAWN_COPY(tg, (col), cnt[col] = nq_child(n, row, board, col));
    }
  }
  BENCH_SYNC(tg);
  long total = 0;
  for (int c = 0; c < n; c++) total += cnt[c];
  return total;
}

}  // namespace

int main(int argc, char **argv) {
  const int n = static_cast<int>(bench::arg_long(argc, argv, 1, 12, 1, kMaxN));
  const int reps = static_cast<int>(bench::arg_long(argc, argv, 2, 3, 1, 100000));
  const long want = kKnown[n];

  const int workers = bench::init_workers();
  bench::print_meta("nqueens", BENCH_SYSTEM, workers);
  std::printf("system,workers,n,rep,serial_s,parallel_s,ratio\n");
  std::fflush(stdout);

  {  // warm-up
    int wn = n < 8 ? n : 8;
    long got = -1;
    signed char empty[kMaxN] = {0};
    bench::run_root([&] { got = nq_par(wn, 0, empty); });
    if (got != kKnown[wn]) {
      std::fprintf(stderr, "nqueens_%s: WRONG ANSWER warm-up nqueens(%d) = %ld, expected %ld\n",
                   BENCH_SYSTEM, wn, got, kKnown[wn]);
      return 1;
    }
  }

  for (int rep = 0; rep < reps; rep++) {
    signed char empty[kMaxN] = {0};
    long rs = -1, rp = -1;
    double ts = bench::seconds([&] {
      int x = n;
      bench::opaque(x);
      rs = nq_serial(x, 0, empty);
      bench::keep(rs);
    });
    double tp = bench::seconds_on_root([&] {
      int x = n;
      bench::opaque(x);
      rp = nq_par(x, 0, empty);
      bench::keep(rp);
    });

    if (rs != want || rp != want) {
      std::fprintf(stderr,
                   "nqueens_%s: WRONG ANSWER nqueens(%d): serial %ld, parallel %ld, expected %ld\n",
                   BENCH_SYSTEM, n, rs, rp, want);
      return 1;
    }
    std::printf("%s,%d,%d,%d,%.6f,%.6f,%.4f\n", BENCH_SYSTEM, workers, n, rep, ts, tp,
                ts > 0 ? tp / ts : 0.0);
    std::fflush(stdout);
  }
  return 0;
}
