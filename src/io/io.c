/* Blocking I/O that parks the lightweight thread, not its worker: the call
 * is made non-blocking for this call only, and when it would block the
 * thread parks on the fd's record until epoll reports readiness. Workers
 * poll epoll themselves: without waiting while they look for work, and one
 * idle worker sleeps in epoll_wait (the poll sleeper). Design:
 * docs/dropin.md section 7, docs/io.md. */
#define _GNU_SOURCE
#include "../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- fd records ----------------------------------------------------------------
 * One per fd number, in chunks of 1,024 allocated on first use and never
 * freed (the poller may hold an address). gen changes at each ito_close, so
 * a parked thread and a stale epoll event both see that their file is gone. */
enum { FD_UNKNOWN = 0, FD_SOCKET, FD_PIPE, FD_OTHER };
enum { RD = 0, WR = 1 };

struct fdrec {
  int lock;             /* also the lock of both wait queues */
  uint32_t gen;
  int type;             /* FD_*, found with fstat once per generation */
  int registered;       /* in the epoll set (EPOLLET, both directions) */
  int shim_nb;          /* ito set O_NONBLOCK on the file (a listener): the kernel's flag is
                         * then not the program's, and user_nb is the only record of it */
  int user_nb;          /* the program's O_NONBLOCK (its view of the file) */
  unsigned view;        /* view_epoch when user_nb and timeo_ns were learned; 0: never */
  unsigned seq[2];      /* readiness events seen, per direction */
  void *head[2], *tail[2];
  long long timeo_ns[2]; /* SO_RCVTIMEO, SO_SNDTIMEO; 0: none */
  struct pollnode *polls[2]; /* ito_poll callers watching this fd, per direction */
};

/* O_NONBLOCK and the socket timeouts belong to the open file, which other
 * numbers may share (dup, dup2, inherited fds), so a record cannot know
 * when another number's fcntl or setsockopt changed them. Every change the
 * runtime hears of (the shim's fcntl F_SETFL, ioctl FIONBIO and
 * setsockopt, ito_setsockopt) bumps this epoch, and a record whose view is
 * older learns it again at its next call that would block: one F_GETFL and
 * two getsockopt, on the slow path only. Starts at 1: a record's 0 is
 * "never learned". */
static unsigned view_epoch = 1;

/* ito_poll: one node per watched fd and direction, all pointing at one
 * group; the first event fires the group (fired, by CAS) and wakes its
 * thread, which waits on the group's own queue. Nodes and group live on the
 * waiting thread's stack; every access to them is made under the lock of
 * the record the node hangs on, and the thread unlinks its nodes under
 * those locks before it returns. */
struct pollgroup {
  int fired;
  int qlock;
  void *head, *tail;
};
struct pollnode {
  struct pollnode *next, *prev;
  struct pollgroup *g;
};

/* Record lock held: fires every group watching direction d; returns the
 * waiters to wake. */
static void *fire_polls(struct pollnode *n, void *list) {
  for (; n; n = n->next) {
    struct pollgroup *g = n->g;
    if (__atomic_exchange_n(&g->fired, 1, __ATOMIC_ACQ_REL)) continue;
    spin_lock(&g->qlock);
    void *w = ito__dropin_wq_take(&g->head, &g->tail, 1);
    spin_unlock(&g->qlock);
    if (w) { /* chain: a waiter's first word is its link */
      *(void **)w = list;
      list = w;
    }
  }
  return list;
}

#define CHUNK 1024
#define NCHUNKS 4096 /* fds up to 4M */
static struct fdrec *chunks[NCHUNKS];
static int chunk_lock;

static struct fdrec *rec_of(int fd) {
  if (fd < 0 || fd >= CHUNK * NCHUNKS) return NULL;
  struct fdrec *c = __atomic_load_n(&chunks[fd / CHUNK], __ATOMIC_ACQUIRE);
  if (UNLIKELY(!c)) {
    spin_lock(&chunk_lock);
    c = chunks[fd / CHUNK];
    if (!c) {
      c = calloc(CHUNK, sizeof *c);
      if (c) __atomic_store_n(&chunks[fd / CHUNK], c, __ATOMIC_RELEASE);
    }
    spin_unlock(&chunk_lock);
    if (!c) return NULL;
  }
  return &c[fd % CHUNK];
}

/* The record of fd if its chunk exists (never allocates). */
static struct fdrec *rec_peek(int fd) {
  if (fd < 0 || fd >= CHUNK * NCHUNKS) return NULL;
  struct fdrec *c = __atomic_load_n(&chunks[fd / CHUNK], __ATOMIC_ACQUIRE);
  return c ? &c[fd % CHUNK] : NULL;
}

/* ---- the epoll instance, the eventfd, the poll sleeper --------------------------- */

int ito__io_waiters; /* threads parked on readiness */
static int ep = -1, efd = -1;
static int setup_lock, poll_lock;
static int pipe_nowait = -1; /* RWF_NOWAIT works on pipes (Linux 6.4 and later) */
#define EFD_TAG (~0ULL)

#define SYS(...) ito__os.syscall(__VA_ARGS__)

/* errno through functions of their own: __errno_location is a const
 * function, so within one function the compiler may keep errno's address
 * across a park, after which the thread may run on another OS thread
 * (docs/dropin.md section 5, hazard (b)). Every errno access in this file
 * that may follow a park goes through set_errno, or once()'s result. */
static __attribute__((noinline)) void set_errno(int e) { errno = e; }

/* poll and epoll_wait as every architecture has them (AArch64 has only the
 * p-variants). */
static long sys_poll(struct pollfd *f, unsigned long n, int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  return SYS(SYS_ppoll, f, n, ms < 0 ? NULL : &ts, NULL, (size_t)8);
}
static long sys_epoll_wait(int e, struct epoll_event *ev, int n, int ms) {
  return SYS(SYS_epoll_pwait, e, ev, n, ms, NULL, (size_t)8);
}

static int high_fd(int fd) { /* out of the way of closefrom(3) and dup2 onto small numbers */
  int hi = (int)SYS(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 1024);
  if (hi < 0) return fd;
  SYS(SYS_close, fd);
  return hi;
}

static int probe_pipe_nowait(void) {
  const char *v = getenv("ITO_IO_PIPE_NOWAIT");
  if (v && !strcmp(v, "0")) return 0;
  int p[2];
  if (SYS(SYS_pipe2, p, O_CLOEXEC) != 0) return 0;
  char c;
  struct iovec iov = {&c, 1};
  long r = SYS(SYS_preadv2, p[0], &iov, 1, -1L, 0L, RWF_NOWAIT);
  int ok = r < 0 && errno == EAGAIN;
  SYS(SYS_close, p[0]);
  SYS(SYS_close, p[1]);
  return ok;
}

static int io_setup(void) {
  if (LIKELY(__atomic_load_n(&ep, __ATOMIC_ACQUIRE) >= 0)) return 0;
  spin_lock(&setup_lock);
  if (ep < 0) {
    int e = (int)SYS(SYS_epoll_create1, EPOLL_CLOEXEC);
    int f = (int)SYS(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (e < 0 || f < 0) {
      spin_unlock(&setup_lock);
      ito__fatal("cannot set up the I/O poller (epoll_create1 or eventfd failed: %s)",
                 strerror(errno));
    }
    e = high_fd(e);
    f = high_fd(f);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EFD_TAG}; /* level-triggered */
    SYS(SYS_epoll_ctl, e, EPOLL_CTL_ADD, f, &ev);
    pipe_nowait = probe_pipe_nowait();
    efd = f;
    __atomic_store_n(&ep, e, __ATOMIC_RELEASE);
  }
  spin_unlock(&setup_lock);
  return 0;
}

int ito__io_fd_is_ours(int fd) { return fd >= 0 && (fd == ep || fd == efd); }

void ito__io_kick(void) { /* wakes the poll sleeper (docs/idle.md) */
  uint64_t one = 1;
  /* a lost kick is a lost wake-up: retry on EINTR, although a write to a
   * non-blocking eventfd never sleeps and so is never interrupted today */
  while (SYS(SYS_write, efd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

/* Takes the waiters of the fds that became ready; returns how many threads
 * it made ready. */
static int dispatch(struct epoll_event *ev, int n) {
  int woke = 0;
  for (int i = 0; i < n; i++) {
    uint64_t d = ev[i].data.u64;
    if (d == EFD_TAG) {
      uint64_t v; /* drain: a stale count only costs a loop; so does an EINTR, since the
                   * eventfd is level-triggered and the next epoll_wait reports it again */
      SYS(SYS_read, efd, &v, sizeof v);
      continue;
    }
    struct fdrec *r = rec_of((int)(d & 0xFFFFFFFFu));
    if (!r) continue;
    uint32_t e = ev[i].events;
    void *lists[2] = {NULL, NULL};
    spin_lock(&r->lock);
    if (r->gen == (uint32_t)(d >> 32)) {
      if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) {
        __atomic_store_n(&r->seq[RD], r->seq[RD] + 1, __ATOMIC_RELEASE);
        lists[RD] = ito__dropin_wq_take(&r->head[RD], &r->tail[RD], -1);
        if (r->polls[RD]) lists[RD] = fire_polls(r->polls[RD], lists[RD]);
      }
      if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) {
        __atomic_store_n(&r->seq[WR], r->seq[WR] + 1, __ATOMIC_RELEASE);
        lists[WR] = ito__dropin_wq_take(&r->head[WR], &r->tail[WR], -1);
        if (r->polls[WR]) lists[WR] = fire_polls(r->polls[WR], lists[WR]);
      }
    }
    spin_unlock(&r->lock);
    for (int k = 0; k < 2; k++)
      if (lists[k]) {
        ito__dropin_wq_wake(lists[k]);
        woke++;
      }
  }
  return woke;
}

/* A worker looking for work (or every 61st scheduling pass): one poll that
 * does not wait, by one worker at a time. An EINTR (or any error) returns
 * 0 events: the readiness stays on epoll's ready list for the next poll. */
int ito__io_poll(void) {
  if (LOAD_ACQ(&ep) < 0 || !spin_trylock(&poll_lock)) return 0;
  struct epoll_event ev[64];
  int n = (int)sys_epoll_wait(ep, ev, 64, 0);
  spin_unlock(&poll_lock);
  return n > 0 ? dispatch(ev, n) : 0;
}

/* The poll sleeper: waits in epoll_wait until readiness, its eventfd, or
 * timeout_ns (-1: none). Returns the threads it made ready. A signal
 * handled on this OS thread ends the wait with EINTR: 0 threads, and
 * idle_sleep (sched.c) scans, checks its wake word and the next timer, and
 * waits again; nothing is lost, since the events stay queued in epoll and
 * the eventfd is level-triggered. */
int ito__io_sleep(long timeout_ns) {
  struct epoll_event ev[64];
  int n;
  if (timeout_ns >= 0) {
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    n = (int)SYS(SYS_epoll_pwait2, ep, ev, 64, &ts, NULL, 0);
    if (n < 0 && errno == ENOSYS)
      n = (int)sys_epoll_wait(ep, ev, 64, (int)((timeout_ns + 999999) / 1000000));
  } else {
    n = (int)sys_epoll_wait(ep, ev, 64, -1);
  }
  return n > 0 ? dispatch(ev, n) : 0;
}

/* ---- parking -------------------------------------------------------------------- */

static int fd_type(struct fdrec *r, int fd, uint32_t *gen) {
  spin_lock(&r->lock);
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

/* With r locked: add the fd to the epoll set, and read its timeouts. */
static int register_locked(struct fdrec *r, int fd) {
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                           .data.u64 = (uint64_t)(uint32_t)fd | (uint64_t)r->gen << 32};
  if (SYS(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
    if (errno != EEXIST || SYS(SYS_epoll_ctl, ep, EPOLL_CTL_MOD, fd, &ev) != 0) return -1;
  }
  r->registered = 1;
  return 0;
}

/* Learns the program's view of fd's file (O_NONBLOCK; on a socket
 * SO_RCVTIMEO and SO_SNDTIMEO) into r, for generation gen; returns whether
 * the program made the file non-blocking. Where ito holds O_NONBLOCK
 * itself (shim_nb) the kernel's flag says nothing, and user_nb, kept by
 * ito__dropin_setfl and ito__dropin_fionbio, stays. The epoch is read before the
 * calls: a change made meanwhile bumps it again, and the next wait learns
 * once more. */
static int learn_view(struct fdrec *r, int fd, uint32_t gen, int type) {
  static const int opt[2] = {SO_RCVTIMEO, SO_SNDTIMEO};
  unsigned e = __atomic_load_n(&view_epoch, __ATOMIC_ACQUIRE);
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  long long ns[2] = {0, 0};
  for (int k = 0; k < 2 && type == FD_SOCKET; k++) {
    struct timeval tv = {0, 0};
    socklen_t len = sizeof tv;
    if (SYS(SYS_getsockopt, fd, SOL_SOCKET, opt[k], &tv, &len) == 0)
      ns[k] = (long long)tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
  }
  spin_lock(&r->lock);
  if (r->gen == gen) {
    if (!r->shim_nb) STORE_RLX(&r->user_nb, fl >= 0 && (fl & O_NONBLOCK));
    STORE_RLX(&r->timeo_ns[0], ns[0]);
    STORE_RLX(&r->timeo_ns[1], ns[1]);
    __atomic_store_n(&r->view, e, __ATOMIC_RELEASE);
  }
  int nb = r->shim_nb ? r->user_nb : fl >= 0 && (fl & O_NONBLOCK);
  spin_unlock(&r->lock);
  return nb;
}

/* A call would block (or is about to, for accept and connect): did the
 * program make the file non-blocking? Then it gets EAGAIN (libc's call),
 * never a park. Also brings r's timeouts up to date. Under the shim the
 * learned view is kept current by its fcntl and ioctl; a native program
 * changes O_NONBLOCK with fcntl(2), which the runtime does not see, so
 * there the flag is asked for at every wait (one F_GETFL), as before. */
static int view_nonblocking(struct fdrec *r, int fd, uint32_t gen, int type) {
  if (LOAD_ACQ(&r->view) != LOAD_ACQ(&view_epoch)) return learn_view(r, fd, gen, type);
  if (ito__dropin_mode || LOAD_RLX(&r->shim_nb)) return LOAD_RLX(&r->user_nb);
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  return fl >= 0 && (fl & O_NONBLOCK);
}

/* A thread is about to park on readiness: it is counted in io_waiters, and
 * the first one, if every worker sleeps on its futex and nobody holds the
 * poll role, wakes one, which takes the role when it sleeps again (add, then
 * read Z: the pair of G1's read, docs/io.md invariant 4). */
static void waiter_arrives(void) {
  if (__atomic_fetch_add(&ito__io_waiters, 1, __ATOMIC_SEQ_CST) == 0) {
    uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_SEQ_CST) & ~IDLE_SYM;
    if ((x & (IDLE_SYM - 1)) && !LOAD_RLX(&ito__rt.io_poller)) ito__wake_one(NULL);
  }
}

static void waiter_leaves(void) { __atomic_fetch_sub(&ito__io_waiters, 1, __ATOMIC_RELEASE); }

/* The caller's call would block: park until a readiness event newer than
 * seen (or a close, or the deadline). 0: try again; EBADF: closed; ETIMEDOUT;
 * ENOTSUP: the fd cannot be polled (call libc). */
static int park(struct fdrec *r, int fd, uint32_t gen, int dir, unsigned seen,
                const struct timespec *deadline) {
  io_setup();
  spin_lock(&r->lock);
  if (r->gen != gen) {
    spin_unlock(&r->lock);
    return EBADF;
  }
  if (!r->registered && register_locked(r, fd) != 0) {
    r->type = FD_OTHER;
    spin_unlock(&r->lock);
    return ENOTSUP;
  }
  if (__atomic_load_n(&r->seq[dir], __ATOMIC_ACQUIRE) != seen) {
    spin_unlock(&r->lock);
    return 0;
  }
  waiter_arrives();
  int rc = ito__dropin_wq_wait(&r->lock, &r->head[dir], &r->tail[dir], dir, CLOCK_MONOTONIC,
                           deadline, NULL, NULL);
  waiter_leaves();
  if (__atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != gen) return EBADF;
  return rc;
}

static int io_thread(void) { return parkable(cur_worker()) != NULL; }

static void deadline_after(struct timespec *d, long long ns) {
  clock_gettime(CLOCK_MONOTONIC, d);
  long long t = d->tv_nsec + ns;
  d->tv_sec += (time_t)(t / 1000000000LL);
  d->tv_nsec = (long)(t % 1000000000LL);
}

/* One call, made non-blocking for this call only: MSG_DONTWAIT on sockets,
 * RWF_NOWAIT on pipes where the kernel has it, else ask poll first. */
struct op {
  int kind;        /* OP_* */
  int fd;
  struct iovec *iov;
  int iovcnt;
  struct msghdr *msg;
  int flags;
  struct sockaddr *addr;
  socklen_t *alen;
  void *buf;
  size_t len;
};
enum { OP_READV, OP_WRITEV, OP_RECV, OP_SEND, OP_RECVMSG, OP_SENDMSG, OP_ACCEPT };

static int is_write(int kind) { return kind == OP_WRITEV || kind == OP_SEND || kind == OP_SENDMSG; }

static ssize_t once_(struct op *o, int type);
/* Returns the result, or -1 with the error in *err. */
static __attribute__((noinline)) ssize_t once(struct op *o, int type, int *err) {
  ssize_t k = once_(o, type);
  *err = k < 0 ? errno : 0;
  return k;
}

static ssize_t once_(struct op *o, int type) {
  int fd = o->fd;
  if (type == FD_SOCKET) {
    switch (o->kind) {
      case OP_RECV:
        return SYS(SYS_recvfrom, fd, o->buf, o->len, o->flags | MSG_DONTWAIT, o->addr, o->alen);
      case OP_SEND:
        return SYS(SYS_sendto, fd, o->buf, o->len, o->flags | MSG_DONTWAIT, o->addr,
                   o->alen ? *o->alen : 0);
      case OP_READV:
      case OP_RECVMSG:
      case OP_WRITEV:
      case OP_SENDMSG: { /* on a socket, readv and writev are recvmsg and sendmsg */
        struct msghdr m = {.msg_iov = o->iov, .msg_iovlen = (size_t)o->iovcnt};
        return SYS(is_write(o->kind) ? SYS_sendmsg : SYS_recvmsg, fd, o->msg ? o->msg : &m,
                   o->flags | MSG_DONTWAIT);
      }
      case OP_ACCEPT:
        return SYS(SYS_accept4, fd, o->addr, o->alen, o->flags);
    }
  }
  /* a pipe or FIFO */
  int rd = o->kind == OP_READV;
  if (LOAD_RLX(&pipe_nowait) > 0)
    return SYS(rd ? SYS_preadv2 : SYS_pwritev2, fd, o->iov, o->iovcnt, -1L, 0L, RWF_NOWAIT);
  struct pollfd p = {fd, (short)(rd ? POLLIN : POLLOUT), 0};
  long ready = sys_poll(&p, 1, 0);
  if (ready <= 0) { /* an error (EINTR: the caller tries again) must not reach the plain call */
    if (ready == 0) errno = EAGAIN;
    return -1;
  }
  /* ready: the plain call, which blocks the worker only if another reader
   * or writer gets there first (docs/dropin.md section 7.2). A writable
   * pipe has room for at least PIPE_BUF bytes, so a write is cut to that:
   * a longer one would block until the reader made room. */
  if (rd) return SYS(SYS_readv, fd, o->iov, o->iovcnt);
  struct iovec cut[16];
  int n = 0;
  size_t room = PIPE_BUF;
  for (int i = 0; i < o->iovcnt && n < 16 && room; i++) {
    size_t l = o->iov[i].iov_len < room ? o->iov[i].iov_len : room;
    if (!l) continue;
    cut[n].iov_base = o->iov[i].iov_base;
    cut[n++].iov_len = l;
    room -= l;
  }
  return SYS(SYS_writev, fd, cut, n);
}

static ssize_t plain(struct op *o) {
  int fd = o->fd;
  switch (o->kind) {
    case OP_READV: return SYS(SYS_readv, fd, o->iov, o->iovcnt);
    case OP_WRITEV: return SYS(SYS_writev, fd, o->iov, o->iovcnt);
    case OP_RECV: return SYS(SYS_recvfrom, fd, o->buf, o->len, o->flags, o->addr, o->alen);
    case OP_SEND:
      return SYS(SYS_sendto, fd, o->buf, o->len, o->flags, o->addr, o->alen ? *o->alen : 0);
    case OP_RECVMSG: return SYS(SYS_recvmsg, fd, o->msg, o->flags);
    case OP_SENDMSG: return SYS(SYS_sendmsg, fd, o->msg, o->flags);
    case OP_ACCEPT: return SYS(SYS_accept4, fd, o->addr, o->alen, o->flags);
  }
  errno = EINVAL;
  return -1;
}


/* An OS thread that may not park (an outside thread, a pinned one) accepts
 * on a listener ito made non-blocking (shim_nb): the program sees a
 * blocking listener, so it gets libc's blocking accept, as poll and retry. */
static ssize_t accept_outside(struct fdrec *r, struct op *o) {
  for (;;) {
    ssize_t k = plain(o);
    if (k >= 0 || errno != EAGAIN || !LOAD_RLX(&r->shim_nb) || LOAD_RLX(&r->user_nb)) return k;
    struct pollfd p = {o->fd, POLLIN, 0};
    sys_poll(&p, 1, -1); /* EINTR too: try again, as under SA_RESTART */
  }
}

/* Makes the call; while it would block, parks. */
static ssize_t io_call(struct op *o) {
  struct fdrec *r;
  if (!io_thread())
    return o->kind == OP_ACCEPT && (r = rec_peek(o->fd)) ? accept_outside(r, o) : plain(o);
  if (!(r = rec_of(o->fd))) return plain(o);
  uint32_t gen;
  int type = fd_type(r, o->fd, &gen);
  if (type == FD_OTHER || (type == FD_PIPE && o->kind != OP_READV && o->kind != OP_WRITEV) ||
      (o->flags & MSG_DONTWAIT && o->kind != OP_ACCEPT))
    return plain(o);
  io_setup(); /* the pipe probe's answer is known before the first call */
  int dir = is_write(o->kind) ? WR : RD;
  struct timespec deadline, *dl = NULL;
  if (o->kind == OP_ACCEPT && !LOAD_RLX(&r->shim_nb)) {
    /* accept has no per-call flag: the listener itself becomes
     * non-blocking, unless the program made it so (then libc's behaviour);
     * user_nb keeps the program's view from now on */
    if (view_nonblocking(r, o->fd, gen, type)) return plain(o);
    long fl = SYS(SYS_fcntl, o->fd, F_GETFL);
    if (fl < 0) return plain(o);
    spin_lock(&r->lock);
    if (r->gen == gen && !r->shim_nb) {
      STORE_RLX(&r->user_nb, 0);
      STORE_RLX(&r->shim_nb, 1);
      SYS(SYS_fcntl, o->fd, F_SETFL, fl | O_NONBLOCK);
    }
    spin_unlock(&r->lock);
  }
  for (;;) {
    unsigned seen = __atomic_load_n(&r->seq[dir], __ATOMIC_ACQUIRE);
    int err;
    ssize_t k = once(o, type, &err);
    if (k >= 0) return k;
    if (err == EINTR) continue; /* a call that does not wait was interrupted: again */
    if (err != EAGAIN) {
      set_errno(err);
      return -1;
    }
    if (view_nonblocking(r, o->fd, gen, type)) { /* the program's own O_NONBLOCK */
      set_errno(EAGAIN);
      return -1;
    }
    if (!dl && LOAD_RLX(&r->timeo_ns[dir])) {
      deadline_after(&deadline, LOAD_RLX(&r->timeo_ns[dir]));
      dl = &deadline;
    }
    int rc = park(r, o->fd, gen, dir, seen, dl);
    if (rc == ENOTSUP) return plain(o);
    if (rc == EBADF || rc == ETIMEDOUT) {
      set_errno(rc == EBADF ? EBADF : EAGAIN);
      return -1;
    }
  }
}

/* A blocking write to a stream sends everything: the parts the kernel takes
 * each time, parking in between; an error after some progress returns the
 * progress (docs/dropin.md section 7.6). */
static ssize_t write_all(struct op *o, size_t total) {
  ssize_t done = 0;
  struct iovec *iov = o->iov;
  int cnt = o->iovcnt;
  struct iovec local[64];
  int own = 0;
  for (;;) {
    ssize_t k = io_call(o);
    if (k < 0) return done ? done : -1;
    done += k;
    if ((size_t)done >= total) return done;
    /* skip what was written */
    if (!own) {
      if (cnt > 64) return done; /* a partial write of a long vector: report it */
      memcpy(local, iov, (size_t)cnt * sizeof *iov);
      iov = local;
      own = 1;
    }
    size_t skip = (size_t)k;
    while (cnt && skip >= iov->iov_len) {
      skip -= iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt) {
      iov->iov_base = (char *)iov->iov_base + skip;
      iov->iov_len -= skip;
    }
    o->iov = iov;
    o->iovcnt = cnt;
    if (o->kind == OP_SEND) {
      o->buf = iov->iov_base;
      o->len = iov->iov_len;
    }
  }
}

static int stream_socket(int fd) {
  int t = 0;
  socklen_t l = sizeof t;
  return SYS(SYS_getsockopt, fd, SOL_SOCKET, SO_TYPE, &t, &l) == 0 && t == SOCK_STREAM;
}

/* ---- the calls ------------------------------------------------------------------ */

ssize_t ito_read(int fd, void *buf, size_t n) {
  struct iovec v = {buf, n};
  struct op o = {.kind = OP_READV, .fd = fd, .iov = &v, .iovcnt = 1};
  return io_call(&o);
}

ssize_t ito_readv(int fd, const struct iovec *iov, int cnt) {
  struct op o = {.kind = OP_READV, .fd = fd, .iov = (struct iovec *)iov, .iovcnt = cnt};
  return io_call(&o);
}

ssize_t ito_write(int fd, const void *buf, size_t n) {
  struct iovec v = {(void *)buf, n};
  struct op o = {.kind = OP_WRITEV, .fd = fd, .iov = &v, .iovcnt = 1};
  return write_all(&o, n);
}

ssize_t ito_writev(int fd, const struct iovec *iov, int cnt) {
  size_t total = 0;
  for (int i = 0; i < cnt; i++) total += iov[i].iov_len;
  struct op o = {.kind = OP_WRITEV, .fd = fd, .iov = (struct iovec *)iov, .iovcnt = cnt};
  return write_all(&o, total);
}

ssize_t ito_recv(int fd, void *buf, size_t n, int flags) {
  return ito_recvfrom(fd, buf, n, flags, NULL, NULL);
}

ssize_t ito_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
                     socklen_t *alen) {
  struct op o = {.kind = OP_RECV, .fd = fd, .buf = buf, .len = n, .flags = flags,
                 .addr = addr, .alen = alen};
  if (!(flags & MSG_WAITALL)) return io_call(&o);
  /* MSG_WAITALL: up to n bytes, end of file or the timeout */
  o.flags &= ~MSG_WAITALL;
  size_t got = 0;
  while (got < n) {
    o.buf = (char *)buf + got;
    o.len = n - got;
    ssize_t k = io_call(&o);
    if (k < 0) return got ? (ssize_t)got : -1;
    if (k == 0) break;
    got += (size_t)k;
  }
  return (ssize_t)got;
}

ssize_t ito_send(int fd, const void *buf, size_t n, int flags) {
  return ito_sendto(fd, buf, n, flags, NULL, 0);
}

ssize_t ito_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
                   socklen_t alen) {
  struct iovec v = {(void *)buf, n};
  struct op o = {.kind = OP_SEND, .fd = fd, .buf = (void *)buf, .len = n, .flags = flags,
                 .addr = (struct sockaddr *)addr, .alen = addr ? &alen : NULL, .iov = &v,
                 .iovcnt = 1};
  if (addr || (flags & MSG_DONTWAIT) || !stream_socket(fd)) return io_call(&o);
  return write_all(&o, n);
}

ssize_t ito_recvmsg(int fd, struct msghdr *msg, int flags) {
  struct op o = {.kind = OP_RECVMSG, .fd = fd, .msg = msg, .flags = flags};
  return io_call(&o);
}

ssize_t ito_sendmsg(int fd, const struct msghdr *msg, int flags) {
  struct op o = {.kind = OP_SENDMSG, .fd = fd, .msg = (struct msghdr *)msg, .flags = flags};
  return io_call(&o);
}

int ito_accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags) {
  struct op o = {.kind = OP_ACCEPT, .fd = fd, .addr = addr, .alen = alen, .flags = flags};
  return (int)io_call(&o);
}

int ito_accept(int fd, struct sockaddr *addr, socklen_t *alen) {
  return ito_accept4(fd, addr, alen, 0);
}

/* A blocking connect: non-blocking for the call, park until writable, then
 * the result from SO_ERROR; the file's flags are put back. */
int ito_connect(int fd, const struct sockaddr *addr, socklen_t alen) {
  struct fdrec *r;
  if (!io_thread() || !(r = rec_of(fd))) return (int)SYS(SYS_connect, fd, addr, alen);
  uint32_t gen;
  if (fd_type(r, fd, &gen) != FD_SOCKET || view_nonblocking(r, fd, gen, FD_SOCKET))
    return (int)SYS(SYS_connect, fd, addr, alen);
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  if (fl < 0 || (fl & O_NONBLOCK)) return (int)SYS(SYS_connect, fd, addr, alen);
  unsigned seen = __atomic_load_n(&r->seq[WR], __ATOMIC_ACQUIRE);
  SYS(SYS_fcntl, fd, F_SETFL, fl | O_NONBLOCK);
  int rc = (int)SYS(SYS_connect, fd, addr, alen);
  int err = errno;
  if (rc == 0 || err != EINPROGRESS) {
    SYS(SYS_fcntl, fd, F_SETFL, fl);
    errno = err;
    return rc;
  }
  struct timespec deadline, *dl = NULL; /* SO_SNDTIMEO: learned by view_nonblocking */
  if (LOAD_RLX(&r->timeo_ns[WR])) {
    deadline_after(&deadline, LOAD_RLX(&r->timeo_ns[WR]));
    dl = &deadline;
  }
  for (;;) {
    struct pollfd p = {fd, POLLOUT, 0};
    if (sys_poll(&p, 1, 0) > 0) break;
    int k = park(r, fd, gen, WR, seen, dl);
    if (k == EBADF) {
      set_errno(EBADF);
      return -1;
    }
    if (k == ETIMEDOUT) { /* as Linux: the connection goes on in the background */
      SYS(SYS_fcntl, fd, F_SETFL, fl);
      set_errno(EINPROGRESS);
      return -1;
    }
    if (k == ENOTSUP) break;
    seen = __atomic_load_n(&r->seq[WR], __ATOMIC_ACQUIRE);
  }
  SYS(SYS_fcntl, fd, F_SETFL, fl);
  int so = 0;
  socklen_t l = sizeof so;
  if (SYS(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, &so, &l) != 0) return -1;
  if (so) {
    set_errno(so);
    return -1;
  }
  return 0;
}

static void wake_lists(void *lists[2]) {
  for (int k = 0; k < 2; k++)
    if (lists[k]) ito__dropin_wq_wake(lists[k]);
}

/* Appends list b to list a (waiter lists from ito__dropin_wq_take and
 * fire_polls: a waiter's first word is its link). */
static void *chain(void *a, void *b) {
  if (!a) return b;
  void *x = a;
  while (*(void **)x) x = *(void **)x;
  *(void **)x = b;
  return a;
}

/* r locked: its number will name another file, or none (close, dup2 or
 * dup3 onto it, close_range): a new generation, with nothing known about
 * the file; the threads parked on it and the ito_poll groups watching it
 * go into lists[], to be woken once the number is closed. They find the
 * new generation and return EBADF without touching the number, which may
 * already name another file (docs/io.md, invariant 2). */
static void forget_locked(struct fdrec *r, void *lists[2]) {
  __atomic_store_n(&r->gen, r->gen + 1, __ATOMIC_RELEASE);
  r->type = FD_UNKNOWN;
  r->registered = 0;
  STORE_RLX(&r->shim_nb, 0);
  STORE_RLX(&r->user_nb, 0);
  __atomic_store_n(&r->view, 0, __ATOMIC_RELEASE);
  STORE_RLX(&r->timeo_ns[0], 0);
  STORE_RLX(&r->timeo_ns[1], 0);
  for (int k = 0; k < 2; k++) {
    void *l = ito__dropin_wq_take(&r->head[k], &r->tail[k], -1);
    if (r->polls[k]) l = fire_polls(r->polls[k], l); /* they see POLLNVAL */
    lists[k] = chain(l, lists[k]);
  }
}

/* The same for a record that may be absent, taking its lock. */
static void forget(struct fdrec *r, void *lists[2]) {
  if (!r) return;
  spin_lock(&r->lock);
  forget_locked(r, lists);
  spin_unlock(&r->lock);
}

/* Threads parked on fd are woken and get EBADF; the number may be reused
 * at once (docs/dropin.md section 7.6). */
int ito_close(int fd) {
  if (ito__io_fd_is_ours(fd)) {
    errno = EBADF;
    return -1;
  }
  void *lists[2] = {NULL, NULL};
  forget(rec_of(fd), lists);
  int rc = (int)SYS(SYS_close, fd);
  wake_lists(lists); /* errno stays close's: waking makes no failing call */
  return rc;
}

/* ---- the program's view of its fds ------------------------------------------------
 * What libito-pthread.so's fcntl, ioctl, dup, dup2, dup3, close_range,
 * closefrom and setsockopt do besides the call itself (docs/io.md, "The
 * program's view"). Each makes the real call with syscall(2), so the shim's
 * interposers never see it. */

/* Copies the O_NONBLOCK view of oldfd's record to newfd's (a new number for
 * the same file): where ito holds the flag (a listener, shim_nb), the
 * kernel's flag would tell the new number "non-blocking", and its accept
 * would give EAGAIN to a program that never asked for it. newfd's record
 * starts a new generation if reset (dup and F_DUPFD: the number was free,
 * so threads still parked on it were left there by a close the runtime did
 * not see, and get EBADF; dup2 and dup3 reset it before their call). */
static void dup_view(int oldfd, int newfd, int reset) {
  struct fdrec *o = rec_peek(oldfd), *n = rec_of(newfd);
  if (!n) return;
  int shim_nb = 0, user_nb = 0;
  if (o) {
    spin_lock(&o->lock);
    shim_nb = o->shim_nb;
    user_nb = o->user_nb;
    spin_unlock(&o->lock);
  }
  void *lists[2] = {NULL, NULL};
  spin_lock(&n->lock);
  if (reset) forget_locked(n, lists);
  if (shim_nb) {
    STORE_RLX(&n->shim_nb, 1);
    STORE_RLX(&n->user_nb, user_nb);
  }
  spin_unlock(&n->lock);
  wake_lists(lists);
}

/* fcntl(F_GETFL) as the program sees it: O_NONBLOCK is the program's where
 * ito holds the kernel's flag. */
int ito__dropin_getfl(int fd) {
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  struct fdrec *r = rec_peek(fd);
  if (fl < 0 || !r || !LOAD_RLX(&r->shim_nb)) return (int)fl;
  spin_lock(&r->lock);
  if (r->shim_nb) fl = r->user_nb ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
  spin_unlock(&r->lock);
  return (int)fl;
}

/* The view may have changed for every number of the file: records learn it
 * again at their next wait. */
static void view_changed(void) {
  if (__atomic_add_fetch(&view_epoch, 1, __ATOMIC_ACQ_REL) == 0) /* 0 is "never learned" */
    __atomic_add_fetch(&view_epoch, 1, __ATOMIC_ACQ_REL);
}

/* fcntl(F_SETFL): where ito holds O_NONBLOCK the kernel keeps it and the
 * program's choice goes to user_nb; elsewhere the call as made. Either way
 * the records learn the flag again before their next park. */
int ito__dropin_setfl(int fd, int flags) {
  struct fdrec *r = rec_peek(fd);
  if (r) spin_lock(&r->lock); /* against accept's taking of the flag (shim_nb) */
  int held = r && r->shim_nb;
  long rc = SYS(SYS_fcntl, fd, F_SETFL, held ? flags | O_NONBLOCK : flags);
  if (rc == 0 && held) STORE_RLX(&r->user_nb, (flags & O_NONBLOCK) != 0);
  if (r) spin_unlock(&r->lock);
  if (rc == 0) view_changed();
  return (int)rc;
}

/* ioctl(FIONBIO, on): the same as F_SETFL with O_NONBLOCK set or cleared. */
int ito__dropin_fionbio(int fd, const int *on) {
  static const int one = 1;
  struct fdrec *r = rec_peek(fd);
  if (r) spin_lock(&r->lock);
  int held = r && r->shim_nb;
  long rc = SYS(SYS_ioctl, fd, FIONBIO, held ? &one : on);
  if (rc == 0 && held) STORE_RLX(&r->user_nb, *on != 0);
  if (r) spin_unlock(&r->lock);
  if (rc == 0) view_changed();
  return (int)rc;
}

/* dup (cmd 0) and fcntl's F_DUPFD and F_DUPFD_CLOEXEC: the new number gets
 * the old one's O_NONBLOCK view. */
int ito__dropin_dupfd(int oldfd, int cmd, int minfd) {
  int fd = (int)(cmd ? SYS(SYS_fcntl, oldfd, cmd, minfd) : SYS(SYS_dup, oldfd));
  if (fd >= 0) dup_view(oldfd, fd, 1);
  return fd;
}

/* dup2 (dup2 set: flags unused, oldfd == newfd allowed) and dup3: newfd is
 * closed as by ito_close (its parked threads wake with EBADF), then names
 * oldfd's file. The runtime's epoll and eventfd cannot be replaced. */
int ito__dropin_dup3(int oldfd, int newfd, int flags, int dup2) {
  if (ito__io_fd_is_ours(newfd)) {
    errno = EBADF;
    return -1;
  }
  if (oldfd == newfd) {
    if (!dup2) {
      errno = EINVAL;
      return -1;
    }
    return SYS(SYS_fcntl, oldfd, F_GETFD) < 0 ? -1 : newfd; /* dup2's check of oldfd */
  }
  /* a dup2 that fails closes nothing: refuse a bad oldfd (or flags) before
   * the record of newfd is reset and its threads woken */
  if (SYS(SYS_fcntl, oldfd, F_GETFD) < 0) return -1;
  if (flags & ~O_CLOEXEC) {
    errno = EINVAL;
    return -1;
  }
  void *lists[2] = {NULL, NULL};
  forget(rec_of(newfd), lists);
  int fd = (int)SYS(SYS_dup3, oldfd, newfd, flags);
  int err = errno;
  wake_lists(lists);
  if (fd >= 0) dup_view(oldfd, fd, 0); /* reset above, before the number changed file */
  errno = err; /* no park above: errno is still this OS thread's */
  return fd;
}

/* close_range(first, last, flags) without CLOSE_RANGE_CLOEXEC: every record
 * in the range is reset as by ito_close, and the runtime's epoll and eventfd
 * are left open (the range is closed around them). Returns 0 or -1. */
int ito__dropin_close_range(unsigned first, unsigned last, int flags) {
  if (first > last || (flags & CLOSE_RANGE_CLOEXEC)) /* errors, or nothing is closed */
    return (int)SYS(SYS_close_range, first, last, flags);
  void *lists[2] = {NULL, NULL};
  unsigned hi = last < (unsigned)(CHUNK * NCHUNKS) ? last : CHUNK * NCHUNKS - 1;
  for (unsigned c = first / CHUNK; first < (unsigned)(CHUNK * NCHUNKS) && c <= hi / CHUNK; c++) {
    struct fdrec *chunk = __atomic_load_n(&chunks[c], __ATOMIC_ACQUIRE);
    if (!chunk) continue;
    for (unsigned fd = c * CHUNK; fd < (c + 1) * CHUNK; fd++) {
      if (fd < first || fd > hi || ito__io_fd_is_ours((int)fd)) continue;
      forget(&chunk[fd % CHUNK], lists);
    }
  }
  /* the range minus ep and efd (at most three pieces) */
  long rc = 0;
  int err = 0;
  for (unsigned a = first;;) {
    int ours = -1; /* the lowest of ep and efd in [a, last] */
    for (int k = 0; k < 2; k++) {
      int x = k ? efd : ep;
      if (x >= 0 && (unsigned)x >= a && (unsigned)x <= last && (ours < 0 || x < ours)) ours = x;
    }
    unsigned b = ours < 0 ? last : (unsigned)ours - 1;
    if ((ours < 0 || (unsigned)ours > a) && SYS(SYS_close_range, a, b, flags) != 0 && !rc) {
      rc = -1;
      err = errno;
    }
    if (ours < 0 || (unsigned)ours == last) break;
    a = (unsigned)ours + 1;
  }
  wake_lists(lists);
  if (rc) errno = err;
  return (int)rc;
}

/* setsockopt, with the socket timeouts seen by the next wait on any number
 * of the file. */
int ito_setsockopt(int fd, int level, int opt, const void *val, socklen_t len) {
  long rc = SYS(SYS_setsockopt, fd, level, opt, val, len);
  if (rc == 0 && level == SOL_SOCKET &&
      (opt == SO_RCVTIMEO || opt == SO_SNDTIMEO
#ifdef SO_RCVTIMEO_NEW
       || opt == SO_RCVTIMEO_NEW || opt == SO_SNDTIMEO_NEW || opt == SO_RCVTIMEO_OLD ||
       opt == SO_SNDTIMEO_OLD
#endif
       ))
    view_changed();
  return (int)rc;
}

/* ---- poll ----------------------------------------------------------------------- */

static void unlink_node(struct fdrec *r, int d, struct pollnode *n) {
  if (n->prev)
    n->prev->next = n->next;
  else
    r->polls[d] = n->next;
  if (n->next) n->next->prev = n->prev;
}

#define POLL_STACK 64

/* Milliseconds from now to the monotonic deadline d, rounded up; 0 once
 * it has passed. */
static int ms_left(const struct timespec *d) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long ns = (long long)(d->tv_sec - now.tv_sec) * 1000000000LL + (d->tv_nsec - now.tv_nsec);
  return ns <= 0 ? 0 : (int)((ns + 999999) / 1000000);
}

/* libc's poll, but an ito thread parks while nothing is ready: one node per
 * fd and direction on the records, one group, the first event wakes it;
 * then libc's poll with no wait computes revents. A spurious wake (the
 * readiness was taken by someone else) waits again for the time left. */
/* A poll that does not wait. A signal may land even there; the parked
 * thread's calls are not interrupted (docs/io.md invariant 5): again. */
static int poll_now(struct pollfd *fds, nfds_t n) {
  int rc;
  while ((rc = (int)sys_poll(fds, n, 0)) < 0 && errno == EINTR) {
  }
  return rc;
}

int ito_poll(struct pollfd *fds, nfds_t n, int timeout_ms) {
  if (!io_thread() || n == 0) return (int)sys_poll(fds, n, timeout_ms);
  struct timespec deadline, *dl = NULL;
  if (timeout_ms > 0) {
    deadline_after(&deadline, (long long)timeout_ms * 1000000LL);
    dl = &deadline;
  }
  io_setup();
  struct pollnode stack_nodes[POLL_STACK * 2], *nodes = stack_nodes;
  unsigned *seen = NULL, stack_seen[POLL_STACK * 2];
  if (n > POLL_STACK) {
    nodes = calloc(n * 2, sizeof *nodes);
    seen = calloc(n * 2, sizeof *seen);
    if (!nodes || !seen) {
      free(nodes == stack_nodes ? NULL : nodes);
      free(seen);
      return (int)sys_poll(fds, n, timeout_ms); /* blocks the worker, but answers */
    }
  } else {
    seen = stack_seen;
  }
  int rc;
  for (;;) {
    for (nfds_t i = 0; i < n; i++) {
      struct fdrec *r = rec_of(fds[i].fd);
      for (int d = 0; d < 2; d++) seen[2 * i + d] = r ? LOAD_ACQ(&r->seq[d]) : 0;
    }
    rc = poll_now(fds, n);
    if (rc != 0 || timeout_ms == 0) break;
    struct pollgroup g = {0, 0, NULL, NULL};
    int stale = 0, hung = 0;
    for (nfds_t i = 0; i < n; i++) {
      struct fdrec *r = rec_of(fds[i].fd);
      if (!r) continue;
      short ev = fds[i].events;
      int want[2] = {(ev & (POLLIN | POLLPRI | POLLRDHUP)) != 0, (ev & POLLOUT) != 0};
      uint32_t gen;
      fd_type(r, fds[i].fd, &gen);
      spin_lock(&r->lock);
      if (!r->registered && register_locked(r, fds[i].fd) != 0) {
        spin_unlock(&r->lock);
        continue; /* cannot be polled by epoll (a regular file is always ready anyway) */
      }
      for (int d = 0; d < 2; d++) {
        struct pollnode *x = &nodes[2 * i + d];
        x->g = NULL;
        if (!want[d]) continue;
        if (LOAD_RLX(&r->seq[d]) != seen[2 * i + d]) stale = 1;
        x->g = &g;
        x->prev = NULL;
        x->next = r->polls[d];
        if (x->next) x->next->prev = x;
        r->polls[d] = x;
        hung++;
      }
      spin_unlock(&r->lock);
    }
    if (!stale && hung) {
      waiter_arrives();
      spin_lock(&g.qlock);
      if (!__atomic_load_n(&g.fired, __ATOMIC_ACQUIRE))
        ito__dropin_wq_wait(&g.qlock, &g.head, &g.tail, 0, CLOCK_MONOTONIC, dl, NULL, NULL);
      else
        spin_unlock(&g.qlock);
      waiter_leaves();
    }
    for (nfds_t i = 0; i < n; i++) { /* off every record before g goes away */
      struct fdrec *r = rec_of(fds[i].fd);
      if (!r) continue;
      spin_lock(&r->lock);
      for (int d = 0; d < 2; d++)
        if (nodes[2 * i + d].g == &g) unlink_node(r, d, &nodes[2 * i + d]);
      spin_unlock(&r->lock);
    }
    if (!hung) { /* nothing epoll can watch: libc's poll decides, for the time left; a
                  * signal does not cut it short, as no wait of a parked thread is */
      while ((rc = (int)sys_poll(fds, n, dl ? ms_left(&deadline) : -1)) < 0 && errno == EINTR) {
      }
      break;
    }
    if (dl) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec > deadline.tv_sec ||
          (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)) {
        rc = poll_now(fds, n);
        break;
      }
    }
  }
  if (nodes != stack_nodes) {
    free(nodes);
    free(seen);
  }
  return rc;
}
