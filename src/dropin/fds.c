/* The program's view of its fds, for a library that interposes fcntl,
 * ioctl, dup, dup2, dup3, close_range and closefrom (src/io/view.h). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../io/view.h"

int ito__dropin_getfl(int fd) { return ito__io_getfl(fd); }
int ito__dropin_setfl(int fd, int flags) { return ito__io_setfl(fd, flags); }
int ito__dropin_fionbio(int fd, const int *on) { return ito__io_fionbio(fd, on); }
int ito__dropin_dupfd(int oldfd, int cmd, int minfd) { return ito__io_dupfd(oldfd, cmd, minfd); }
int ito__dropin_dup3(int oldfd, int newfd, int flags, int dup2) {
  return ito__io_dup3(oldfd, newfd, flags, dup2);
}
int ito__dropin_close_range(unsigned first, unsigned last, int flags) {
  return ito__io_close_range(first, last, flags);
}
