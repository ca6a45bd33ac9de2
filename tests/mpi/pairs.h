/* The exchange the MPI tests share: pair i of rank r is a blocking
 * MPI_Ssend / MPI_Recv with pair i of rank r ^ d(i), d(i) drawn at random
 * from 1 .. R - 1 by a hash of i that every rank computes alike (R a power
 * of two: the partner's partner is r), the two sides in opposite orders
 * chosen per pair, each message checked by content. Plain MPI: no ito call, so that the
 * pthread and OpenMP programs that use it are unmodified MPI programs. */
#ifndef ITO_TESTS_MPI_PAIRS_H
#define ITO_TESTS_MPI_PAIRS_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t pairs_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static uint64_t pairs_word(int from, int to, int i, int k) {
  return pairs_mix(((uint64_t)from << 48) ^ ((uint64_t)to << 32) ^ ((uint64_t)i << 12) ^
                   (uint64_t)k);
}

/* 0, or 1 after a line on stderr saying what was wrong. */
static int pairs_exchange(int rank, int nranks, int i, int words) {
  int p = rank ^ (1 + (int)(pairs_mix((uint64_t)i * 2654435761u + 12345) % (uint64_t)(nranks - 1)));
  uint64_t *out = malloc(sizeof(uint64_t) * (size_t)words * 2), *in = out + words;
  if (!out) return 1;
  for (int k = 0; k < words; k++) out[k] = pairs_word(rank, p, i, k);
  int send_first = (int)(pairs_mix((uint64_t)i * 7919) & 1) ^ (rank < p);
  MPI_Status st;
  int rc1, rc2;
  if (send_first) {
    rc1 = MPI_Ssend(out, words, MPI_UINT64_T, p, i, MPI_COMM_WORLD);
    rc2 = MPI_Recv(in, words, MPI_UINT64_T, p, i, MPI_COMM_WORLD, &st);
  } else {
    rc2 = MPI_Recv(in, words, MPI_UINT64_T, p, i, MPI_COMM_WORLD, &st);
    rc1 = MPI_Ssend(out, words, MPI_UINT64_T, p, i, MPI_COMM_WORLD);
  }
  int bad = rc1 != MPI_SUCCESS || rc2 != MPI_SUCCESS || st.MPI_SOURCE != p || st.MPI_TAG != i;
  for (int k = 0; k < words && !bad; k++) bad = in[k] != pairs_word(p, rank, i, k);
  if (bad) fprintf(stderr, "rank %d pair %d with rank %d: wrong message\n", rank, i, p);
  free(out);
  return bad;
}

#endif
