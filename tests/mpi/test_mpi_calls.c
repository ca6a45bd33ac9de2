/* Every blocking call libito-mpi.so takes over (docs/mpi.md), made by
 * lightweight threads, with its results checked; run on 2 ranks with ONE
 * worker each, so that a call that blocked its worker instead of parking
 * its thread would stop the rank (the checks that other threads ran
 * meanwhile would fail, or the test would hang):
 *  - point to point: MPI_Send/MPI_Recv, MPI_Ssend, MPI_Sendrecv, MPI_Probe,
 *    MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome, ito_mpi_wait(all);
 *  - collectives: MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allreduce,
 *    MPI_Gather, MPI_Scatter, MPI_Allgather, MPI_Alltoall, each while
 *    another thread of the same rank computes and must make progress;
 *  - error codes passed through unchanged (MPI_ERRORS_RETURN, a send to a
 *    rank that does not exist, the same as from a thread that is not an ito
 *    thread);
 *  - a receive cancelled while a thread waits on it: the wait ends, and the
 *    status says cancelled;
 *  - a send whose request was freed at once: a wait on the null handle
 *    returns at once, a Waitall with it waits for the rest, and the message
 *    arrives;
 *  - MPI_ERROR of a status: every single-completion call (MPI_Recv,
 *    MPI_Sendrecv, MPI_Probe, MPI_Wait, also of a null request,
 *    MPI_Waitany, also of null requests only, ito_mpi_wait) leaves it as
 *    the caller had it, and so do MPI_Waitall and MPI_Waitsome when they
 *    succeed (MPI sets it only with MPI_ERR_IN_STATUS); from 16 threads
 *    of a rank at once, whose calls park or complete at once;
 *  - MPI_Finalize while a thread is parked in MPI_Recv: refused with
 *    MPI_ERR_PENDING (check.sh reads the message); then the message is
 *    sent, the thread ends, and MPI_Finalize succeeds.
 *
 *   mpirun -np 2 test_mpi_calls */
#define _GNU_SOURCE
#include <ito/ito.h>
#include <ito/ito_mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/dropin/ito_dropin.h"
#include "../check.h"

static int rank, peer;
static atomic_long spins; /* a computing thread's progress */
static atomic_int computing;

/* Computes (and yields now and then, as a long task would pass through
 * the scheduler) until told to stop. */
static void *compute(void *arg) {
  (void)arg;
  while (atomic_load(&computing)) {
    atomic_fetch_add(&spins, 1);
    ito_yield();
  }
  return NULL;
}

static void start_compute(ito_thread_t *h) {
  atomic_store(&computing, 1);
  atomic_store(&spins, 0);
  CHECK_EQ(ito_create(compute, NULL, h), 0);
}

static long stop_compute(ito_thread_t h) {
  atomic_store(&computing, 0);
  CHECK_EQ(ito_join(h, NULL), 0);
  return atomic_load(&spins);
}

/* Rank 1 enters late: rank 0's thread waits in the call meanwhile. */
static void late(void) {
  if (rank == 1) {
    struct timespec ts = {0, 50 * 1000 * 1000};
    ito_nanosleep(&ts);
  }
}

/* ---- point to point ------------------------------------------------------------------------- */

static void *p2p(void *arg) {
  (void)arg;
  int v[4] = {rank, 10 + rank, 20 + rank, 30 + rank}, w[4];
  MPI_Status st;
  late();
  /* send / recv, in opposite orders on the two ranks */
  if (rank == 0) {
    CHECK_EQ(MPI_Send(v, 4, MPI_INT, peer, 1, MPI_COMM_WORLD), MPI_SUCCESS);
    CHECK_EQ(MPI_Recv(w, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
  } else {
    CHECK_EQ(MPI_Recv(w, 4, MPI_INT, peer, 1, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    CHECK_EQ(MPI_Send(v, 4, MPI_INT, peer, 1, MPI_COMM_WORLD), MPI_SUCCESS);
  }
  CHECK(w[0] == peer && w[3] == 30 + peer && st.MPI_SOURCE == peer && st.MPI_TAG == 1);
  /* ssend against a late receive */
  late();
  if (rank == 0) {
    CHECK_EQ(MPI_Ssend(v, 4, MPI_INT, peer, 2, MPI_COMM_WORLD), MPI_SUCCESS);
  } else {
    CHECK_EQ(MPI_Recv(w, 4, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(w[1] == 10 + peer);
  }
  /* sendrecv */
  memset(w, 0, sizeof w);
  CHECK_EQ(MPI_Sendrecv(v, 4, MPI_INT, peer, 3, w, 4, MPI_INT, peer, 3, MPI_COMM_WORLD, &st),
           MPI_SUCCESS);
  CHECK(w[2] == 20 + peer && st.MPI_SOURCE == peer && st.MPI_TAG == 3);
  /* probe, then receive what it found */
  late();
  if (rank == 0) {
    CHECK_EQ(MPI_Probe(peer, 4, MPI_COMM_WORLD, &st), MPI_SUCCESS);
    int count = -1;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 3 && st.MPI_SOURCE == peer && st.MPI_TAG == 4);
    CHECK_EQ(MPI_Recv(w, 3, MPI_INT, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_SUCCESS);
    CHECK(w[0] == peer);
  } else {
    CHECK_EQ(MPI_Send(v, 3, MPI_INT, peer, 4, MPI_COMM_WORLD), MPI_SUCCESS);
  }
  /* wait, waitall, waitany, waitsome on requests the thread made */
  MPI_Request r[3];
  int in[3] = {-1, -1, -1}, out[3] = {rank, rank + 100, rank + 200};
  late();
  for (int k = 0; k < 3; k++) MPI_Irecv(&in[k], 1, MPI_INT, peer, 10 + k, MPI_COMM_WORLD, &r[k]);
  for (int k = 0; k < 3; k++)
    CHECK_EQ(MPI_Send(&out[k], 1, MPI_INT, peer, 10 + k, MPI_COMM_WORLD), 0);
  CHECK_EQ(MPI_Wait(&r[0], &st), MPI_SUCCESS);
  CHECK(r[0] == MPI_REQUEST_NULL && in[0] == peer && st.MPI_TAG == 10);
  MPI_Status sts[3];
  CHECK_EQ(MPI_Waitall(3, r, sts), MPI_SUCCESS); /* r[0] null: its empty status */
  CHECK(r[1] == MPI_REQUEST_NULL && r[2] == MPI_REQUEST_NULL);
  CHECK(in[1] == peer + 100 && in[2] == peer + 200 && sts[1].MPI_TAG == 11 && sts[2].MPI_TAG == 12);
  /* waitany: one at a time, in whatever order they complete */
  late();
  for (int k = 0; k < 3; k++) MPI_Irecv(&in[k], 1, MPI_INT, peer, 20 + k, MPI_COMM_WORLD, &r[k]);
  for (int k = 2; k >= 0; k--)
    CHECK_EQ(MPI_Send(&out[k], 1, MPI_INT, peer, 20 + k, MPI_COMM_WORLD), 0);
  int seen = 0;
  for (int k = 0; k < 3; k++) {
    int idx = -1;
    CHECK_EQ(MPI_Waitany(3, r, &idx, &st), MPI_SUCCESS);
    CHECK(idx >= 0 && idx < 3 && !(seen & (1 << idx)) && r[idx] == MPI_REQUEST_NULL);
    CHECK(st.MPI_TAG == 20 + idx && in[idx] == peer + 100 * idx);
    seen |= 1 << idx;
  }
  int idx = 7;
  CHECK_EQ(MPI_Waitany(3, r, &idx, &st), MPI_SUCCESS); /* all null */
  CHECK(idx == MPI_UNDEFINED);
  /* waitsome */
  late();
  for (int k = 0; k < 3; k++) MPI_Irecv(&in[k], 1, MPI_INT, peer, 30 + k, MPI_COMM_WORLD, &r[k]);
  for (int k = 0; k < 3; k++)
    CHECK_EQ(MPI_Send(&out[k], 1, MPI_INT, peer, 30 + k, MPI_COMM_WORLD), 0);
  int done = 0;
  while (done < 3) {
    int n = 0, ids[3];
    CHECK_EQ(MPI_Waitsome(3, r, &n, ids, sts), MPI_SUCCESS);
    CHECK(n >= 1 && n <= 3 - done);
    for (int j = 0; j < n; j++)
      CHECK(in[ids[j]] == peer + 100 * ids[j] && sts[j].MPI_TAG == 30 + ids[j]);
    done += n;
  }
  int n = 0, ids[3];
  CHECK_EQ(MPI_Waitsome(3, r, &n, ids, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  CHECK(n == MPI_UNDEFINED);
  /* ito_mpi_wait and ito_mpi_waitall by name */
  late();
  MPI_Irecv(&in[0], 1, MPI_INT, peer, 40, MPI_COMM_WORLD, &r[0]);
  MPI_Irecv(&in[1], 1, MPI_INT, peer, 41, MPI_COMM_WORLD, &r[1]);
  CHECK_EQ(MPI_Send(&out[0], 1, MPI_INT, peer, 40, MPI_COMM_WORLD), 0);
  CHECK_EQ(MPI_Send(&out[1], 1, MPI_INT, peer, 41, MPI_COMM_WORLD), 0);
  CHECK_EQ(ito_mpi_wait(&r[0], MPI_STATUS_IGNORE), MPI_SUCCESS);
  CHECK_EQ(ito_mpi_waitall(1, &r[1], MPI_STATUSES_IGNORE), MPI_SUCCESS);
  CHECK(in[0] == peer && in[1] == peer + 100);
  return NULL;
}

/* ---- MPI_ERROR left alone ------------------------------------------------------------------- */

#define SENTINEL 0x5e7
#define STATUS_THREADS 16
/* a fresh status, or each of n, with the sentinel in MPI_ERROR */
static MPI_Status *marked(MPI_Status *st, int n) {
  for (int i = 0; i < n; i++) {
    memset(&st[i], 0xa5, sizeof st[i]);
    st[i].MPI_ERROR = SENTINEL;
  }
  return st;
}
#define KEPT(st) CHECK_EQ((st).MPI_ERROR, SENTINEL)

static void *status_calls(void *arg) {
  int b = 1000 + 20 * (int)(intptr_t)arg; /* this thread's tags, the same on both ranks */
  int out[3] = {rank, rank + 100, rank + 200}, in[3] = {-1, -1, -1};
  MPI_Status st, sts[3];
  MPI_Request r[3], s[3];
  /* probe and receive what the peer sent; wait for the send, then the null request */
  CHECK_EQ(MPI_Isend(&out[0], 1, MPI_INT, peer, b, MPI_COMM_WORLD, &s[0]), MPI_SUCCESS);
  CHECK_EQ(MPI_Probe(peer, b, MPI_COMM_WORLD, marked(&st, 1)), MPI_SUCCESS);
  KEPT(st);
  CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == b);
  CHECK_EQ(MPI_Recv(&in[0], 1, MPI_INT, peer, b, MPI_COMM_WORLD, marked(&st, 1)), MPI_SUCCESS);
  KEPT(st);
  CHECK(in[0] == peer && st.MPI_SOURCE == peer && st.MPI_TAG == b);
  CHECK_EQ(MPI_Wait(&s[0], marked(&st, 1)), MPI_SUCCESS);
  KEPT(st);
  CHECK_EQ(MPI_Wait(&s[0], marked(&st, 1)), MPI_SUCCESS);
  KEPT(st);
  /* sendrecv */
  CHECK_EQ(MPI_Sendrecv(&out[1], 1, MPI_INT, peer, b + 1, &in[1], 1, MPI_INT, peer, b + 1,
                        MPI_COMM_WORLD, marked(&st, 1)),
           MPI_SUCCESS);
  KEPT(st);
  CHECK(in[1] == peer + 100 && st.MPI_TAG == b + 1);
  /* waitany, then with null requests only; waitall of the sends */
  for (int k = 0; k < 3; k++) MPI_Irecv(&in[k], 1, MPI_INT, peer, b + 2 + k, MPI_COMM_WORLD, &r[k]);
  for (int k = 0; k < 3; k++)
    MPI_Isend(&out[k], 1, MPI_INT, peer, b + 2 + k, MPI_COMM_WORLD, &s[k]);
  for (int k = 0; k < 3; k++) {
    int idx = -1;
    CHECK_EQ(MPI_Waitany(3, r, &idx, marked(&st, 1)), MPI_SUCCESS);
    KEPT(st);
    CHECK(idx >= 0 && idx < 3 && st.MPI_TAG == b + 2 + idx && in[idx] == peer + 100 * idx);
  }
  int idx = 7;
  CHECK_EQ(MPI_Waitany(3, r, &idx, marked(&st, 1)), MPI_SUCCESS);
  KEPT(st);
  CHECK(idx == MPI_UNDEFINED);
  CHECK_EQ(MPI_Waitall(3, s, marked(sts, 3)), MPI_SUCCESS);
  for (int k = 0; k < 3; k++) KEPT(sts[k]);
  /* waitall with a null request among them */
  for (int k = 0; k < 2; k++) MPI_Irecv(&in[k], 1, MPI_INT, peer, b + 5 + k, MPI_COMM_WORLD, &r[k]);
  r[2] = MPI_REQUEST_NULL;
  for (int k = 0; k < 2; k++)
    MPI_Isend(&out[k], 1, MPI_INT, peer, b + 5 + k, MPI_COMM_WORLD, &s[k]);
  CHECK_EQ(MPI_Waitall(3, r, marked(sts, 3)), MPI_SUCCESS);
  for (int k = 0; k < 3; k++) KEPT(sts[k]);
  CHECK(sts[0].MPI_TAG == b + 5 && sts[1].MPI_TAG == b + 6 && in[1] == peer + 100);
  CHECK_EQ(MPI_Waitall(2, s, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  /* waitsome */
  for (int k = 0; k < 3; k++) MPI_Irecv(&in[k], 1, MPI_INT, peer, b + 7 + k, MPI_COMM_WORLD, &r[k]);
  for (int k = 0; k < 3; k++)
    MPI_Isend(&out[k], 1, MPI_INT, peer, b + 7 + k, MPI_COMM_WORLD, &s[k]);
  for (int done = 0; done < 3;) {
    int n = 0, ids[3];
    CHECK_EQ(MPI_Waitsome(3, r, &n, ids, marked(sts, 3)), MPI_SUCCESS);
    CHECK(n >= 1 && n <= 3 - done);
    for (int k = 0; k < 3; k++) KEPT(sts[k]);
    for (int j = 0; j < n; j++) CHECK(sts[j].MPI_TAG == b + 7 + ids[j]);
    done += n;
  }
  CHECK_EQ(MPI_Waitall(3, s, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  /* ito_mpi_wait */
  MPI_Irecv(&in[0], 1, MPI_INT, peer, b + 10, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(&out[2], 1, MPI_INT, peer, b + 10, MPI_COMM_WORLD, &s[0]);
  CHECK_EQ(ito_mpi_wait(&r[0], marked(&st, 1)), MPI_SUCCESS);
  KEPT(st);
  CHECK(in[0] == peer + 200 && st.MPI_TAG == b + 10);
  CHECK_EQ(ito_mpi_wait(&s[0], MPI_STATUS_IGNORE), MPI_SUCCESS);
  return NULL;
}

/* ---- collectives ----------------------------------------------------------------------------- */

static void *collectives(void *arg) {
  (void)arg;
  int v = rank + 1, all[2], red = 0;
  late();
  CHECK_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  int b = rank == 0 ? 4242 : 0;
  late();
  CHECK_EQ(MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  CHECK(b == 4242);
  late();
  CHECK_EQ(MPI_Reduce(&v, &red, 1, MPI_INT, MPI_SUM, 1, MPI_COMM_WORLD), MPI_SUCCESS);
  if (rank == 1) CHECK(red == 3);
  late();
  CHECK_EQ(MPI_Allreduce(&v, &red, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD), MPI_SUCCESS);
  CHECK(red == 2);
  late();
  all[0] = all[1] = -1;
  CHECK_EQ(MPI_Gather(&v, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  if (rank == 0) CHECK(all[0] == 1 && all[1] == 2);
  int sc[2] = {70, 71}, got = -1;
  late();
  CHECK_EQ(MPI_Scatter(sc, 1, MPI_INT, &got, 1, MPI_INT, 1, MPI_COMM_WORLD), MPI_SUCCESS);
  CHECK(got == 70 + rank);
  late();
  all[0] = all[1] = -1;
  CHECK_EQ(MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
  CHECK(all[0] == 1 && all[1] == 2);
  int to[2] = {rank * 10, rank * 10 + 1}, from[2] = {-1, -1};
  late();
  CHECK_EQ(MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
  CHECK(from[0] == rank && from[1] == 10 + rank);
  return NULL;
}

/* ---- errors, cancel, finalize ---------------------------------------------------------------- */

static int send_bad(void) {
  int x = 1;
  return MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
}
static int os_rc;
static void *os_thread(void *arg) {
  (void)arg;
  os_rc = send_bad();
  return NULL;
}
static void *ito_bad(void *arg) {
  *(int *)arg = send_bad();
  return NULL;
}

static MPI_Request cancel_req;
static atomic_int cancel_waiting;
static int cancel_rc, cancel_flag;
static void *cancel_waiter(void *arg) {
  (void)arg;
  int x;
  MPI_Irecv(&x, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &cancel_req);
  MPI_Request mine = cancel_req;
  atomic_store(&cancel_waiting, 1);
  MPI_Status st;
  cancel_rc = MPI_Wait(&mine, &st);
  MPI_Test_cancelled(&st, &cancel_flag);
  return NULL;
}

/* A send whose request is freed at once (MPI_Request_free: it completes
 * on its own, the handle is MPI_REQUEST_NULL): a wait on that handle
 * returns at once, a Waitall with it beside a receive waits for the
 * receive alone (parked), and the peer gets the message. The buffer stays
 * untouched until the barrier after (a freed send's completion is known
 * only that way). */
static int freed_out, freed_got = -1;
static void *freed_user(void *arg) {
  (void)arg;
  MPI_Request r[2];
  freed_out = 500 + rank;
  CHECK_EQ(MPI_Isend(&freed_out, 1, MPI_INT, peer, 98, MPI_COMM_WORLD, &r[0]), MPI_SUCCESS);
  CHECK_EQ(MPI_Request_free(&r[0]), MPI_SUCCESS);
  CHECK(r[0] == MPI_REQUEST_NULL);
  MPI_Status st;
  CHECK_EQ(MPI_Wait(&r[0], &st), MPI_SUCCESS);
  CHECK_EQ(MPI_Irecv(&freed_got, 1, MPI_INT, peer, 98, MPI_COMM_WORLD, &r[1]), MPI_SUCCESS);
  CHECK_EQ(MPI_Waitall(2, r, MPI_STATUSES_IGNORE), MPI_SUCCESS);
  CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL);
  return NULL;
}

static int parked_got = -1;
/* Parks of lightweight threads, counted by a recorder (docs/hooks.md):
 * one after a snapshot means the thread created since has parked. */
static int parks;
static void count_parks(const struct ito_event *e, void *arg) {
  (void)arg;
  if (e->kind == ITO_EV_PARK) __atomic_add_fetch(&parks, 1, __ATOMIC_RELEASE);
}

static void *parked_recv(void *arg) {
  (void)arg;
  CHECK_EQ(MPI_Recv(&parked_got, 1, MPI_INT, rank, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE), 0);
  return NULL;
}

int main(int argc, char **argv) {
  CHECK_EQ(ito__dropin_hooks_attach(count_parks, NULL), 0);
  int provided;
  CHECK_EQ(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), MPI_SUCCESS);
  int n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  CHECK(n == 2);
  peer = 1 - rank;
  CHECK(ito_init() == 0);
  CHECK(ito_num_workers() == 1); /* (ctest sets ITO_NUM_WORKERS=1) */

  /* point to point, with a thread computing beside */
  ito_thread_t c, t;
  start_compute(&c);
  CHECK_EQ(ito_create(p2p, NULL, &t), 0);
  CHECK_EQ(ito_join(t, NULL), 0);
  long s1 = stop_compute(c);
  CHECK(s1 > 0);

  /* collectives, with a thread computing beside: it ran while the
   * collective thread waited (one worker) */
  start_compute(&c);
  CHECK_EQ(ito_create(collectives, NULL, &t), 0);
  CHECK_EQ(ito_join(t, NULL), 0);
  long s2 = stop_compute(c);
  CHECK(s2 > 0);

  /* MPI_ERROR left as the caller had it, from many threads at once */
  ito_thread_t many[STATUS_THREADS];
  for (int i = 0; i < STATUS_THREADS; i++)
    CHECK_EQ(ito_create(status_calls, (void *)(intptr_t)i, &many[i]), 0);
  for (int i = 0; i < STATUS_THREADS; i++) CHECK_EQ(ito_join(many[i], NULL), 0);

  /* error codes, unchanged */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  pthread_t pt;
  CHECK_EQ(pthread_create(&pt, NULL, os_thread, NULL), 0);
  CHECK_EQ(pthread_join(pt, NULL), 0);
  int ito_rc = -1;
  CHECK_EQ(ito_create(ito_bad, &ito_rc, &t), 0);
  CHECK_EQ(ito_join(t, NULL), 0);
  int cls = -1;
  MPI_Error_class(ito_rc, &cls);
  CHECK(ito_rc != MPI_SUCCESS && ito_rc == os_rc && cls == MPI_ERR_RANK);

  /* a wait whose request is cancelled */
  atomic_store(&cancel_waiting, 0);
  int parks_before = __atomic_load_n(&parks, __ATOMIC_ACQUIRE);
  CHECK_EQ(ito_create(cancel_waiter, NULL, &t), 0);
  while (!atomic_load(&cancel_waiting)) ito_yield();
  while (__atomic_load_n(&parks, __ATOMIC_ACQUIRE) == parks_before) ito_yield(); /* it waits */
  CHECK_EQ(MPI_Cancel(&cancel_req), MPI_SUCCESS);
  CHECK_EQ(ito_join(t, NULL), 0);
  CHECK(cancel_rc == MPI_SUCCESS && cancel_flag);

  /* a request freed before it completed */
  CHECK_EQ(ito_create(freed_user, NULL, &t), 0);
  CHECK_EQ(ito_join(t, NULL), 0);
  CHECK(freed_got == 500 + peer);
  CHECK_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);

  /* MPI_Finalize while a thread waits: refused */
  parks_before = __atomic_load_n(&parks, __ATOMIC_ACQUIRE);
  CHECK_EQ(ito_create(parked_recv, NULL, &t), 0);
  while (__atomic_load_n(&parks, __ATOMIC_ACQUIRE) == parks_before) ito_yield(); /* it waits */
  CHECK_EQ(MPI_Finalize(), MPI_ERR_PENDING);
  int msg = 1234;
  CHECK_EQ(MPI_Send(&msg, 1, MPI_INT, rank, 77, MPI_COMM_WORLD), MPI_SUCCESS);
  CHECK_EQ(ito_join(t, NULL), 0);
  CHECK(parked_got == 1234);
  CHECK_EQ(MPI_Barrier(MPI_COMM_WORLD), MPI_SUCCESS);
  if (rank == 0)
    printf("test_mpi_calls: every call checked; computing beside them: %ld and %ld yields\n", s1,
           s2);
  CHECK_EQ(MPI_Finalize(), MPI_SUCCESS);
  return 0;
}
