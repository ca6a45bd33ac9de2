/* fd records (src/io/io.h, src/io/view.h), white box, without a runtime:
 * record lookup and bounds, the type learned once per generation, forget
 * (a new generation), the program's view (O_NONBLOCK, SO_RCVTIMEO) learned
 * and relearned after a change, the view of a listener ito made
 * non-blocking, dup2 and close_range around the runtime's own
 * descriptors, and that list changed from two threads at once (its
 * callers hold locks of different modules). */
#define _GNU_SOURCE
#include "../../src/io/io.h"
#include "../../src/io/view.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check.h"

static void lookup(void) {
  CHECK(ito__io_rec(-1) == NULL);
  CHECK(ito__io_rec(IO_MAX_FDS) == NULL);
  CHECK(ito__io_rec_peek(IO_MAX_FDS - 1) == NULL); /* its chunk was never made */
  struct fdrec *r = ito__io_rec(5);
  CHECK(r && ito__io_rec(5) == r && ito__io_rec_peek(5) == r);
  CHECK(ito__io_rec(6) == r + 1);
  puts("fdrec: lookup and bounds: OK");
}

static void types(void) {
  int p[2], s[2];
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
  int f = open("/proc/self/stat", O_RDONLY);
  CHECK(f >= 0);
  uint32_t g;
  CHECK_EQ(ito__io_fd_type(ito__io_rec(p[0]), p[0], &g), FD_PIPE);
  CHECK_EQ(ito__io_fd_type(ito__io_rec(s[0]), s[0], &g), FD_SOCKET);
  CHECK_EQ(ito__io_fd_type(ito__io_rec(f), f, &g), FD_OTHER);
  /* forget: a new generation with nothing known; the type is learned anew */
  struct fdrec *r = ito__io_rec(p[0]);
  uint32_t g0;
  ito__io_fd_type(r, p[0], &g0);
  waiter *lists[2] = {NULL, NULL};
  ito__io_forget(r, lists);
  CHECK(!lists[0] && !lists[1]);
  CHECK_EQ(r->type, FD_UNKNOWN);
  CHECK_EQ(ito__io_fd_type(r, p[0], &g), FD_PIPE);
  CHECK_EQ(g, g0 + 1);
  close(p[0]);
  close(p[1]);
  close(s[0]);
  close(s[1]);
  close(f);
  puts("fdrec: types per generation, forget: OK");
}

static void view(void) {
  int s[2];
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
  struct fdrec *r = ito__io_rec(s[0]);
  uint32_t g;
  ito__io_fd_type(r, s[0], &g);
  CHECK(!ito__io_view_nonblocking(r, s[0], g, FD_SOCKET));
  /* a change the runtime does not see: natively, O_NONBLOCK is asked for
   * at every wait */
  CHECK_EQ(fcntl(s[0], F_SETFL, O_NONBLOCK), 0);
  CHECK(ito__io_view_nonblocking(r, s[0], g, FD_SOCKET));
  CHECK_EQ(fcntl(s[0], F_SETFL, 0), 0);
  CHECK(!ito__io_view_nonblocking(r, s[0], g, FD_SOCKET));
  /* a timeout set through the runtime is learned at the next wait */
  struct timeval tv = {0, 250000};
  CHECK_EQ(ito_setsockopt(s[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  CHECK(!ito__io_view_nonblocking(r, s[0], g, FD_SOCKET));
  /* (the kernel keeps it in jiffies: a few ms more) */
  CHECK(r->timeo_ns[RD] >= 250000000LL && r->timeo_ns[RD] < 270000000LL);
  CHECK_EQ(r->timeo_ns[WR], 0);
  /* a listener ito made non-blocking: the program's flag is user_nb */
  STORE_RLX(&r->ito_nb, 1);
  CHECK_EQ(fcntl(s[0], F_SETFL, O_NONBLOCK), 0);
  STORE_RLX(&r->user_nb, 0);
  CHECK_EQ(ito__io_getfl(s[0]) & O_NONBLOCK, 0);
  CHECK_EQ(ito__io_setfl(s[0], O_NONBLOCK), 0);
  CHECK_EQ(r->user_nb, 1);
  CHECK(fcntl(s[0], F_GETFL) & O_NONBLOCK); /* the kernel's flag stays set */
  CHECK(ito__io_getfl(s[0]) & O_NONBLOCK);
  int off = 0;
  CHECK_EQ(ito__io_fionbio(s[0], &off), 0);
  CHECK_EQ(r->user_nb, 0);
  CHECK(fcntl(s[0], F_GETFL) & O_NONBLOCK);
  /* dup copies the view to the new number */
  int d = ito__io_dupfd(s[0], 0, 0);
  CHECK(d >= 0);
  struct fdrec *rd = ito__io_rec(d);
  CHECK(rd->ito_nb == 1 && rd->user_nb == 0);
  close(d);
  waiter *lists[2] = {NULL, NULL};
  ito__io_forget(r, lists);
  close(s[0]);
  close(s[1]);
  puts("fdrec: the program's view: OK");
}

static void own_descriptors(void) {
  int keep[2], lose[2];
  CHECK_EQ(pipe(lose), 0);
  CHECK_EQ(pipe(keep), 0);
  int own = ito__own_fd_take(keep[0]); /* moved to 1024 or above, the runtime's */
  CHECK(own >= 1024 && ito__own_fd(own));
  CHECK_EQ(fcntl(keep[0], F_GETFD), -1);
  /* dup2 onto it is refused */
  CHECK_EQ(ito__io_dup3(lose[0], own, 0, 1), -1);
  CHECK_EQ(errno, EBADF);
  CHECK(fcntl(own, F_GETFD) >= 0);
  /* close_range over it closes the rest */
  struct fdrec *r = ito__io_rec(lose[1]);
  uint32_t g0 = r->gen;
  unsigned lo = (unsigned)(lose[0] < keep[1] ? lose[0] : keep[1]);
  CHECK_EQ(ito__io_close_range(lo, (unsigned)own + 10, 0), 0);
  CHECK(fcntl(own, F_GETFD) >= 0);
  CHECK_EQ(fcntl(lose[0], F_GETFD), -1);
  CHECK_EQ(fcntl(lose[1], F_GETFD), -1);
  CHECK_EQ(fcntl(keep[1], F_GETFD), -1);
  CHECK_EQ(r->gen, g0 + 1);
  puts("fdrec: dup2 and close_range leave the runtime's descriptors: OK");
}

/* Two threads add and drop numbers of their own (never opened: the list
 * only records them); each sees its number listed after its add. */
static int own_lost;
static void *own_churn(void *arg) {
  int fd = (int)(intptr_t)arg;
  for (int i = 0; i < 200000; i++) {
    ito__own_fd_add(fd);
    if (!ito__own_fd(fd)) __atomic_add_fetch(&own_lost, 1, __ATOMIC_RELAXED);
    ito__own_fd_drop(fd);
  }
  return NULL;
}

static void own_concurrent(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    CHECK_EQ(pthread_create(&t[i], NULL, own_churn, (void *)(intptr_t)(900000 + i)), 0);
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  CHECK_EQ(own_lost, 0);
  CHECK(!ito__own_fd(900000) && !ito__own_fd(900001));
  puts("fdrec: the runtime's descriptors added and dropped from two threads at once: OK");
}

int main(void) {
  lookup();
  types();
  view();
  own_descriptors();
  own_concurrent();
  puts("test_fdrec: OK");
  return 0;
}
