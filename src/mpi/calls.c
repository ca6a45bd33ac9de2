/* The blocking MPI calls, through the profiling interface: from a
 * lightweight thread that may park, the call starts in its non-blocking
 * form and the thread parks until it completes (engine.c); from any other
 * thread, or before MPI runs, it is the MPI library's own call. Errors
 * are the library's, passed through unchanged. docs/mpi.md has the list. */
#define _GNU_SOURCE
#include <ito/ito_mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_int.h"

/* A single-completion call's status: every field but MPI_ERROR, which MPI
 * leaves as the caller had it (only a call that returns
 * MPI_ERR_IN_STATUS sets it). Nothing for MPI_STATUS_IGNORE. */
static void status_out(MPI_Status *to, const MPI_Status *from) {
  if (to == MPI_STATUS_IGNORE) return;
  int err = to->MPI_ERROR;
  *to = *from;
  to->MPI_ERROR = err;
}

/* One request, started by the caller: waits for it (MPI_Wait's result). */
static int wait1(MPI_Request *req, MPI_Status *status) {
  MPI_Status st;
  int rc = ito__mpi_park_all(1, req, &st);
  if (rc == MPI_ERR_IN_STATUS) rc = st.MPI_ERROR;
  status_out(status, &st);
  return rc;
}

/* The call's non-blocking form, started by `start` into r, then waited
 * for; in funnel mode both on worker 0. */
#define PARKED_CALL(start, status)                      \
  do {                                                  \
    MPI_Request r_;                                     \
    ito__mpi_enter();                                   \
    int rc_ = (start);                                  \
    if (rc_ == MPI_SUCCESS) rc_ = wait1(&r_, (status)); \
    ito__mpi_leave();                                   \
    return rc_;                                         \
  } while (0)

/* ---- point to point ------------------------------------------------------------------------ */

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
             MPI_Status *status) {
  if (!ito__mpi_parks()) return PMPI_Recv(buf, count, type, src, tag, comm, status);
  PARKED_CALL(PMPI_Irecv(buf, count, type, src, tag, comm, &r_), status);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Send(buf, count, type, dst, tag, comm);
  PARKED_CALL(PMPI_Isend(buf, count, type, dst, tag, comm, &r_), MPI_STATUS_IGNORE);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Ssend(buf, count, type, dst, tag, comm);
  PARKED_CALL(PMPI_Issend(buf, count, type, dst, tag, comm, &r_), MPI_STATUS_IGNORE);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dst, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
                 MPI_Status *status) {
  if (!ito__mpi_parks())
    return PMPI_Sendrecv(sbuf, scount, stype, dst, stag, rbuf, rcount, rtype, src, rtag, comm,
                         status);
  MPI_Request r[2];
  MPI_Status st[2];
  ito__mpi_enter();
  int rc = PMPI_Irecv(rbuf, rcount, rtype, src, rtag, comm, &r[0]);
  if (rc == MPI_SUCCESS) {
    rc = PMPI_Isend(sbuf, scount, stype, dst, stag, comm, &r[1]);
    if (rc != MPI_SUCCESS) { /* the receive alone is pending: it is taken back */
      PMPI_Cancel(&r[0]);
      PMPI_Request_free(&r[0]);
    } else {
      rc = ito__mpi_park_all(2, r, st);
      if (rc == MPI_ERR_IN_STATUS)
        rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
      status_out(status, &st[0]);
    }
  }
  ito__mpi_leave();
  return rc;
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *status) {
  if (!ito__mpi_parks()) return PMPI_Probe(src, tag, comm, status);
  MPI_Status st;
  ito__mpi_enter();
  int rc = ito__mpi_park_probe(src, tag, comm, &st);
  ito__mpi_leave();
  status_out(status, &st);
  return rc;
}

/* ---- waits ---------------------------------------------------------------------------------- */

static int wait_impl(MPI_Request *req, MPI_Status *status) {
  if (!ito__mpi_parks() || *req == MPI_REQUEST_NULL) return PMPI_Wait(req, status);
  MPI_Request r = *req;
  ito__mpi_enter();
  int rc = wait1(&r, status);
  ito__mpi_leave();
  *req = r; /* null, or inactive for a persistent request, as MPI_Wait leaves it */
  return rc;
}

static int waitall_impl(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  if (!ito__mpi_parks() || n <= 0) return PMPI_Waitall(n, reqs, statuses);
  /* the active requests, parked on together; the null ones get MPI's empty status */
  int small_i[32];
  MPI_Request small_r[32];
  MPI_Status small_s[32];
  int *at = n <= 32 ? small_i : malloc(sizeof(int) * (size_t)n);
  MPI_Request *r = n <= 32 ? small_r : malloc(sizeof(MPI_Request) * (size_t)n);
  MPI_Status *st = n <= 32 ? small_s : malloc(sizeof(MPI_Status) * (size_t)n);
  if (!at || !r || !st) {
    if (at != small_i) free(at);
    if (r != small_r) free(r);
    if (st != small_s) free(st);
    return PMPI_Waitall(n, reqs, statuses); /* no memory: the worker waits */
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (reqs[i] != MPI_REQUEST_NULL) {
      at[m] = i;
      r[m++] = reqs[i];
    }
  int rc = MPI_SUCCESS;
  if (m) {
    ito__mpi_enter();
    rc = ito__mpi_park_all(m, r, st);
    ito__mpi_leave();
  }
  for (int k = 0; k < m; k++) reqs[at[k]] = r[k];
  if (statuses != MPI_STATUSES_IGNORE) {
    for (int i = 0, k = 0; i < n; i++) {
      if (k < m && at[k] == i) { /* MPI_ERROR only with MPI_ERR_IN_STATUS */
        if (rc == MPI_ERR_IN_STATUS)
          statuses[i] = st[k++];
        else
          status_out(&statuses[i], &st[k++]);
      } else {
        MPI_Request null = MPI_REQUEST_NULL;
        PMPI_Wait(&null, &statuses[i]); /* the empty status */
        if (rc == MPI_ERR_IN_STATUS) statuses[i].MPI_ERROR = MPI_SUCCESS;
      }
    }
  }
  if (at != small_i) free(at);
  if (r != small_r) free(r);
  if (st != small_s) free(st);
  return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) { return wait_impl(req, status); }

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  return waitall_impl(n, reqs, statuses);
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
  if (!ito__mpi_parks()) return PMPI_Waitany(n, reqs, index, status);
  MPI_Status st;
  ito__mpi_enter();
  int rc = ito__mpi_park_any(n, reqs, index, &st);
  ito__mpi_leave();
  status_out(status, &st);
  return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
  if (!ito__mpi_parks()) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
  /* MPI_Testsome sets MPI_ERROR of the statuses it fills: they get the
   * caller's back unless the wait returns MPI_ERR_IN_STATUS */
  int small[32];
  int *err = statuses == MPI_STATUSES_IGNORE || n <= 0 ? NULL
             : n <= 32                                 ? small
                                                       : malloc(sizeof(int) * (size_t)n);
  for (int i = 0; err && i < n; i++) err[i] = statuses[i].MPI_ERROR;
  ito__mpi_enter();
  int rc = ito__mpi_park_some(n, reqs, outcount, indices, statuses);
  ito__mpi_leave();
  if (err && rc != MPI_ERR_IN_STATUS)
    for (int i = 0; i < n; i++) statuses[i].MPI_ERROR = err[i];
  if (err != small) free(err);
  return rc;
}

ITO_MPI_API int ito_mpi_wait(MPI_Request *req, MPI_Status *status) {
  return wait_impl(req, status);
}

ITO_MPI_API int ito_mpi_waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  return waitall_impl(count, reqs, statuses);
}

/* ---- collectives ----------------------------------------------------------------------------- */

int MPI_Barrier(MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Barrier(comm);
  PARKED_CALL(PMPI_Ibarrier(comm, &r_), MPI_STATUS_IGNORE);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Bcast(buf, count, type, root, comm);
  PARKED_CALL(PMPI_Ibcast(buf, count, type, root, comm, &r_), MPI_STATUS_IGNORE);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
  PARKED_CALL(PMPI_Ireduce(sbuf, rbuf, count, type, op, root, comm, &r_), MPI_STATUS_IGNORE);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
  PARKED_CALL(PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, &r_), MPI_STATUS_IGNORE);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
  PARKED_CALL(PMPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, &r_),
              MPI_STATUS_IGNORE);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
  PARKED_CALL(PMPI_Iscatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, &r_),
              MPI_STATUS_IGNORE);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
  PARKED_CALL(PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, &r_),
              MPI_STATUS_IGNORE);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm) {
  if (!ito__mpi_parks()) return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
  PARKED_CALL(PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, &r_),
              MPI_STATUS_IGNORE);
}
