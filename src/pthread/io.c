/* Blocking I/O through the shim (docs/dropin.md section 7): on an ito
 * thread that may park, the calls are the runtime's ito_* calls, which park
 * the thread instead of blocking its worker; anywhere else, libc's. close
 * always goes through ito_close, so that threads parked on the fd wake with
 * EBADF and the runtime's own descriptors cannot be closed under it. */
#include "shim.h"

#define IO_CALL(name, ito_call, ...)                    \
  do {                                                  \
    SHIM_ENTER(name, __VA_ARGS__);                      \
    if (!ito__pt_can_park()) return shim_real.name(__VA_ARGS__); \
    return ito_call(__VA_ARGS__);                       \
  } while (0)

SHIM_EXPORT ssize_t read(int fd, void *buf, size_t n) { IO_CALL(read, ito_read, fd, buf, n); }
SHIM_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  IO_CALL(write, ito_write, fd, buf, n);
}
SHIM_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  IO_CALL(readv, ito_readv, fd, iov, cnt);
}
SHIM_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  IO_CALL(writev, ito_writev, fd, iov, cnt);
}
SHIM_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
  IO_CALL(recv, ito_recv, fd, buf, n, flags);
}
SHIM_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
  IO_CALL(send, ito_send, fd, buf, n, flags);
}
SHIM_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a,
                             socklen_t *l) {
  IO_CALL(recvfrom, ito_recvfrom, fd, buf, n, flags, a, l);
}
SHIM_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *a,
                           socklen_t l) {
  IO_CALL(sendto, ito_sendto, fd, buf, n, flags, a, l);
}
SHIM_EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags) {
  IO_CALL(recvmsg, ito_recvmsg, fd, m, flags);
}
SHIM_EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
  IO_CALL(sendmsg, ito_sendmsg, fd, m, flags);
}
SHIM_EXPORT int accept(int fd, struct sockaddr *a, socklen_t *l) {
  IO_CALL(accept, ito_accept, fd, a, l);
}
SHIM_EXPORT int accept4(int fd, struct sockaddr *a, socklen_t *l, int flags) {
  IO_CALL(accept4, ito_accept4, fd, a, l, flags);
}
SHIM_EXPORT int connect(int fd, const struct sockaddr *a, socklen_t l) {
  IO_CALL(connect, ito_connect, fd, a, l);
}

SHIM_EXPORT int close(int fd) {
  SHIM_ENTER(close, fd);
  return ito_close(fd);
}

/* What _FORTIFY_SOURCE makes of read, recv and recvfrom: the buffer-size
 * check is libc's (it aborts), the call ours. */
SHIM_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  SHIM_ENTER(__read_chk, fd, buf, n, buflen);
  if (n > buflen || !ito__pt_can_park()) return shim_real.__read_chk(fd, buf, n, buflen);
  return ito_read(fd, buf, n);
}
SHIM_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
  SHIM_ENTER(__recv_chk, fd, buf, n, buflen, flags);
  if (n > buflen || !ito__pt_can_park()) return shim_real.__recv_chk(fd, buf, n, buflen, flags);
  return ito_recv(fd, buf, n, flags);
}
SHIM_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                                   struct sockaddr *a, socklen_t *l) {
  SHIM_ENTER(__recvfrom_chk, fd, buf, n, buflen, flags, a, l);
  if (n > buflen || !ito__pt_can_park())
    return shim_real.__recvfrom_chk(fd, buf, n, buflen, flags, a, l);
  return ito_recvfrom(fd, buf, n, flags, a, l);
}

SHIM_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
  IO_CALL(poll, ito_poll, fds, n, timeout);
}
SHIM_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
  SHIM_ENTER(__poll_chk, fds, n, timeout, fdslen);
  if (fdslen / sizeof *fds < n || !ito__pt_can_park())
    return shim_real.__poll_chk(fds, n, timeout, fdslen);
  return ito_poll(fds, n, timeout);
}
