/* fd records: one per fd number, the type of its file, the program's view
 * of it (O_NONBLOCK and the socket timeouts), and forgetting a number that
 * changes file. Invariants at the top of io.h; design in docs/io.md. */
#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* ---- records ---------------------------------------------------------------------------
 * In chunks of IO_CHUNK, allocated on first use and never freed (the poller
 * may hold an address: invariant 1). */
#define NCHUNKS (IO_MAX_FDS / IO_CHUNK)
static struct fdrec *chunks[NCHUNKS];

/* A missing chunk is allocated with no lock held (a program's allocator
 * may park the thread) and installed by a compare-and-swap; the loser of
 * a race frees its own. */
struct fdrec *ito__io_rec(int fd) {
  if (fd < 0 || fd >= IO_MAX_FDS) return NULL;
  struct fdrec **slot = &chunks[fd / IO_CHUNK];
  struct fdrec *c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (UNLIKELY(!c)) {
    struct fdrec *fresh = calloc(IO_CHUNK, sizeof *c);
    if (!fresh) {
      c = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
      return c ? &c[fd % IO_CHUNK] : NULL;
    }
    if (__atomic_compare_exchange_n(slot, &c, fresh, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      c = fresh;
    else
      free(fresh); /* (c: the winner's) */
  }
  return &c[fd % IO_CHUNK];
}

struct fdrec *ito__io_rec_peek(int fd) {
  if (fd < 0 || fd >= IO_MAX_FDS) return NULL;
  struct fdrec *c = __atomic_load_n(&chunks[fd / IO_CHUNK], __ATOMIC_ACQUIRE);
  return c ? &c[fd % IO_CHUNK] : NULL;
}

struct fdrec *ito__io_chunk(int fd, int *first_fd) {
  if (fd < 0 || fd >= IO_MAX_FDS) return NULL;
  *first_fd = fd - fd % IO_CHUNK;
  return __atomic_load_n(&chunks[fd / IO_CHUNK], __ATOMIC_ACQUIRE);
}

int ito__io_fd_type(struct fdrec *r, int fd, uint32_t *gen) {
  spin_lock(&r->lock, LR_QUEUE_OUTER);
  *gen = r->gen;
  int t = r->type;
  if (t == FD_UNKNOWN) {
    struct stat st;
    if (SYS(SYS_fstat, fd, &st) != 0)
      t = FD_OTHER; /* EBADF and friends: the plain call reports them */
    else if (S_ISSOCK(st.st_mode))
      t = FD_SOCKET;
    else if (S_ISFIFO(st.st_mode))
      t = FD_PIPE;
    else
      t = FD_OTHER;
    r->type = t;
  }
  spin_unlock(&r->lock);
  return t;
}

/* ---- the program's view ------------------------------------------------------------------
 * O_NONBLOCK and the socket timeouts belong to the open file, which other
 * numbers may share (dup, dup2, inherited fds), so a record cannot know
 * when another number's fcntl or setsockopt changed them. Every change the
 * runtime hears of (a drop-in library's fcntl F_SETFL, ioctl FIONBIO and
 * setsockopt, ito_setsockopt) bumps this epoch, and a record whose view is
 * older learns it again at its next call that would block: one F_GETFL and
 * two getsockopt, on the slow path only. Starts at 1: a record's 0 is
 * "never learned". */
static unsigned view_epoch = 1;
int ito__io_view_tracked;

void ito__io_view_changed(void) {
  if (__atomic_add_fetch(&view_epoch, 1, __ATOMIC_ACQ_REL) == 0) /* 0 is "never learned" */
    __atomic_add_fetch(&view_epoch, 1, __ATOMIC_ACQ_REL);
}

/* Learns the program's view of fd's file into r, for generation gen;
 * returns whether the program made the file non-blocking. Where ito holds
 * O_NONBLOCK itself (ito_nb) the kernel's flag says nothing, and user_nb,
 * kept by ito__io_setfl and ito__io_fionbio, stays. The epoch is read
 * before the calls: a change made meanwhile bumps it again, and the next
 * wait learns once more. */
static bool learn_view(struct fdrec *r, int fd, uint32_t gen, int type) {
  static const int opt[2] = {SO_RCVTIMEO, SO_SNDTIMEO};
  unsigned e = __atomic_load_n(&view_epoch, __ATOMIC_ACQUIRE);
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  long long ns[2] = {0, 0};
  for (int k = 0; k < 2 && type == FD_SOCKET; k++) {
    struct timeval tv = {0, 0};
    socklen_t len = sizeof tv;
    if (SYS(SYS_getsockopt, fd, SOL_SOCKET, opt[k], &tv, &len) == 0)
      ns[k] = (long long)tv.tv_sec * NS_PER_S + tv.tv_usec * 1000LL;
  }
  spin_lock(&r->lock, LR_QUEUE_OUTER);
  if (r->gen == gen) {
    if (!r->ito_nb) STORE_RLX(&r->user_nb, fl >= 0 && (fl & O_NONBLOCK));
    STORE_RLX(&r->timeo_ns[0], ns[0]);
    STORE_RLX(&r->timeo_ns[1], ns[1]);
    __atomic_store_n(&r->view, e, __ATOMIC_RELEASE);
  }
  bool nb = r->ito_nb ? r->user_nb : fl >= 0 && (fl & O_NONBLOCK);
  spin_unlock(&r->lock);
  return nb;
}

/* Then the call gets EAGAIN (libc's), never a park. Where a drop-in
 * library sees the program's fcntl and ioctl, the learned view is current;
 * a native program changes O_NONBLOCK with fcntl(2), which the runtime does
 * not see, so there the flag is asked for at every wait (one F_GETFL). */
bool ito__io_view_nonblocking(struct fdrec *r, int fd, uint32_t gen, int type) {
  if (LOAD_ACQ(&r->view) != LOAD_ACQ(&view_epoch)) return learn_view(r, fd, gen, type);
  if (LOAD_RLX(&ito__io_view_tracked) || LOAD_RLX(&r->ito_nb)) return LOAD_RLX(&r->user_nb);
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK);
}

/* ---- waking ---------------------------------------------------------------------------------- */

waiter *ito__io_fire_polls(struct pollnode *n, waiter *list) {
  for (; n; n = n->next) {
    struct pollgroup *g = n->g;
    if (__atomic_exchange_n(&g->fired, 1, __ATOMIC_ACQ_REL)) continue;
    spin_lock(&g->qlock, LR_QUEUE);
    waiter *w = ito__wq_take(&g->head, &g->tail, 1);
    spin_unlock(&g->qlock);
    if (w) {
      w->next = list;
      list = w;
    }
  }
  return list;
}

void ito__io_wake_lists(waiter *lists[2]) {
  for (int k = 0; k < 2; k++)
    if (lists[k]) ito__wq_wake(lists[k]);
}

/* Appends list b to list a. */
static waiter *chain(waiter *a, waiter *b) {
  if (!a) return b;
  ito__wq_last(a)->next = b;
  return a;
}

/* The threads parked on the number and the ito_poll groups watching it find
 * the new generation and return EBADF without touching the number, which
 * may already name another file (invariant 1). */
void ito__io_forget_locked(struct fdrec *r, waiter *lists[2]) {
  ITO_ASSERT(spin_held(&r->lock));
  __atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
  r->type = FD_UNKNOWN;
  r->registered = 0;
  STORE_RLX(&r->ito_nb, 0);
  STORE_RLX(&r->user_nb, 0);
  __atomic_store_n(&r->view, 0, __ATOMIC_RELEASE);
  STORE_RLX(&r->timeo_ns[0], 0);
  STORE_RLX(&r->timeo_ns[1], 0);
  for (int k = 0; k < 2; k++) {
    waiter *l = ito__wq_take(&r->head[k], &r->tail[k], -1);
    if (r->polls[k]) l = ito__io_fire_polls(r->polls[k], l); /* they see POLLNVAL */
    lists[k] = chain(l, lists[k]);
  }
}

void ito__io_forget(struct fdrec *r, waiter *lists[2]) {
  if (!r) return;
  spin_lock(&r->lock, LR_QUEUE_OUTER);
  ito__io_forget_locked(r, lists);
  spin_unlock(&r->lock);
}

/* ---- helpers --------------------------------------------------------------------------------- */

__attribute__((noinline)) void ito__io_set_errno(int e) { errno = e; }
__attribute__((noinline)) int ito__io_errno(void) { return errno; }

long ito__io_sys_poll(struct pollfd *f, unsigned long n, int ms) {
  struct timespec ts = ns_to_ts((long long)(ms < 0 ? 0 : ms) * 1000000LL);
  return SYS(SYS_ppoll, f, n, ms < 0 ? NULL : &ts, NULL, (size_t)8);
}

void ito__io_recs_after_fork(void) {
  for (int c = 0; c < NCHUNKS; c++) {
    struct fdrec *ch = chunks[c];
    if (!ch) continue;
    for (int i = 0; i < IO_CHUNK; i++) {
      struct fdrec *r = &ch[i];
      r->lock = 0;
      r->registered = 0;
      r->head[0] = r->head[1] = r->tail[0] = r->tail[1] = NULL;
      r->polls[0] = r->polls[1] = NULL;
    }
  }
}
