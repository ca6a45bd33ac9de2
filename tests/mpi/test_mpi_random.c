/* Many lightweight threads per rank, each a blocking MPI_Ssend / MPI_Recv
 * pair with a partner thread on another rank, in a random order, started
 * in a random order (docs/mpi.md). On plain blocking MPI with 2 workers a
 * rank's workers block in the first two calls and the partners those
 * wait for never run: the program would deadlock. Under libito-mpi.so the
 * waiting threads park and every pair finishes; each message is checked
 * by content.
 *
 *   mpirun -np R test_mpi_random [threads=1000] [words=64] [serialized|funneled|single]
 * R a power of two: thread i of rank r pairs with thread i of rank
 * r ^ d(i), d(i) drawn at random from 1 .. R - 1 (pairs.h). With a level
 * the program initialises MPI itself, past libito-mpi.so
 * (PMPI_Init_thread), at MPI_THREAD_SERIALIZED, _FUNNELED or _SINGLE:
 * the library finds that level at its first call, says so, and funnels
 * the calls through worker 0, the main thread's (check.sh reads the
 * line). */
#include <ito/ito.h>
#include <ito/ito_mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "pairs.h"

static int rank, nranks, words;

static void *pair(void *arg) {
  CHECK_EQ(pairs_exchange(rank, nranks, (int)(intptr_t)arg, words), 0);
  return NULL;
}

int main(int argc, char **argv) {
  int provided = -1;
  const char *lv = argc > 3 ? argv[3] : "";
  int level = !strcmp(lv, "serialized") ? MPI_THREAD_SERIALIZED
              : !strcmp(lv, "funneled") ? MPI_THREAD_FUNNELED
              : !strcmp(lv, "single")   ? MPI_THREAD_SINGLE
                                        : -1;
  if (level >= 0)
    CHECK_EQ(PMPI_Init_thread(&argc, &argv, level, &provided), MPI_SUCCESS);
  else
    CHECK_EQ(MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks < 2 || (nranks & (nranks - 1))) {
    if (rank == 0) fprintf(stderr, "test_mpi_random: needs a power of two of ranks, >= 2\n");
    MPI_Finalize();
    return 2;
  }
  int threads = argc > 1 ? atoi(argv[1]) : 1000;
  words = argc > 2 ? atoi(argv[2]) : 64;
  CHECK(threads > 0 && words > 0);
  CHECK(ito_init() == 0);
  /* the threads start in a random order of their pairs */
  int *order = malloc(sizeof(int) * (size_t)threads);
  ito_thread_t *h = malloc(sizeof(ito_thread_t) * (size_t)threads);
  CHECK(order && h);
  for (int i = 0; i < threads; i++) order[i] = i;
  for (int i = threads - 1; i > 0; i--) {
    int j = (int)(pairs_mix((uint64_t)rank * 1000003 + (uint64_t)i) % (uint64_t)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int k = 0; k < threads; k++)
    CHECK_EQ(ito_create(pair, (void *)(intptr_t)order[k], &h[k]), 0);
  for (int k = 0; k < threads; k++) CHECK_EQ(ito_join(h[k], NULL), 0);
  CHECK_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  if (rank == 0)
    printf(
        "test_mpi_random: %d ranks x %d threads, %d-word pairs: all checked (thread level "
        "%d)\n",
        nranks, threads, words, provided);
  free(order);
  free(h);
  CHECK_EQ(MPI_Finalize(), MPI_SUCCESS);
  return 0;
}
