/* What the program set on a file decides how a call that would block ends,
 * also when it sets it after the file was first waited on (under the
 * preload the runtime keeps a view of each file, kept current by the
 * shim's fcntl, ioctl and setsockopt):
 *
 * - O_NONBLOCK from pipe2, SOCK_NONBLOCK (socketpair and accept4),
 *   fcntl(F_SETFL) and ioctl(FIONBIO): a read, recv, write or accept that
 *   would block fails with EAGAIN, never waits; cleared again, the call
 *   waits for data;
 * - a listening socket the runtime made non-blocking for accept still reads
 *   as blocking through F_GETFL, on the number and on a dup of it;
 * - SO_RCVTIMEO and SO_SNDTIMEO changed after a first wait: the next wait
 *   times out with EAGAIN (and, changed back to none, waits for data).
 *
 * A wait that should have failed at once is caught without a hang: a
 * helper writes after 30 s, and the test fails on the data it then reads. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "fdview"
#include "../fdtable.h"
#include "dropin.h"

static void sleep_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0 && errno_now() == EINTR) {
  }
}

/* A thread that waits in a read on fd until data comes (so the runtime
 * has seen the fd wait, and learned its view as "blocking"); main writes
 * the byte once it is told the reader is about to read. */
struct first_wait {
  int rfd, wfd;
  pthread_mutex_t m;
  pthread_cond_t c;
  int ready;
};

static void *wait_once(void *arg) {
  struct first_wait *f = arg;
  pthread_mutex_lock(&f->m);
  f->ready = 1;
  pthread_cond_signal(&f->c);
  pthread_mutex_unlock(&f->m);
  char c;
  if (read(f->rfd, &c, 1) != 1 || c != 'w') FAIL("the first wait did not read its byte");
  return NULL;
}

static void nap_1ms(void) { sleep_ms(1); }

static void first_wait(int rfd, int wfd) {
  struct first_wait f = {rfd, wfd, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, wait_once, &f));
  pthread_mutex_lock(&f.m);
  while (!f.ready) pthread_cond_wait(&f.c, &f.m);
  pthread_mutex_unlock(&f.m);
  /* until it waits: in the kernel natively, parked under the preload */
  if (fdtable_wait_for_waiter(rfd, nap_1ms) < 0)
    FAIL("cannot read /proc/self to see the read wait");
  if (write(wfd, "w", 1) != 1) FAIL("write");
  must("pthread_join", pthread_join(t, NULL));
}

/* The watchdog: unless cancelled within 30 s (more than a busy machine
 * delays a call), acts on fd (writes a byte,
 * drains, connects), so that a call that waits instead of failing at once
 * ends, and is caught by its result. */
struct dog {
  int fd;
  void (*act)(int fd);
  int cancel;
  pthread_t t;
};
static void *dog_main(void *arg) {
  struct dog *d = arg;
  for (int i = 0; i < 3000 && !__atomic_load_n(&d->cancel, __ATOMIC_ACQUIRE); i++) sleep_ms(10);
  if (!__atomic_load_n(&d->cancel, __ATOMIC_ACQUIRE)) d->act(d->fd);
  return NULL;
}
static void dog_start(struct dog *d, int fd, void (*act)(int)) {
  d->fd = fd;
  d->act = act;
  d->cancel = 0;
  must("pthread_create", pthread_create(&d->t, NULL, dog_main, d));
}
static void dog_stop(struct dog *d) {
  __atomic_store_n(&d->cancel, 1, __ATOMIC_RELEASE);
  must("pthread_join", pthread_join(d->t, NULL));
}

static void put_byte(int fd) {
  if (write(fd, "!", 1) != 1) FAIL("write");
}
static void drain(int fd) { /* makes room for a waiting writer: all that is there (an
                             * AF_UNIX writer is woken only below a quarter of its buffer) */
  static char buf[1 << 16];
  if (read(fd, buf, sizeof buf) <= 0) FAIL("drain");
  while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}
static struct sockaddr_in addr; /* the listener's */
static int conns[8], nconns;
static void connect_one(int unused) {
  (void)unused;
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&addr, sizeof addr)) FAIL("connect");
  conns[nconns++] = c;
}

/* A read that must fail with EAGAIN at once. */
static void expect_eagain(const char *what, int rfd, int wfd, int use_recv) {
  struct dog d;
  dog_start(&d, wfd, put_byte);
  char c;
  ssize_t k = use_recv ? recv(rfd, &c, 1, 0) : read(rfd, &c, 1);
  int e = errno_now();
  dog_stop(&d);
  printf("%s: %s\n", what, io_result(k, e));
  if (!(k < 0 && e == EAGAIN)) FAIL("%s: expected EAGAIN, got %s", what, io_result(k, e));
}

/* A call that must wait: the helper acts after 30 ms. */
struct later {
  int fd;
  void (*act)(int);
};
static void *later_main(void *arg) {
  struct later *l = arg;
  sleep_ms(30);
  l->act(l->fd);
  return NULL;
}
static void put_d(int fd) {
  if (write(fd, "d", 1) != 1) FAIL("late write");
}
static void expect_wait(const char *what, int rfd, int wfd) {
  struct later l = {wfd, put_d};
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, later_main, &l));
  char c;
  ssize_t k = read(rfd, &c, 1);
  int e = errno_now();
  must("pthread_join", pthread_join(t, NULL));
  printf("%s: %s\n", what, io_result(k, e));
  if (k != 1 || c != 'd') FAIL("%s: expected the late byte, got %s", what, io_result(k, e));
}

static const char *nb(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return "F_GETFL failed";
  return fl & O_NONBLOCK ? "O_NONBLOCK" : "blocking";
}

/* Writes to a non-blocking stream until a write fails: EAGAIN. */
static void fill(const char *what, int fd) {
  static char buf[4096];
  ssize_t k;
  long n = 0;
  while ((k = write(fd, buf, sizeof buf)) > 0) n += k;
  int e = errno_now();
  printf("%s: writes until %s\n", what, io_result(k, e));
  if (!(k < 0 && e == EAGAIN) || n == 0)
    FAIL("%s: filling gave %s after %ld bytes", what, io_result(k, e), n);
}

static void pipes(void) {
  int p[2];
  if (pipe2(p, O_NONBLOCK)) FAIL("pipe2");
  expect_eagain("pipe2(O_NONBLOCK): read", p[0], p[1], 0);
  fill("pipe2(O_NONBLOCK): write", p[1]);
  close(p[0]), close(p[1]);

  /* blocking, waited on, then O_NONBLOCK by fcntl, then cleared */
  if (pipe(p)) FAIL("pipe");
  first_wait(p[0], p[1]);
  int fl = fcntl(p[0], F_GETFL);
  if (fcntl(p[0], F_SETFL, fl | O_NONBLOCK)) FAIL("F_SETFL");
  printf("pipe after F_SETFL O_NONBLOCK: F_GETFL says %s\n", nb(p[0]));
  expect_eagain("pipe after F_SETFL O_NONBLOCK: read", p[0], p[1], 0);
  if (fcntl(p[0], F_SETFL, fl)) FAIL("F_SETFL");
  printf("pipe after F_SETFL without it: F_GETFL says %s\n", nb(p[0]));
  expect_wait("pipe after F_SETFL without it: read", p[0], p[1]);

  /* the flag belongs to the file: set through a dup, seen through the first number */
  int d = fcntl(p[0], F_DUPFD_CLOEXEC, 10);
  if (d < 10) FAIL("F_DUPFD_CLOEXEC");
  if (fcntl(d, F_SETFL, fl | O_NONBLOCK)) FAIL("F_SETFL");
  expect_eagain("pipe with O_NONBLOCK set through a dup: read", p[0], p[1], 0);
  close(d);
  close(p[0]), close(p[1]);
}

static char big[1 << 20];
struct bigw {
  int fd;
  ssize_t k;
};
static void *big_write(void *arg) {
  struct bigw *w = arg;
  w->k = write(w->fd, big, sizeof big);
  return NULL;
}

static void sockets(void) {
  int s[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s)) FAIL("socketpair");
  expect_eagain("socketpair(SOCK_NONBLOCK): recv", s[0], s[1], 1);
  fill("socketpair(SOCK_NONBLOCK): write", s[0]);
  close(s[0]), close(s[1]);

  /* FIONBIO after a first wait, then off again */
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, s)) FAIL("socketpair");
  first_wait(s[0], s[1]);
  int on = 1;
  if (ioctl(s[0], FIONBIO, &on)) FAIL("FIONBIO");
  printf("socket after FIONBIO 1: F_GETFL says %s\n", nb(s[0]));
  expect_eagain("socket after FIONBIO 1: recv", s[0], s[1], 1);
  on = 0;
  if (ioctl(s[0], FIONBIO, &on)) FAIL("FIONBIO");
  expect_wait("socket after FIONBIO 0: read", s[0], s[1]);

  /* SO_RCVTIMEO set after a first wait, then removed */
  struct timeval tv = {0, 20000}, none = {0, 0};
  if (setsockopt(s[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv)) FAIL("setsockopt");
  expect_eagain("socket with SO_RCVTIMEO set after a wait: read", s[0], s[1], 0);
  if (setsockopt(s[0], SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none)) FAIL("setsockopt");
  expect_wait("socket with SO_RCVTIMEO removed: read", s[0], s[1]);

  /* SO_SNDTIMEO set after a first wait for room: s[0] waits once (1 MiB
   * against a peer that drains late), then gets a timeout, is filled, and
   * a write must fail with EAGAIN; removed, a write waits for room */
  struct bigw w = {s[0], -1};
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, big_write, &w));
  sleep_ms(30); /* the writer has most likely filled the socket and waits */
  for (size_t left = sizeof big; left > 0;) {
    static char sink[1 << 16];
    ssize_t r = read(s[1], sink, sizeof sink);
    if (r <= 0) FAIL("read");
    left -= (size_t)r < left ? (size_t)r : left;
  }
  must("pthread_join", pthread_join(t, NULL));
  if (w.k != (ssize_t)sizeof big) FAIL("a write that waits for room returned %zd", w.k);
  if (setsockopt(s[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv)) FAIL("setsockopt");
  while (send(s[0], big, 4096, MSG_DONTWAIT) > 0) {
  }
  struct dog d;
  dog_start(&d, s[1], drain);
  ssize_t k = write(s[0], big, 4096);
  int e = errno_now();
  dog_stop(&d);
  printf("socket with SO_SNDTIMEO set after a wait, full: write %s\n", io_result(k, e));
  if (!(k < 0 && e == EAGAIN)) FAIL("a write past SO_SNDTIMEO gave %s", io_result(k, e));
  if (setsockopt(s[0], SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none)) FAIL("setsockopt");
  struct later l = {s[1], drain};
  must("pthread_create", pthread_create(&t, NULL, later_main, &l));
  k = write(s[0], big, 4096);
  e = errno_now();
  must("pthread_join", pthread_join(t, NULL));
  printf("socket with SO_SNDTIMEO removed, full: write %s\n", io_result(k, e));
  if (k != 4096) FAIL("a write that waits for room gave %s", io_result(k, e));
  close(s[0]), close(s[1]);
}

/* accept that waits, then the views of the listener */
struct acc {
  int l, flags, fd;
};
static void *accept_main(void *arg) {
  struct acc *a = arg;
  a->fd = accept4(a->l, NULL, NULL, a->flags);
  return NULL;
}
static int accept_late(int l, int flags) { /* an accept that waits for a connect 30 ms later */
  struct acc a = {l, flags, -1};
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, accept_main, &a));
  sleep_ms(30);
  connect_one(0);
  must("pthread_join", pthread_join(t, NULL));
  if (a.fd < 0) FAIL("accept");
  return a.fd;
}

static void listener(void) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0) FAIL("socket");
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof addr;
  if (bind(l, (struct sockaddr *)&addr, sizeof addr) || listen(l, 16) ||
      getsockname(l, (struct sockaddr *)&addr, &al))
    FAIL("bind, listen");
  int fl = fcntl(l, F_GETFL);
  int c = accept_late(l, 0); /* under the preload the listener is now O_NONBLOCK in the kernel */
  close(c);
  printf("listener after an accept that waited: F_GETFL says %s\n", nb(l));
  int d = dup(l);
  if (d < 0) FAIL("dup");
  printf("a dup of it: F_GETFL says %s\n", nb(d));
  c = accept_late(d, 0); /* must wait, not fail with EAGAIN */
  close(c);
  close(d);

  /* the program's own O_NONBLOCK on the listener: EAGAIN; cleared: waits */
  if (fcntl(l, F_SETFL, fl | O_NONBLOCK)) FAIL("F_SETFL");
  printf("listener after F_SETFL O_NONBLOCK: F_GETFL says %s\n", nb(l));
  struct dog dg;
  dog_start(&dg, 0, connect_one);
  c = accept(l, NULL, NULL);
  int e = errno_now();
  dog_stop(&dg);
  printf("listener after F_SETFL O_NONBLOCK: accept %s\n",
         c < 0 ? io_result(-1, e) : "a connection");
  if (!(c < 0 && e == EAGAIN))
    FAIL("accept on a non-blocking listener gave %s", c < 0 ? io_result(-1, e) : "a connection");
  if (fcntl(l, F_SETFL, fl)) FAIL("F_SETFL");
  printf("listener after F_SETFL without it: F_GETFL says %s\n", nb(l));
  c = accept_late(l, SOCK_NONBLOCK); /* waits again; the connection is non-blocking */
  printf("accept4(SOCK_NONBLOCK) after a wait: F_GETFL of the connection says %s\n", nb(c));
  dog_start(&dg, conns[nconns - 1], put_byte);
  char ch;
  ssize_t k = recv(c, &ch, 1, 0);
  e = errno_now();
  dog_stop(&dg);
  printf("accept4(SOCK_NONBLOCK): recv %s\n", io_result(k, e));
  if (!(k < 0 && e == EAGAIN))
    FAIL("recv on an accept4(SOCK_NONBLOCK) socket gave %s", io_result(k, e));
  close(c);
  close(l);
  for (int i = 0; i < nconns; i++) close(conns[i]);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  pipes();
  sockets();
  listener();
  printf("ok\n");
  return 0;
}
