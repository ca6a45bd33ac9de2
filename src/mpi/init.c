/* How libito-mpi.so calls MPI: the thread level it asks for, the mode it
 * runs in (direct with MPI_THREAD_MULTIPLE, else funnelled through worker
 * 0), MPI_Init, MPI_Init_thread and MPI_Finalize. docs/mpi.md. */
#define _GNU_SOURCE
#include "mpi_int.h"

#include <ito/ito.h>
#include <stdio.h>

static int mode; /* MODE_*, decided once MPI runs */

static const char *level_name(int l) {
  switch (l) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

void ito__mpi_set_level(int got) {
  int m = got >= MPI_THREAD_MULTIPLE ? MODE_DIRECT : MODE_FUNNEL;
  int expect = MODE_UNSET;
  if (!__atomic_compare_exchange_n(&mode, &expect, m, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return; /* decided already */
  if (m == MODE_FUNNEL)
    fprintf(stderr,
            "ito-mpi: MPI runs at thread level %s, not MPI_THREAD_MULTIPLE: the blocking MPI "
            "calls of lightweight threads are funnelled through worker 0, one at a time "
            "(slower; docs/mpi.md). Initialise MPI with MPI_Init_thread and "
            "MPI_THREAD_MULTIPLE, or use an MPI library that provides it\n",
            level_name(got));
}

int ito__mpi_mode(void) {
  int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
  if (m != MODE_UNSET) return m;
  /* MPI initialised by a path this library did not see (PMPI_Init_thread
   * called directly, another library, Fortran): its level decides */
  int init = 0, fin = 0;
  if (PMPI_Initialized(&init) != MPI_SUCCESS || !init) return MODE_UNSET;
  if (PMPI_Finalized(&fin) != MPI_SUCCESS || fin) return MODE_UNSET;
  int got = MPI_THREAD_SINGLE;
  if (PMPI_Query_thread(&got) != MPI_SUCCESS) return MODE_UNSET;
  ito__mpi_set_level(got);
  return __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
}

bool ito__mpi_parks(void) { return ito__dropin_can_park() && ito__mpi_mode() != MODE_UNSET; }

void ito__mpi_enter(void) {
  if (ito__mpi_mode() == MODE_FUNNEL) ito__dropin_home(0);
}

void ito__mpi_leave(void) {
  if (ito__mpi_mode() == MODE_FUNNEL) ito__dropin_home(-1);
}

/* Asks for MPI_THREAD_MULTIPLE whatever the program asked: any of ito's
 * workers may then call MPI. The program is told the level the library
 * gave (more than it asked is allowed): that is what its own calls made
 * outside this library may rely on. */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  (void)required;
  int got = MPI_THREAD_SINGLE;
  int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &got);
  if (rc != MPI_SUCCESS) return rc;
  ito__mpi_set_level(got);
  if (provided) *provided = got;
  return rc;
}

int MPI_Init(int *argc, char ***argv) {
  int got;
  return MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &got);
}

/* Threads still parked in MPI calls would never be woken once MPI is
 * finalized: refused with a message, MPI left running. */
int MPI_Finalize(void) {
  int n = ito__mpi_parked();
  if (n > 0) {
    fprintf(stderr,
            "ito-mpi: MPI_Finalize while %d lightweight thread%s wait%s in MPI calls: they would "
            "never finish. Join them before MPI_Finalize; MPI was not finalized "
            "(MPI_ERR_PENDING)\n",
            n, n == 1 ? "" : "s", n == 1 ? "s" : "");
    return MPI_ERR_PENDING;
  }
  return PMPI_Finalize();
}
