/* An unmodified MPI program with POSIX threads (no ito call): one thread
 * per exchange of pairs.h, all started at once. Run under
 * LD_PRELOAD=libito-pthread.so:libito-mpi.so with 2 workers a rank, its
 * threads are lightweight threads that park in MPI_Ssend and MPI_Recv
 * (docs/mpi.md); check.sh runs it so.
 *
 *   mpirun -np 2 test_mpi_pthread [threads=300] [words=32] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "pairs.h"

static int rank, nranks, words;
static atomic_int bad;

static void *run(void *arg) {
  atomic_fetch_add(&bad, pairs_exchange(rank, nranks, (int)(intptr_t)arg, words));
  return NULL;
}

int main(int argc, char **argv) {
  int provided;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int threads = argc > 1 ? atoi(argv[1]) : 300;
  words = argc > 2 ? atoi(argv[2]) : 32;
  pthread_t *t = malloc(sizeof(pthread_t) * (size_t)threads);
  if (!t || nranks < 2 || (nranks & (nranks - 1))) return 2;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&t[i], NULL, run, (void *)(intptr_t)i) != 0) return 3;
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
  int all = 0, mine = atomic_load(&bad);
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_mpi_pthread: %d ranks x %d threads: %d wrong\n", nranks, threads, all);
  free(t);
  MPI_Finalize();
  return all != 0;
}
