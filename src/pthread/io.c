/* Blocking I/O through the shim (docs/dropin.md section 7): on an ito
 * thread that may park, the calls are the runtime's ito_* calls, which park
 * the thread instead of blocking its worker; anywhere else, libc's. close
 * always goes through ito_close, so that threads parked on the fd wake with
 * EBADF and the runtime's own descriptors cannot be closed under it; so do
 * dup2, dup3, close_range and closefrom, which close too. fcntl, ioctl and
 * setsockopt keep the runtime's view of what the program set on a file
 * (O_NONBLOCK, the socket timeouts) current, from every thread (docs/io.md,
 * "The program's view"). */
#include "shim.h"

#include <fcntl.h>
#include <stdarg.h>
#include <sys/ioctl.h>

/* Each is a cancellation point: a request is acted on before the call,
 * and after it when the call was cut short (EINTR: a request or a signal
 * ended its wait). */
#define IO_CALL(name, ito_call, ...)                                    \
  do {                                                                  \
    ITO_PT_ENTER(name, __VA_ARGS__);                                    \
    if (!ito__dropin_can_park()) return ito__pt_real.name(__VA_ARGS__); \
    ito__pt_testcancel();                                               \
    __typeof__(ito_call(__VA_ARGS__)) r_ = ito_call(__VA_ARGS__);       \
    ito__pt_testcancel_eintr(r_ == -1 && errno == EINTR);               \
    return r_;                                                          \
  } while (0)

ITO_PT_EXPORT ssize_t read(int fd, void *buf, size_t n) { IO_CALL(read, ito_read, fd, buf, n); }
ITO_PT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  IO_CALL(write, ito_write, fd, buf, n);
}
ITO_PT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  IO_CALL(readv, ito_readv, fd, iov, cnt);
}
ITO_PT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  IO_CALL(writev, ito_writev, fd, iov, cnt);
}
ITO_PT_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
  IO_CALL(recv, ito_recv, fd, buf, n, flags);
}
ITO_PT_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
  IO_CALL(send, ito_send, fd, buf, n, flags);
}
ITO_PT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
                               socklen_t *l) {
  IO_CALL(recvfrom, ito_recvfrom, fd, buf, n, flags, a, l);
}
ITO_PT_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a,
                             socklen_t l) {
  IO_CALL(sendto, ito_sendto, fd, buf, n, flags, a, l);
}
ITO_PT_EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags) {
  IO_CALL(recvmsg, ito_recvmsg, fd, m, flags);
}
ITO_PT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
  IO_CALL(sendmsg, ito_sendmsg, fd, m, flags);
}
/* accept from any thread: on a listener the runtime made non-blocking, a
 * thread that cannot park must still block, as the program asked. */
ITO_PT_EXPORT int accept(int fd, struct sockaddr *a, socklen_t *l) {
  ITO_PT_ENTER(accept, fd, a, l);
  ito__pt_testcancel();
  int r = ito_accept(fd, a, l);
  ito__pt_testcancel_eintr(r == -1 && errno == EINTR);
  return r;
}
ITO_PT_EXPORT int accept4(int fd, struct sockaddr *a, socklen_t *l, int flags) {
  ITO_PT_ENTER(accept4, fd, a, l, flags);
  ito__pt_testcancel();
  int r = ito_accept4(fd, a, l, flags);
  ito__pt_testcancel_eintr(r == -1 && errno == EINTR);
  return r;
}
ITO_PT_EXPORT int connect(int fd, const struct sockaddr *a, socklen_t l) {
  IO_CALL(connect, ito_connect, fd, a, l);
}

ITO_PT_EXPORT int close(int fd) {
  ITO_PT_ENTER(close, fd);
  ito__pt_testcancel();
  return ito_close(fd);
}

/* ---- the program's view of its files ------------------------------------------- */

/* fcntl and fcntl64 (the name glibc's headers give it under
 * _FILE_OFFSET_BITS=64): the flags and the dups go through the runtime,
 * every other command to libc. The argument is read as a pointer, as libc
 * itself reads it: an int and a long travel in the same register. */
static int fcntl_view(int fd, int cmd, void *arg, int (*real)(int, int, ...)) {
  switch (cmd) {
    case F_GETFL:
      return ito__dropin_getfl(fd);
    case F_SETFL:
      return ito__dropin_setfl(fd, (int)(intptr_t)arg);
    case F_DUPFD:
    case F_DUPFD_CLOEXEC:
      return ito__dropin_dupfd(fd, cmd, (int)(intptr_t)arg);
    default:
      return real(fd, cmd, arg);
  }
}

ITO_PT_EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  ITO_PT_ENTER(fcntl, fd, cmd, arg);
  return fcntl_view(fd, cmd, arg, ito__pt_real.fcntl);
}
ITO_PT_EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  ITO_PT_ENTER(fcntl64, fd, cmd, arg);
  return fcntl_view(fd, cmd, arg, ito__pt_real.fcntl64);
}

ITO_PT_EXPORT int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void *arg = va_arg(ap, void *);
  va_end(ap);
  ITO_PT_ENTER(ioctl, fd, req, arg);
  if (req == FIONBIO) return ito__dropin_fionbio(fd, arg);
  return ito__pt_real.ioctl(fd, req, arg);
}

ITO_PT_EXPORT int setsockopt(int fd, int level, int opt, const void *val, socklen_t len) {
  ITO_PT_ENTER(setsockopt, fd, level, opt, val, len);
  return ito_setsockopt(fd, level, opt, val, len);
}

ITO_PT_EXPORT int dup(int fd) {
  ITO_PT_ENTER(dup, fd);
  return ito__dropin_dupfd(fd, 0, 0);
}
ITO_PT_EXPORT int dup2(int oldfd, int newfd) {
  ITO_PT_ENTER(dup2, oldfd, newfd);
  return ito__dropin_dup3(oldfd, newfd, 0, 1);
}
ITO_PT_EXPORT int dup3(int oldfd, int newfd, int flags) {
  ITO_PT_ENTER(dup3, oldfd, newfd, flags);
  return ito__dropin_dup3(oldfd, newfd, flags, 0);
}

/* CLOSE_RANGE_UNSHARE gives the calling OS thread a file table of its own:
 * on a worker, every ito thread that runs there later would see other
 * files than the rest. An OS thread that is not a worker may (nothing of
 * the runtime's changes for the others). */
ITO_PT_EXPORT int close_range(unsigned first, unsigned last, int flags) {
  ITO_PT_ENTER(close_range, first, last, flags);
  if (flags & CLOSE_RANGE_UNSHARE) {
    if (ito_self()) {
      errno = REFUSE("close_range", "CLOSE_RANGE_UNSHARE on an ito thread",
                     "call it in a child process, or close without unsharing", ENOTSUP);
      return -1;
    }
    return ito__pt_real.close_range(first, last, flags);
  }
  return ito__dropin_close_range(first, last, flags);
}

/* glibc's closefrom calls its own close_range, past the shim: here the
 * runtime's descriptors stay open. Without close_range (Linux before 5.9),
 * one close per number. */
ITO_PT_EXPORT void closefrom(int lowfd) {
  ITO_PT_ENTER(closefrom, lowfd);
  if (lowfd < 0) lowfd = 0;
  if (ito__dropin_close_range((unsigned)lowfd, ~0U, 0) == 0) return;
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = lowfd; fd < max; fd++) ito_close((int)fd);
}

/* What _FORTIFY_SOURCE makes of read, recv and recvfrom: the buffer-size
 * check is libc's (it aborts), the call ours. */
ITO_PT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  ITO_PT_ENTER(__read_chk, fd, buf, n, buflen);
  if (n > buflen || !ito__dropin_can_park()) return ito__pt_real.__read_chk(fd, buf, n, buflen);
  return ito_read(fd, buf, n);
}
ITO_PT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
  ITO_PT_ENTER(__recv_chk, fd, buf, n, buflen, flags);
  if (n > buflen || !ito__dropin_can_park())
    return ito__pt_real.__recv_chk(fd, buf, n, buflen, flags);
  return ito_recv(fd, buf, n, flags);
}
ITO_PT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                     struct sockaddr *a, socklen_t *l) {
  ITO_PT_ENTER(__recvfrom_chk, fd, buf, n, buflen, flags, a, l);
  if (n > buflen || !ito__dropin_can_park())
    return ito__pt_real.__recvfrom_chk(fd, buf, n, buflen, flags, a, l);
  return ito_recvfrom(fd, buf, n, flags, a, l);
}

ITO_PT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
  IO_CALL(poll, ito_poll, fds, n, timeout);
}
ITO_PT_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
  ITO_PT_ENTER(__poll_chk, fds, n, timeout, fdslen);
  if (fdslen / sizeof *fds < n || !ito__dropin_can_park())
    return ito__pt_real.__poll_chk(fds, n, timeout, fdslen);
  return ito_poll(fds, n, timeout);
}

/* The program's own event loops and signal waits park (src/io/events.c). */
ITO_PT_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *m) {
  IO_CALL(ppoll, ito_ppoll, fds, n, t, m);
}
ITO_PT_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t,
                              const sigset_t *m, size_t fdslen) {
  ITO_PT_ENTER(__ppoll_chk, fds, n, t, m, fdslen);
  if (!ito__dropin_can_park() || fdslen / sizeof *fds < n) /* libc reports the overflow */
    return ito__pt_real.__ppoll_chk(fds, n, t, m, fdslen);
  return ito_ppoll(fds, n, t, m);
}
ITO_PT_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
  IO_CALL(select, ito_select, nfds, r, w, e, tv);
}
ITO_PT_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
                          const sigset_t *m) {
  IO_CALL(pselect, ito_pselect, nfds, r, w, e, t, m);
}
ITO_PT_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int t) {
  IO_CALL(epoll_wait, ito_epoll_wait, epfd, ev, max, t);
}
ITO_PT_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int t, const sigset_t *m) {
  IO_CALL(epoll_pwait, ito_epoll_pwait, epfd, ev, max, t, m);
}
ITO_PT_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *t,
                               const sigset_t *m) {
  IO_CALL(epoll_pwait2, ito_epoll_pwait2, epfd, ev, max, t, m);
}
/* sigwait waits on through signals' handlers, not through a cancellation */
ITO_PT_EXPORT int sigwait(const sigset_t *set, int *sig) {
  ITO_PT_ENTER(sigwait, set, sig);
  if (!ito__dropin_can_park()) return ito__pt_real.sigwait(set, sig);
  ito__pt_testcancel();
  for (;;) {
    int rc = ito_sigtimedwait(set, NULL, NULL);
    if (rc > 0) {
      *sig = rc;
      return 0;
    }
    if (errno != EINTR) return errno;
    ito__pt_testcancel();
  }
}
ITO_PT_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  IO_CALL(sigwaitinfo, ito_sigwaitinfo, set, info);
}
ITO_PT_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *t) {
  IO_CALL(sigtimedwait, ito_sigtimedwait, set, info, t);
}
