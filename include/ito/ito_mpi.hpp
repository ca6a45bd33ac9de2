// ito's MPI layer in C++ (docs/mpi.md): waits by name, and TAMPI-style
// tasks that complete when their requests complete. Header-only over
// ito_mpi.h; link libito-mpi.so (ito::ito_mpi) before the MPI library.
#ifndef ITO_MPI_HPP
#define ITO_MPI_HPP

#include <ito/ito.hpp>
#include <ito/ito_mpi.h>

#include <vector>

namespace ito {
namespace mpi {

// MPI_Wait / MPI_Waitall for the calling lightweight thread (it parks; its
// worker runs other work). They return MPI's error code.
inline int wait(MPI_Request &req, MPI_Status *status = MPI_STATUS_IGNORE) {
  return ito_mpi_wait(&req, status);
}
inline int wait_all(std::vector<MPI_Request> &reqs) {
  return ito_mpi_waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
}

// Inside a task started by task_group::run(deps, f) (TAMPI_Iwait): the task
// completes, and its successors by dependence start, only once the request
// has completed, though f returns at once. The request handle is copied:
// the caller's variable may go away. Outside such a task: std::logic_error.
inline void iwait(MPI_Request req) {
  this_task::defer([req]() mutable { ito_mpi_wait(&req, MPI_STATUS_IGNORE); });
}
inline void iwait_all(std::vector<MPI_Request> reqs) {
  this_task::defer([reqs]() mutable {
    ito_mpi_waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  });
}

}  // namespace mpi
}  // namespace ito

#endif
