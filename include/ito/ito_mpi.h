/* ito's MPI layer (libito-mpi.so; docs/mpi.md): blocking MPI calls made by
 * lightweight threads park the thread, not its worker. Linking the library
 * before the MPI library (or preloading it) is all an MPI program needs;
 * these calls are for programs that want the waits by name. */
#ifndef ITO_MPI_H
#define ITO_MPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ITO_MPI_API __attribute__((visibility("default")))

/* MPI_Wait for the calling lightweight thread: it parks until *req
 * completes (its worker runs other work meanwhile); from a thread that is
 * not an ito thread, MPI_Wait itself. Returns what MPI_Wait returns. */
ITO_MPI_API int ito_mpi_wait(MPI_Request *req, MPI_Status *status);
/* MPI_Waitall in the same way. */
ITO_MPI_API int ito_mpi_waitall(int count, MPI_Request reqs[], MPI_Status statuses[]);

#ifdef __cplusplus
}
#endif
#endif
