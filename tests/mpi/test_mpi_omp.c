/* An unmodified OpenMP MPI program (gcc -fopenmp, no ito call): one
 * explicit task per exchange of pairs.h, made by one thread of a team as
 * large as the number of tasks, in an order of the pairs of each rank's
 * own. A task runs as a member of its team and blocks that member in MPI
 * until its partner, perhaps late in the other rank's order, has run: with
 * fewer members than tasks it may deadlock under any runtime. Under
 * LD_PRELOAD=libito-omp.so:libito-mpi.so the team's members are
 * lightweight threads that park in MPI (docs/mpi.md), so a team of 300 runs
 * on 2 workers; check.sh runs it so.
 *
 *   mpirun -np 2 test_mpi_omp [tasks=300] [words=32] */
#include <omp.h>

#include "pairs.h"

int main(int argc, char **argv) {
  int provided, rank, nranks;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int tasks = argc > 1 ? atoi(argv[1]) : 300;
  int words = argc > 2 ? atoi(argv[2]) : 32;
  if (nranks < 2 || (nranks & (nranks - 1))) return 2;
  int *order = malloc(sizeof(int) * (size_t)tasks);
  if (!order) return 3;
  for (int i = 0; i < tasks; i++) order[i] = i;
  for (int i = tasks - 1; i > 0; i--) {
    int j = (int)(pairs_mix((uint64_t)rank * 1000003 + (uint64_t)i) % (uint64_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  int bad = 0;
#pragma omp parallel
#pragma omp single
  for (int k = 0; k < tasks; k++) {
    int i = order[k];
#pragma omp task firstprivate(i) shared(bad)
    {
      int b = pairs_exchange(rank, nranks, i, words);
#pragma omp atomic
      bad += b;
    }
  }
  int all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("test_mpi_omp: %d ranks x %d tasks on %d threads: %d wrong\n", nranks, tasks,
           omp_get_max_threads(), all);
  free(order);
  MPI_Finalize();
  return all != 0;
}
