/* The I/O layer's private header: blocking calls that park the lightweight
 * thread, not its worker. A call is made non-blocking for that call only,
 * and when it would block the thread parks on the fd's record until epoll
 * reports readiness; the layer's epoll instance is a poll source of the
 * core (src/core/poll.h). Design: docs/io.md.
 *
 * Invariants:
 *  1. One record per fd number, never freed (the poller may hold its
 *     address); gen changes whenever the number may come to name another
 *     file (close, dup2 or dup3 onto it, close_range), and a parked thread
 *     or a stale epoll event that finds another gen returns EBADF without
 *     touching the number.
 *  2. seq[d] counts readiness events of direction d; a caller reads it
 *     before its call and parks only if it has not moved, under the
 *     record's lock, so an event between the call and the park is not
 *     lost.
 *  3. Every waiter on a record, and every ito_poll node, is taken off it
 *     under the record's lock; the waiters are woken after the lock is
 *     released.
 *  4. A thread that parks on readiness is counted by the core's poll
 *     source (ito__poll_arrive) before its last check of seq, so that a
 *     poll sleeper exists while it waits.
 *  5. What the runtime could not make is never the program's error: a
 *     call that would park where the layer cannot (no epoll instance, no
 *     room in the poll sleeper's set, an fd the kernel's memory or epoll
 *     watches cannot take: ito__io_setup false, ito__io_park ENOSPC) is
 *     made as libc makes it, blocking the worker, and announced to the
 *     monitor (ito__io_block_begin), which runs an extra worker beside it
 *     at once; its result and errno are libc's. The next call that would
 *     park tries the set-up again, so parking comes back once descriptors
 *     are free; where the set-up succeeded a call pays one load for it.
 *  6. ep >= 0 (ito__io_setup true) only once the poll sleeper's set
 *     watches the instance: a thread parked on it always has a sleeper
 *     that can see its readiness. */
#ifndef ITO_IO_IO_H
#define ITO_IO_IO_H

#include <ito/ito.h>

#include "../core/base.h"
#include "../core/os.h"
#include "../core/wait.h"
#include "../core/signal.h"

#include <poll.h>
#include <sys/types.h>

enum { FD_UNKNOWN = 0, FD_SOCKET, FD_PIPE, FD_OTHER };
enum { RD = 0, WR = 1 };

struct pollnode;

struct fdrec {
  int lock; /* also the lock of both wait queues */
  uint32_t gen;
  int type;        /* FD_*, found with fstat once per generation */
  int registered;  /* in the epoll set (EPOLLET, both directions) */
  int ito_nb;      /* ito set O_NONBLOCK on the file (a listener): the kernel's flag is
                    * then not the program's, and user_nb is the only record of it */
  int user_nb;     /* the program's O_NONBLOCK (its view of the file) */
  unsigned view;   /* the view epoch when user_nb and timeo_ns were learned; 0: never */
  unsigned seq[2]; /* readiness events seen, per direction (invariant 2) */
  void *head[2], *tail[2];
  long long timeo_ns[2];     /* SO_RCVTIMEO, SO_SNDTIMEO; 0: none */
  struct pollnode *polls[2]; /* ito_poll callers watching this fd, per direction */
};

/* ito_poll: one node per watched fd and direction, all pointing at one
 * group; the first event fires the group (fired, by exchange) and wakes
 * its thread, which waits on the group's own queue. Nodes and group live on
 * the waiting thread's stack; every access to them is made under the lock
 * of the record the node hangs on, and the thread unlinks its nodes under
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

#define SYS(...) ito__os.syscall(__VA_ARGS__)

/* ---- records (fdrec.c) ------------------------------------------------------------- */
/* The record of fd (allocating its chunk), or NULL for a number out of
 * range or no memory. */
HIDDEN struct fdrec *ito__io_rec(int fd);
/* The record of fd if its chunk exists (never allocates). */
HIDDEN struct fdrec *ito__io_rec_peek(int fd);
/* The chunk of records holding fd, or NULL (close_range walks them). */
HIDDEN struct fdrec *ito__io_chunk(int fd, int *first_fd);
#define IO_CHUNK 1024
#define IO_MAX_FDS (IO_CHUNK * 4096)
/* fd's type (FD_*), learned once per generation; *gen gets the generation. */
HIDDEN int ito__io_fd_type(struct fdrec *r, int fd, uint32_t *gen);
/* A call would block: did the program make the file non-blocking? Also
 * brings r's timeouts up to date (docs/io.md, "The program's view"). */
HIDDEN bool ito__io_view_nonblocking(struct fdrec *r, int fd, uint32_t gen, int type);
/* The view of some file may have changed: records learn it again. */
HIDDEN void ito__io_view_changed(void);
/* The program's fcntl and ioctl are seen (a drop-in library interposes
 * them): the learned O_NONBLOCK is trusted between changes. */
extern int ito__io_view_tracked HIDDEN;
/* r locked: its number will name another file or none (invariant 1); the
 * waiters and ito_poll groups go into lists[] (woken by wake_lists after
 * the number changed). */
HIDDEN void ito__io_forget_locked(struct fdrec *r, waiter *lists[2]);
/* The same for a record that may be absent, taking its lock. */
HIDDEN void ito__io_forget(struct fdrec *r, waiter *lists[2]);
HIDDEN void ito__io_wake_lists(waiter *lists[2]);
/* r locked: fires every ito_poll group of the list n; returns list with
 * the groups' waiters added. */
HIDDEN waiter *ito__io_fire_polls(struct pollnode *n, waiter *list);

/* ---- the epoll instance and parking (poller.c) ------------------------------------ */
/* Makes the epoll instance and registers the poll source (once: then one
 * load); false while that cannot be done (invariant 5). */
HIDDEN bool ito__io_setup(void);
/* After fork, in the child: its own epoll instance, every record out of
 * it and without waiters (the layer's fork part, poller.c). */
HIDDEN void ito__io_recs_after_fork(void);
/* RWF_NOWAIT works on pipes (probed at setup; ITO_IO_PIPE_NOWAIT=0: no). */
HIDDEN bool ito__io_pipe_nowait(void);
/* r locked, the layer set up: adds fd to the epoll set; 0, ENOTSUP when
 * epoll cannot watch this file, or ENOSPC when the kernel's memory or the
 * epoll watches ran out (invariant 5: a later wait tries again). */
HIDDEN int ito__io_register_locked(struct fdrec *r, int fd);
/* The caller's call would block: park until a readiness event newer than
 * seen (or a close, or the deadline). 0: try again; EBADF: closed;
 * ETIMEDOUT; ENOTSUP: the fd cannot be polled (call libc); ENOSPC: the
 * layer cannot park it now (invariant 5: call libc, announced). */
HIDDEN int ito__io_park(struct fdrec *r, int fd, uint32_t gen, int dir, unsigned seen,
                        const struct timespec *deadline);
/* The caller makes libc's blocking call where the layer cannot park it
 * (invariant 5): its worker counts as blocked at once (the monitor's
 * announced waits, docs/monitor.md) until ito__io_block_end. */
HIDDEN void ito__io_block_begin(void);
HIDDEN void ito__io_block_end(void);
/* A thread waits for readiness outside a record's queue (ito_poll). */
HIDDEN void ito__io_wait_begin(void);
HIDDEN void ito__io_wait_end(void);

/* ---- waits for several fds (poll.c, events.c) --------------------------------------- */
/* ito_poll's work: deadline on CLOCK_MONOTONIC (NULL: none), nowait: do
 * not wait at all. For a caller that may park, with n > 0. */
HIDDEN int ito__io_poll(struct pollfd *fds, nfds_t n, const struct timespec *deadline, bool nowait);
/* Parks until the monotonic deadline (NULL: for ever); 0. */
HIDDEN int ito__io_sleep_until(const struct timespec *deadline);

/* ---- helpers --------------------------------------------------------------------------- */
/* May the caller park (an ito thread, not pinned)? */
HIDDEN bool ito__io_parkable(void);
/* errno through a function of its own: __errno_location is a const
 * function, so within one function the compiler may keep errno's address
 * across a park, after which the thread may run on another OS thread
 * (docs/dropin.md section 5). Every errno access that may follow a park
 * goes through it. */
HIDDEN void ito__io_set_errno(int e);
HIDDEN int ito__io_errno(void);
/* poll(2) as every architecture has it (AArch64 has only ppoll). */
HIDDEN long ito__io_sys_poll(struct pollfd *f, unsigned long n, int ms);

#endif
