/* libito-mpi.so's parts (docs/mpi.md): how MPI is called (the thread
 * level and the funnel), and the waits that park lightweight threads on
 * MPI requests while the workers poll them.
 *
 * Invariants:
 *  1. A parked waiter's requests are in exactly one place: the batch table
 *     (a wait for all of them) or the list of records polled one by one (a
 *     wait for any or some, a probe); only the poller that holds poll_lock
 *     takes them out, and it does so before it wakes the waiter.
 *  2. A record lives on its waiter's stack: the poller touches it only
 *     until it has released the record's lock after marking it ready.
 *  3. In funnel mode every MPI call the library makes runs on worker 0,
 *     the worker whose OS thread initialised MPI, one at a time. */
#ifndef ITO_MPI_INT_H
#define ITO_MPI_INT_H

#include <mpi.h>
#include <stdbool.h>

#include "../dropin/ito_dropin.h"

#define ITO_MPI_HIDDEN __attribute__((visibility("hidden")))

/* How the library calls MPI. */
enum { MODE_UNSET = 0, MODE_DIRECT, MODE_FUNNEL };

/* The mode, deciding it if MPI runs and it is not decided yet (MPI
 * initialised by a path this library did not see). MODE_UNSET while MPI
 * does not run. */
ITO_MPI_HIDDEN int ito__mpi_mode(void);
/* After PMPI_Init_thread gave `got`: the mode, and the one-line note when
 * it is less than MPI_THREAD_MULTIPLE. */
ITO_MPI_HIDDEN void ito__mpi_set_level(int got);

/* Should this call park (an ito thread that may park, MPI running)? */
ITO_MPI_HIDDEN bool ito__mpi_parks(void);

/* Funnel mode (invariant 3): the calling thread moves to worker 0 for the
 * call and back to any worker after. */
ITO_MPI_HIDDEN void ito__mpi_enter(void);
ITO_MPI_HIDDEN void ito__mpi_leave(void);

/* The waits of a lightweight thread (invariants 1, 2). Each first tests
 * once and parks only if it must; the workers' poll completes it.
 * ito__mpi_park_all: reqs are n >= 1 active requests (no null), st n
 * statuses; returns MPI_SUCCESS or MPI_ERR_IN_STATUS (each st's MPI_ERROR
 * then says), reqs updated as MPI_Testsome leaves them.
 * ito__mpi_park_any / _some: MPI_Waitany's and MPI_Waitsome's arguments (null
 * requests allowed); they return what MPI_Testany / MPI_Testsome returned.
 * ito__mpi_park_probe: MPI_Probe's. */
ITO_MPI_HIDDEN int ito__mpi_park_all(int n, MPI_Request *reqs, MPI_Status *st);
ITO_MPI_HIDDEN int ito__mpi_park_any(int n, MPI_Request *reqs, int *index, MPI_Status *st);
ITO_MPI_HIDDEN int ito__mpi_park_some(int n, MPI_Request *reqs, int *outcount, int *indices,
                                      MPI_Status *sts);
ITO_MPI_HIDDEN int ito__mpi_park_probe(int src, int tag, MPI_Comm comm, MPI_Status *st);
/* Threads parked in a wait now. */
ITO_MPI_HIDDEN int ito__mpi_parked(void);

#endif
