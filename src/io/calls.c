/* The blocking calls: each is made non-blocking for this call only
 * (MSG_DONTWAIT on sockets, RWF_NOWAIT on pipes, else poll first), and
 * while it would block the thread parks on the fd's record. Invariants at
 * the top of io.h; design in docs/io.md. */
#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* One call, made non-blocking for this call only: MSG_DONTWAIT on sockets,
 * RWF_NOWAIT on pipes where the kernel has it, else ask poll first. */
struct op {
  int kind; /* OP_* */
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
  if (ito__io_pipe_nowait())
    return SYS(rd ? SYS_preadv2 : SYS_pwritev2, fd, o->iov, o->iovcnt, -1L, 0L, RWF_NOWAIT);
  struct pollfd p = {fd, (short)(rd ? POLLIN : POLLOUT), 0};
  long ready = ito__io_sys_poll(&p, 1, 0);
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
    case OP_READV:
      return SYS(SYS_readv, fd, o->iov, o->iovcnt);
    case OP_WRITEV:
      return SYS(SYS_writev, fd, o->iov, o->iovcnt);
    case OP_RECV:
      return SYS(SYS_recvfrom, fd, o->buf, o->len, o->flags, o->addr, o->alen);
    case OP_SEND:
      return SYS(SYS_sendto, fd, o->buf, o->len, o->flags, o->addr, o->alen ? *o->alen : 0);
    case OP_RECVMSG:
      return SYS(SYS_recvmsg, fd, o->msg, o->flags);
    case OP_SENDMSG:
      return SYS(SYS_sendmsg, fd, o->msg, o->flags);
    case OP_ACCEPT:
      return SYS(SYS_accept4, fd, o->addr, o->alen, o->flags);
  }
  errno = EINVAL;
  return -1;
}

/* An OS thread that may not park (an outside thread, a pinned one) accepts
 * on a listener ito made non-blocking (ito_nb): the program sees a
 * blocking listener, so it gets libc's blocking accept, as poll and retry. */
static ssize_t accept_outside(struct fdrec *r, struct op *o) {
  for (;;) {
    ssize_t k = plain(o);
    if (k >= 0 || errno != EAGAIN || !LOAD_RLX(&r->ito_nb) || LOAD_RLX(&r->user_nb)) return k;
    struct pollfd p = {o->fd, POLLIN, 0};
    ito__io_sys_poll(&p, 1, -1); /* EINTR too: try again, as under SA_RESTART */
  }
}

/* The layer cannot park this call (invariant 5): libc's call, blocking the
 * worker, announced to the monitor. On a listener ito made non-blocking,
 * the blocking accept the program asked for. Its own frame: errno read
 * right after the call, which never parks. */
static __attribute__((noinline)) ssize_t blocking(struct fdrec *r, struct op *o) {
  ito__io_block_begin();
  ssize_t k = o->kind == OP_ACCEPT && r ? accept_outside(r, o) : plain(o);
  int e = errno;
  ito__io_block_end();
  errno = e;
  return k;
}

/* Makes the call; while it would block, parks. */
static ssize_t io_call(struct op *o) {
  struct fdrec *r;
  if (!ito__io_parkable())
    return o->kind == OP_ACCEPT && (r = ito__io_rec_peek(o->fd)) ? accept_outside(r, o) : plain(o);
  if (!(r = ito__io_rec(o->fd))) return plain(o);
  uint32_t gen;
  int type = ito__io_fd_type(r, o->fd, &gen);
  if (type == FD_OTHER || (type == FD_PIPE && o->kind != OP_READV && o->kind != OP_WRITEV) ||
      (o->flags & MSG_DONTWAIT && o->kind != OP_ACCEPT))
    return plain(o);
  /* set up before the first call, which needs the pipe probe's answer */
  if (UNLIKELY(!ito__io_setup())) return blocking(r, o);
  int dir = is_write(o->kind) ? WR : RD;
  struct timespec deadline, *dl = NULL;
  if (o->kind == OP_ACCEPT && !LOAD_RLX(&r->ito_nb)) {
    /* accept has no per-call flag: the listener itself becomes
     * non-blocking, unless the program made it so (then libc's behaviour);
     * user_nb keeps the program's view from now on */
    if (ito__io_view_nonblocking(r, o->fd, gen, type)) return plain(o);
    long fl = SYS(SYS_fcntl, o->fd, F_GETFL);
    if (fl < 0) return plain(o);
    spin_lock(&r->lock, LR_QUEUE_OUTER);
    if (r->gen == gen && !r->ito_nb) {
      STORE_RLX(&r->user_nb, 0);
      STORE_RLX(&r->ito_nb, 1);
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
      ito__io_set_errno(err);
      return -1;
    }
    if (ito__io_view_nonblocking(r, o->fd, gen, type)) { /* the program's own O_NONBLOCK */
      ito__io_set_errno(EAGAIN);
      return -1;
    }
    if (!dl && LOAD_RLX(&r->timeo_ns[dir])) {
      deadline = deadline_in(CLOCK_MONOTONIC, LOAD_RLX(&r->timeo_ns[dir]));
      dl = &deadline;
    }
    int rc = ito__io_park(r, o->fd, gen, dir, seen, dl);
    if (rc == ENOTSUP) return plain(o);
    if (rc == ENOSPC) return blocking(r, o);      /* (the program's view is learned: it blocks) */
    if (rc == EINTR && !ito__sig_restartable()) { /* a handler without SA_RESTART ran */
      ito__io_set_errno(EINTR);
      return -1;
    }
    if (rc == EBADF || rc == ETIMEDOUT) {
      ito__io_set_errno(rc == EBADF ? EBADF : EAGAIN);
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
  struct op o = {
      .kind = OP_RECV, .fd = fd, .buf = buf, .len = n, .flags = flags, .addr = addr, .alen = alen};
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
  struct op o = {.kind = OP_SEND,
                 .fd = fd,
                 .buf = (void *)buf,
                 .len = n,
                 .flags = flags,
                 .addr = (struct sockaddr *)addr,
                 .alen = addr ? &alen : NULL,
                 .iov = &v,
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

/* connect's wait where the layer cannot park it (invariant 5): poll for
 * writability, blocking the worker (announced), until the deadline (NULL:
 * none). 0: writable, or an error for SO_ERROR to tell; ETIMEDOUT; EINTR:
 * a signal's handler ran. */
static __attribute__((noinline)) int connect_blocking(int fd, const struct timespec *dl) {
  ito__io_block_begin();
  struct pollfd p = {fd, POLLOUT, 0};
  int ms = dl ? (int)((ns_until(CLOCK_MONOTONIC, dl) + 999999) / 1000000) : -1;
  long k = ito__io_sys_poll(&p, 1, ms);
  int e = errno;
  ito__io_block_end();
  return k > 0 ? 0 : k == 0 ? ETIMEDOUT : e == EINTR ? EINTR : 0;
}

/* A blocking connect: non-blocking for the call, park until writable, then
 * the result from SO_ERROR; the file's flags are put back. */
int ito_connect(int fd, const struct sockaddr *addr, socklen_t alen) {
  struct fdrec *r;
  if (!ito__io_parkable() || !(r = ito__io_rec(fd))) return (int)SYS(SYS_connect, fd, addr, alen);
  uint32_t gen;
  if (ito__io_fd_type(r, fd, &gen) != FD_SOCKET || ito__io_view_nonblocking(r, fd, gen, FD_SOCKET))
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
    deadline = deadline_in(CLOCK_MONOTONIC, LOAD_RLX(&r->timeo_ns[WR]));
    dl = &deadline;
  }
  for (;;) {
    struct pollfd p = {fd, POLLOUT, 0};
    if (ito__io_sys_poll(&p, 1, 0) > 0) break;
    int k = ito__io_park(r, fd, gen, WR, seen, dl);
    if (k == ENOTSUP || k == ENOSPC) { /* (ENOTSUP: never on a socket) */
      k = connect_blocking(fd, dl);
      if (k == 0) break;
    }
    if (k == EBADF) {
      ito__io_set_errno(EBADF);
      return -1;
    }
    if (k == ETIMEDOUT || (k == EINTR && !ito__sig_restartable())) {
      /* as Linux: the connection goes on in the background */
      SYS(SYS_fcntl, fd, F_SETFL, fl);
      ito__io_set_errno(k == EINTR ? EINTR : EINPROGRESS);
      return -1;
    }
    seen = __atomic_load_n(&r->seq[WR], __ATOMIC_ACQUIRE);
  }
  SYS(SYS_fcntl, fd, F_SETFL, fl);
  int so = 0;
  socklen_t l = sizeof so;
  if (SYS(SYS_getsockopt, fd, SOL_SOCKET, SO_ERROR, &so, &l) != 0) return -1;
  if (so) {
    ito__io_set_errno(so);
    return -1;
  }
  return 0;
}
