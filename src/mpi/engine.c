/* The waits: a lightweight thread that must wait for MPI requests parks on
 * a record; the workers poll the pending requests through a poll source
 * (the core's extension point, docs/poll.md) and make the thread ready
 * when its wait is over. Invariants at the top of mpi_int.h; the progress
 * rule and its bound in docs/mpi.md. */
#define _GNU_SOURCE
#include "mpi_int.h"

#include <ito/ito.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Requests tested by one MPI_Testsome of the table. */
#define BATCH 64

enum { K_ALL, K_ANY, K_SOME, K_PROBE };

struct rec {
  int lock; /* the waiter's queue and `ready` */
  void *qh, *qt;
  int ready;
  int kind;
  int n;
  MPI_Request *reqs;
  MPI_Status *st; /* K_ALL: [n]; K_ANY, K_PROBE: one; K_SOME: [n] or MPI_STATUSES_IGNORE */
  int left;       /* K_ALL: requests not completed yet */
  int err;        /* what the wait returns */
  int *index;     /* K_ANY: the caller's; K_SOME: the caller's outcount */
  int *indices;   /* K_SOME */
  int src, tag;   /* K_PROBE */
  MPI_Comm comm;
  struct rec *next;  /* in `list` (K_ANY, K_SOME, K_PROBE) */
  struct rec *wnext; /* the poller's list of records to wake */
};

/* One pending request of a K_ALL record. */
struct entry {
  MPI_Request req;
  struct rec *rec;
  int idx;
};

static int tlock;         /* the table, the list and `parked` */
static struct entry *tab; /* [ntab] */
static int ntab, ctab;
static struct rec *list;
static int parked;
static unsigned rr;   /* where the next batch of the table starts */
static int poll_lock; /* held by the one poller at a time */

static int poll_fn(void *arg);
static void start_progress(void);
static int progress_on;

/* Idle workers poll after 2 us, and the gap doubles up to 100 us while a
 * poll finds nothing: the bound on noticing a completion while a worker
 * is idle (docs/mpi.md). */
static struct ito_poll_source source = {
    .name = "mpi",
    .fd = -1,
    .poll = poll_fn,
    .arg = NULL,
    .backoff_min_ns = 2000,
    .backoff_max_ns = 100000,
};
static int registered;

static void fatal(const char *what) {
  fprintf(stderr, "ito-mpi: %s\n", what);
  abort();
}

static void ensure_registered(void) {
  if (__atomic_load_n(&registered, __ATOMIC_ACQUIRE)) return;
  ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
  if (!registered) {
    if (ito__dropin_poll_register(&source) != 0)
      fatal("cannot register the MPI poll source with libito.so");
    __atomic_store_n(&registered, 1, __ATOMIC_RELEASE);
  }
  ito__dropin_unlock(&tlock);
}

int ito__mpi_parked(void) { return __atomic_load_n(&parked, __ATOMIC_RELAXED); }

/* ---- parking ----------------------------------------------------------------------------- */

/* Queues r (tlock held) and waits until the poller marks it ready. */
static int park(struct rec *r) {
  ensure_registered();
  ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
  if (r->kind == K_ALL) {
    /* the allocator runs with no lock of ito's held (docs/locks.md): a
     * full table grows outside the lock */
    while (ntab + r->n > ctab) {
      int nc = ctab ? ctab : 256;
      while (nc < ntab + r->n) nc *= 2;
      ito__dropin_unlock(&tlock);
      struct entry *t = malloc(sizeof *t * (size_t)nc), *old = NULL;
      if (!t) fatal("out of memory for the table of pending MPI requests");
      ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
      if (ntab + r->n > ctab && nc > ctab) {
        if (ntab) memcpy(t, tab, sizeof *t * (size_t)ntab);
        old = tab;
        tab = t;
        ctab = nc;
        t = NULL;
      }
      ito__dropin_unlock(&tlock);
      free(t);
      free(old);
      ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
    }
    for (int i = 0; i < r->n; i++) tab[ntab++] = (struct entry){r->reqs[i], r, i};
  } else {
    r->next = list;
    list = r;
  }
  __atomic_store_n(&parked, parked + 1, __ATOMIC_RELAXED);
  bool start = ito__mpi_mode() == MODE_FUNNEL && !progress_on;
  if (start) progress_on = 1;
  ito__dropin_unlock(&tlock);
  if (start) start_progress();
  ito__dropin_poll_arrive(&source);
  ito__dropin_lock(&r->lock, ITO_DROPIN_LR_QUEUE);
  while (!r->ready) {
    ito__dropin_wq_wait(&r->lock, &r->qh, &r->qt, 0, CLOCK_MONOTONIC, NULL, NULL, NULL);
    ito__dropin_lock(&r->lock, ITO_DROPIN_LR_QUEUE);
  }
  ito__dropin_unlock(&r->lock);
  ito__dropin_poll_leave(&source);
  return r->err;
}

/* The poller is done with r (invariant 2): its waiter runs again. */
static void make_ready(struct rec *r) {
  ito__dropin_lock(&r->lock, ITO_DROPIN_LR_QUEUE);
  r->ready = 1;
  void *w = ito__dropin_wq_take(&r->qh, &r->qt, -1);
  ito__dropin_unlock(&r->lock);
  ito__dropin_wq_wake(w);
}

/* A record of `kind` for n requests reqs and statuses st. */
static struct rec rec_of(int kind, int n, MPI_Request *reqs, MPI_Status *st) {
  struct rec r;
  memset(&r, 0, sizeof r);
  r.kind = kind;
  r.n = n;
  r.reqs = reqs;
  r.st = st;
  return r;
}

int ito__mpi_park_all(int n, MPI_Request *reqs, MPI_Status *st) {
  int flag = 0;
  int rc = PMPI_Testall(n, reqs, &flag, st);
  if (rc != MPI_SUCCESS || flag) return rc;
  /* (MPI_Testall leaves every request as it was when it returns false) */
  struct rec r = rec_of(K_ALL, n, reqs, st);
  r.left = n;
  return park(&r);
}

int ito__mpi_park_any(int n, MPI_Request *reqs, int *index, MPI_Status *st) {
  int flag = 0;
  int rc = PMPI_Testany(n, reqs, index, &flag, st);
  if (rc != MPI_SUCCESS || flag) return rc;
  struct rec r = rec_of(K_ANY, n, reqs, st);
  r.index = index;
  return park(&r);
}

int ito__mpi_park_some(int n, MPI_Request *reqs, int *outcount, int *indices, MPI_Status *sts) {
  int rc = PMPI_Testsome(n, reqs, outcount, indices, sts);
  if (rc != MPI_SUCCESS || *outcount != 0) return rc;
  struct rec r = rec_of(K_SOME, n, reqs, sts);
  r.index = outcount;
  r.indices = indices;
  return park(&r);
}

int ito__mpi_park_probe(int src, int tag, MPI_Comm comm, MPI_Status *st) {
  int flag = 0;
  int rc = PMPI_Iprobe(src, tag, comm, &flag, st);
  if (rc != MPI_SUCCESS || flag) return rc;
  struct rec r = rec_of(K_PROBE, 0, NULL, st);
  r.src = src;
  r.tag = tag;
  r.comm = comm;
  return park(&r);
}

/* ---- polling ------------------------------------------------------------------------------- */

/* One MPI_Testsome over a batch of the table; completed waits go on *wake. */
static void poll_table(struct rec **wake) {
  MPI_Request rq[BATCH];
  MPI_Status sts[BATCH];
  int pos[BATCH], idx[BATCH];
  ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
  int m = ntab < BATCH ? ntab : BATCH;
  unsigned start = ntab ? rr % (unsigned)ntab : 0;
  for (int k = 0; k < m; k++) {
    pos[k] = (int)((start + (unsigned)k) % (unsigned)ntab);
    rq[k] = tab[pos[k]].req;
  }
  rr += (unsigned)m;
  ito__dropin_unlock(&tlock);
  if (!m) return;
  int out = 0;
  int rc = PMPI_Testsome(m, rq, &out, idx, sts);
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
    /* the batch itself is bad (a request freed meanwhile, an MPI that
     * stopped): every wait in it ends with the error */
    out = m;
    for (int k = 0; k < m; k++) {
      idx[k] = k;
      sts[k].MPI_ERROR = rc; /* (status a belongs to request idx[a] = a) */
    }
    rc = MPI_ERR_IN_STATUS;
  }
  if (out == MPI_UNDEFINED || out <= 0) return;
  /* completion a is request idx[a] of the batch, its status sts[a]. They
   * are removed from the highest position down, each swapped with the
   * last: the positions still to remove stay where they are. */
  int ord[BATCH];
  for (int a = 0; a < out; a++) {
    int b = a;
    for (; b > 0 && pos[idx[ord[b - 1]]] < pos[idx[a]]; b--) ord[b] = ord[b - 1];
    ord[b] = a;
  }
  ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
  for (int o = 0; o < out; o++) {
    int a = ord[o], k = idx[a], p = pos[k];
    struct entry e = tab[p];
    struct rec *r = e.rec;
    r->reqs[e.idx] = rq[k];
    r->st[e.idx] = sts[a];
    if (rc == MPI_ERR_IN_STATUS) {
      if (sts[a].MPI_ERROR != MPI_SUCCESS) r->err = MPI_ERR_IN_STATUS;
    } else {
      r->st[e.idx].MPI_ERROR = MPI_SUCCESS;
    }
    tab[p] = tab[--ntab];
    if (--r->left == 0) {
      r->wnext = *wake;
      *wake = r;
      __atomic_store_n(&parked, parked - 1, __ATOMIC_RELAXED);
    }
  }
  ito__dropin_unlock(&tlock);
}

/* Tests one record of the list; true when its wait is over. */
static bool test_one(struct rec *r) {
  int flag = 0, rc;
  switch (r->kind) {
    case K_ANY:
      rc = PMPI_Testany(r->n, r->reqs, r->index, &flag, r->st);
      break;
    case K_SOME:
      rc = PMPI_Testsome(r->n, r->reqs, r->index, r->indices, r->st);
      flag = *r->index != 0;
      break;
    default:
      rc = PMPI_Iprobe(r->src, r->tag, r->comm, &flag, r->st);
      break;
  }
  if (rc != MPI_SUCCESS) flag = 1;
  r->err = rc;
  return flag;
}

static void poll_list(struct rec **wake) {
  ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
  struct rec *r = list; /* records pushed later are in front: the rest stays (invariant 1) */
  ito__dropin_unlock(&tlock);
  while (r) {
    struct rec *next = r->next;
    if (test_one(r)) {
      ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
      struct rec **p = &list;
      while (*p != r) p = &(*p)->next;
      *p = r->next;
      __atomic_store_n(&parked, parked - 1, __ATOMIC_RELAXED);
      ito__dropin_unlock(&tlock);
      r->wnext = *wake;
      *wake = r;
    }
    r = next;
  }
}

/* One poll: tests what waits, wakes whose wait is over; returns how many. */
static int poll_once(void) {
  if (__atomic_exchange_n(&poll_lock, 1, __ATOMIC_ACQUIRE)) return 0;
  struct rec *wake = NULL;
  poll_table(&wake);
  poll_list(&wake);
  __atomic_store_n(&poll_lock, 0, __ATOMIC_RELEASE);
  int n = 0;
  for (struct rec *r = wake, *next; r; r = next) {
    next = r->wnext; /* read before r's waiter may run and leave */
    make_ready(r);
    n++;
  }
  return n;
}

/* The workers' poll (the poll source). In funnel mode MPI is called on
 * worker 0 only (invariant 3), by the progress thread below instead: a
 * worker's poll would run wherever the worker looking for work is, and
 * worker 0 may be asleep without the poll role. */
static int poll_fn(void *arg) {
  (void)arg;
  if (ito__mpi_mode() == MODE_FUNNEL) return 0;
  return poll_once();
}

/* Funnel mode: a lightweight thread that lives on worker 0 polls while
 * threads wait, with the source's back-off between polls that find
 * nothing, and ends when nobody waits (progress_on says whether it runs;
 * both are decided under tlock, so a waiter that comes as it ends starts
 * another). */

static void progress(void *arg) {
  (void)arg;
  long gap = source.backoff_min_ns;
  for (;;) {
    if (poll_once() > 0) {
      gap = source.backoff_min_ns;
      ito_yield(); /* the woken threads run on this worker too */
    } else {
      struct timespec ts = {0, gap};
      ito_nanosleep(&ts);
      if (gap < source.backoff_max_ns) gap *= 2;
    }
    ito__dropin_lock(&tlock, ITO_DROPIN_LR_MPI_TABLE);
    if (!parked) {
      progress_on = 0;
      ito__dropin_unlock(&tlock);
      return;
    }
    ito__dropin_unlock(&tlock);
  }
}

static void start_progress(void) {
  if (ito__dropin_spawn_home(0, progress, NULL, 0, 16, NULL, NULL) != 0)
    fatal("cannot start the MPI progress thread on worker 0 (no memory)");
}
