// The C++ form of ito's MPI layer (docs/mpi.md): ito::mpi::iwait makes a
// task with dependences complete only when its request has, though its
// function returned at once (TAMPI's Iwait). Each round, on both of 2
// ranks: a task (out: in_buf) posts the receive and iwaits; a task
// (in: in_buf) checks what arrived, so it must start only after the data
// did. The peer sends late (it sleeps first), so a successor that started
// early would read the old contents. The sends are iwaited tasks too
// (in: out_buf), and the next round's task that rewrites out_buf
// (out: out_buf) must wait for the send. ito::mpi::wait / wait_all by name,
// and iwait outside a task with dependences (std::logic_error).
//
//   mpirun -np 2 test_mpi_cpp [rounds=50]
#include <ito/ito_mpi.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "../check.h"

int main(int argc, char **argv) {
  int provided, rank, n;
  CHECK_EQ(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CHECK(n == 2);
  const int peer = 1 - rank, rounds = argc > 1 ? std::atoi(argv[1]) : 50;
  CHECK(ito_init() == 0);
  std::vector<long> in_buf(64), out_buf(64);
  std::atomic<int> wrong{0}, checked{0};
  {
    ito::task_group g;
    for (int r = 0; r < rounds; r++) {
      g.run({ito::out(out_buf)}, [&, r] {  // waits for the previous round's send
        for (int k = 0; k < 64; k++) out_buf[k] = 1000L * r + 10 * rank + k;
      });
      g.run({ito::in(out_buf)}, [&, r] {
        if (rank == r % 2) {  // the two ranks take turns being late
          struct timespec ts = {0, 2 * 1000 * 1000};
          ito_nanosleep(&ts);
        }
        MPI_Request q;
        CHECK_EQ(MPI_Isend(out_buf.data(), 64, MPI_LONG, peer, r, MPI_COMM_WORLD, &q), 0);
        ito::mpi::iwait(q);
      });
      g.run({ito::out(in_buf)}, [&, r] {
        for (auto &x : in_buf) x = -1;
        MPI_Request q;
        CHECK_EQ(MPI_Irecv(in_buf.data(), 64, MPI_LONG, peer, r, MPI_COMM_WORLD, &q), 0);
        ito::mpi::iwait(q);  // returns at once; the task completes with the receive
      });
      g.run({ito::in(in_buf)}, [&, r] {
        for (int k = 0; k < 64; k++)
          if (in_buf[k] != 1000L * r + 10 * peer + k) wrong++;
        checked++;
      });
    }
    g.wait();
  }
  CHECK_EQ(wrong.load(), 0);
  CHECK_EQ(checked.load(), rounds);
  // by name
  long a = rank, b = -1;
  MPI_Request q[2];
  MPI_Irecv(&b, 1, MPI_LONG, peer, 900, MPI_COMM_WORLD, &q[0]);
  MPI_Isend(&a, 1, MPI_LONG, peer, 900, MPI_COMM_WORLD, &q[1]);
  std::vector<MPI_Request> v(q, q + 2);
  CHECK_EQ(ito::mpi::wait_all(v), MPI_SUCCESS);
  CHECK(b == peer);
  MPI_Irecv(&b, 1, MPI_LONG, peer, 901, MPI_COMM_WORLD, &q[0]);
  MPI_Send(&a, 1, MPI_LONG, peer, 901, MPI_COMM_WORLD);
  CHECK_EQ(ito::mpi::wait(q[0]), MPI_SUCCESS);
  CHECK(q[0] == MPI_REQUEST_NULL && b == peer);
  bool threw = false;
  try {
    ito::mpi::iwait(MPI_REQUEST_NULL);
  } catch (const std::logic_error &) {
    threw = true;
  }
  CHECK(threw);
  CHECK_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  if (rank == 0) std::printf("test_mpi_cpp: %d rounds, every successor saw the data\n", rounds);
  CHECK_EQ(MPI_Finalize(), MPI_SUCCESS);
  return 0;
}
