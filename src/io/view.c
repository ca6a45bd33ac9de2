/* The program's view of its fds, kept current through the calls that
 * change it: close, dup, dup2, dup3, close_range, fcntl's F_GETFL, F_SETFL
 * and F_DUPFD, ioctl's FIONBIO, setsockopt. ito_close and ito_setsockopt
 * are public; the others are what a drop-in library's interposers do
 * besides the call itself (view.h). Each makes the real call with
 * syscall(2), so an interposer never sees it. Design: docs/io.md, "The
 * program's view". */
#define _GNU_SOURCE
#include "view.h"

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Threads parked on fd are woken and get EBADF; the number may be reused
 * at once (docs/dropin.md section 7.6). */
int ito_close(int fd) {
  if (ito__own_fd(fd)) {
    errno = EBADF;
    return -1;
  }
  waiter *lists[2] = {NULL, NULL};
  ito__io_forget(ito__io_rec(fd), lists);
  int rc = (int)SYS(SYS_close, fd);
  ito__io_wake_lists(lists); /* errno stays close's: waking makes no failing call */
  return rc;
}

/* ---- the program's view of its fds ------------------------------------------------
 * What libito-pthread.so's fcntl, ioctl, dup, dup2, dup3, close_range,
 * closefrom and setsockopt do besides the call itself (docs/io.md, "The
 * program's view"). Each makes the real call with syscall(2), so the shim's
 * interposers never see it. */

/* Copies the O_NONBLOCK view of oldfd's record to newfd's (a new number for
 * the same file): where ito holds the flag (a listener, ito_nb), the
 * kernel's flag would tell the new number "non-blocking", and its accept
 * would give EAGAIN to a program that never asked for it. newfd's record
 * starts a new generation if reset (dup and F_DUPFD: the number was free,
 * so threads still parked on it were left there by a close the runtime did
 * not see, and get EBADF; dup2 and dup3 reset it before their call). */
static void dup_view(int oldfd, int newfd, int reset) {
  struct fdrec *o = ito__io_rec_peek(oldfd), *n = ito__io_rec(newfd);
  if (!n) return;
  int ito_nb = 0, user_nb = 0;
  if (o) {
    spin_lock(&o->lock, LR_QUEUE_OUTER);
    ito_nb = o->ito_nb;
    user_nb = o->user_nb;
    spin_unlock(&o->lock);
  }
  waiter *lists[2] = {NULL, NULL};
  spin_lock(&n->lock, LR_QUEUE_OUTER);
  if (reset) ito__io_forget_locked(n, lists);
  if (ito_nb) {
    STORE_RLX(&n->ito_nb, 1);
    STORE_RLX(&n->user_nb, user_nb);
  }
  spin_unlock(&n->lock);
  ito__io_wake_lists(lists);
}

/* fcntl(F_GETFL) as the program sees it: O_NONBLOCK is the program's where
 * ito holds the kernel's flag. */
int ito__io_getfl(int fd) {
  long fl = SYS(SYS_fcntl, fd, F_GETFL);
  struct fdrec *r = ito__io_rec_peek(fd);
  if (fl < 0 || !r || !LOAD_RLX(&r->ito_nb)) return (int)fl;
  spin_lock(&r->lock, LR_QUEUE_OUTER);
  if (r->ito_nb) fl = r->user_nb ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
  spin_unlock(&r->lock);
  return (int)fl;
}

/* fcntl(F_SETFL): where ito holds O_NONBLOCK the kernel keeps it and the
 * program's choice goes to user_nb; elsewhere the call as made. Either way
 * the records learn the flag again before their next park. */
int ito__io_setfl(int fd, int flags) {
  struct fdrec *r = ito__io_rec_peek(fd);
  if (r) spin_lock(&r->lock, LR_QUEUE_OUTER); /* against accept's taking of the flag (ito_nb) */
  int held = r && r->ito_nb;
  long rc = SYS(SYS_fcntl, fd, F_SETFL, held ? flags | O_NONBLOCK : flags);
  if (rc == 0 && held) STORE_RLX(&r->user_nb, (flags & O_NONBLOCK) != 0);
  if (r) spin_unlock(&r->lock);
  if (rc == 0) ito__io_view_changed();
  return (int)rc;
}

/* ioctl(FIONBIO, on): the same as F_SETFL with O_NONBLOCK set or cleared. */
int ito__io_fionbio(int fd, const int *on) {
  static const int one = 1;
  struct fdrec *r = ito__io_rec_peek(fd);
  if (r) spin_lock(&r->lock, LR_QUEUE_OUTER);
  int held = r && r->ito_nb;
  long rc = SYS(SYS_ioctl, fd, FIONBIO, held ? &one : on);
  if (rc == 0 && held) STORE_RLX(&r->user_nb, *on != 0);
  if (r) spin_unlock(&r->lock);
  if (rc == 0) ito__io_view_changed();
  return (int)rc;
}

/* dup (cmd 0) and fcntl's F_DUPFD and F_DUPFD_CLOEXEC: the new number gets
 * the old one's O_NONBLOCK view. */
int ito__io_dupfd(int oldfd, int cmd, int minfd) {
  int fd = (int)(cmd ? SYS(SYS_fcntl, oldfd, cmd, minfd) : SYS(SYS_dup, oldfd));
  if (fd >= 0) dup_view(oldfd, fd, 1);
  return fd;
}

/* dup2 (dup2 set: flags unused, oldfd == newfd allowed) and dup3: newfd is
 * closed as by ito_close (its parked threads wake with EBADF), then names
 * oldfd's file. The runtime's epoll and eventfd cannot be replaced. */
int ito__io_dup3(int oldfd, int newfd, int flags, int dup2) {
  if (ito__own_fd(newfd)) {
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
  waiter *lists[2] = {NULL, NULL};
  ito__io_forget(ito__io_rec(newfd), lists);
  int fd = (int)SYS(SYS_dup3, oldfd, newfd, flags);
  int err = errno;
  ito__io_wake_lists(lists);
  if (fd >= 0) dup_view(oldfd, fd, 0); /* reset above, before the number changed file */
  errno = err;                         /* no park above: errno is still this OS thread's */
  return fd;
}

/* close_range(first, last, flags) without CLOSE_RANGE_CLOEXEC: every record
 * in the range is reset as by ito_close, and the runtime's own descriptors
 * are left open (the range is closed around them). Returns 0 or -1. */
int ito__io_close_range(unsigned first, unsigned last, int flags) {
  if (first > last || (flags & CLOSE_RANGE_CLOEXEC)) /* errors, or nothing is closed */
    return (int)SYS(SYS_close_range, first, last, flags);
  waiter *lists[2] = {NULL, NULL};
  unsigned hi = last < (unsigned)IO_MAX_FDS ? last : IO_MAX_FDS - 1;
  for (unsigned c = first - first % IO_CHUNK; first < (unsigned)IO_MAX_FDS && c <= hi;
       c += IO_CHUNK) {
    int base;
    struct fdrec *chunk = ito__io_chunk((int)c, &base);
    if (!chunk) continue;
    for (unsigned fd = c; fd < c + IO_CHUNK; fd++) {
      if (fd < first || fd > hi || ito__own_fd((int)fd)) continue;
      ito__io_forget(&chunk[fd - c], lists);
    }
  }
  /* the range minus the runtime's descriptors */
  long rc = 0;
  int err = 0;
  for (unsigned a = first;;) {
    int ours = ito__own_fd_first(a, last);
    unsigned b = ours < 0 ? last : (unsigned)ours - 1;
    if ((ours < 0 || (unsigned)ours > a) && SYS(SYS_close_range, a, b, flags) != 0 && !rc) {
      rc = -1;
      err = errno;
    }
    if (ours < 0 || (unsigned)ours == last) break;
    a = (unsigned)ours + 1;
  }
  ito__io_wake_lists(lists);
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
    ito__io_view_changed();
  return (int)rc;
}
