/* A user's MPI program on the installed libito-mpi.so (ito::ito_mpi):
 * lightweight threads each exchange a message with the other rank through
 * a blocking MPI_Sendrecv, which parks them. Run with mpirun -np 2. */
#include <ito/ito.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

static int rank;

static void *exchange(void *p) {
  long i = (long)(intptr_t)p, in = -1, out = rank * 1000 + i;
  int peer = 1 - rank;
  if (MPI_Sendrecv(&out, 1, MPI_LONG, peer, (int)i, &in, 1, MPI_LONG, peer, (int)i, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE) != MPI_SUCCESS)
    return (void *)1;
  return in == peer * 1000 + i ? NULL : (void *)1;
}

int main(int argc, char **argv) {
  int provided, n;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2 || ito_init() != 0) {
    fprintf(stderr, "consumer_mpi: run with mpirun -np 2\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  ito_thread_t t[16];
  int bad = 0;
  for (long i = 0; i < 16; i++) ito_create(exchange, (void *)(intptr_t)i, &t[i]);
  for (int i = 0; i < 16; i++) {
    void *r;
    ito_join(t[i], &r);
    bad += r != NULL;
  }
  int all = 0;
  MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("ito consumer mpi: %s\n", all ? "WRONG" : "32 exchanges checked");
  MPI_Finalize();
  return all != 0;
}
