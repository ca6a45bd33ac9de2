/* What a drop-in library's fcntl, ioctl, dup, dup2, dup3, close_range and
 * closefrom do besides the call itself, to keep the fd records current
 * (view.c). All return as libc does: the result, or -1 with errno. Design:
 * docs/io.md, "The program's view". */
#ifndef ITO_IO_VIEW_H
#define ITO_IO_VIEW_H

#include "../core/base.h"

/* F_GETFL, with the program's O_NONBLOCK where ito holds the kernel's flag
 * (a listener the runtime made non-blocking for accept). */
HIDDEN int ito__io_getfl(int fd);
/* F_SETFL; there the program's O_NONBLOCK is recorded and the kernel's
 * flag kept. Every record learns O_NONBLOCK and the timeouts again before
 * its next park (the file may have other numbers). */
HIDDEN int ito__io_setfl(int fd, int flags);
/* ioctl(fd, FIONBIO, on), likewise. */
HIDDEN int ito__io_fionbio(int fd, const int *on);
/* dup (cmd 0), fcntl F_DUPFD and F_DUPFD_CLOEXEC (cmd, minfd): the new
 * number's record starts afresh with the old one's O_NONBLOCK view. */
HIDDEN int ito__io_dupfd(int oldfd, int cmd, int minfd);
/* dup2 (dup2 nonzero) and dup3: newfd is closed as by ito_close (threads
 * parked on it wake with EBADF) before it names oldfd's file; EBADF for the
 * runtime's own descriptors. */
HIDDEN int ito__io_dup3(int oldfd, int newfd, int flags, int dup2);
/* close_range: every closed number as by ito_close; the runtime's own
 * descriptors stay open. CLOSE_RANGE_CLOEXEC closes nothing and is passed
 * on as it is. */
HIDDEN int ito__io_close_range(unsigned first, unsigned last, int flags);

#endif
