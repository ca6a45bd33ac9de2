/* dup2, dup3, close_range and closefrom replace or close a number that a
 * thread is blocked on. Natively the blocked call keeps the old file (it
 * holds a reference) and ends on that file's data or end of file; under
 * libito-pthread.so a parked thread holds nothing and wakes with EBADF, as
 * after close (docs/io.md, invariant 2). Either is accepted; what must not
 * happen is a thread that stays blocked for ever (the timed joins catch it)
 * or one that reads the new file's data. The number then works for its new
 * file, whatever that file's type, and the runtime's own descriptors
 * survive closefrom(3) and close_range(3, ~0U, 0): threads still wait and
 * wake afterwards. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "dupclose"
#include "../fdtable.h"
#include "dropin.h"

static void sleep_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0 && errno_now() == EINTR) {
  }
}

static void nap_1ms(void) { sleep_ms(1); }

/* One blocked call on fd, run by a thread: a read of one byte, or a write
 * of len bytes. */
struct blocked {
  int fd;
  size_t len; /* 0: read */
  ssize_t k;
  int err;
  char c;
  pthread_mutex_t m;
  pthread_cond_t cv;
  int started;
  pthread_t t;
};

static void *blocked_main(void *arg) {
  struct blocked *b = arg;
  static char buf[200000];
  pthread_mutex_lock(&b->m);
  b->started = 1;
  pthread_cond_signal(&b->cv);
  pthread_mutex_unlock(&b->m);
  b->k = b->len ? write(b->fd, buf, b->len) : read(b->fd, &b->c, 1);
  b->err = errno_now();
  return NULL;
}

/* Starts the call and waits until it waits: in the kernel natively, parked
 * under the preload (fdtable.h). Replacing the number before that would
 * let the call start on the new file. */
static void block(struct blocked *b, int fd, size_t len) {
  memset(b, 0, sizeof *b);
  b->fd = fd;
  b->len = len;
  pthread_mutex_init(&b->m, NULL);
  pthread_cond_init(&b->cv, NULL);
  must("pthread_create", pthread_create(&b->t, NULL, blocked_main, b));
  pthread_mutex_lock(&b->m);
  while (!b->started) pthread_cond_wait(&b->cv, &b->m);
  pthread_mutex_unlock(&b->m);
  if (fdtable_wait_for_waiter(fd, nap_1ms) < 0) FAIL("cannot read /proc/self to see the call wait");
}

/* The call must end within 10 s. */
static void finish(struct blocked *b, const char *what) {
  struct timespec dl;
  deadline_in(CLOCK_REALTIME, 10000, &dl);
  int rc = pthread_timedjoin_np(b->t, NULL, &dl);
  if (rc == ETIMEDOUT) FAIL("%s: the blocked call has not ended after 10 s", what);
  must("pthread_timedjoin_np", rc);
}

/* Reads one byte that must be c. */
static void read_back(int fd, char c, const char *what) {
  char got;
  ssize_t k = read(fd, &got, 1);
  if (k != 1 || got != c)
    FAIL("%s: read gave %zd (%s)", what, k, k < 0 ? strerror(errno_now()) : "");
}

/* A write through a number that must reach the read end rfd. */
static void write_through(int wfd, int rfd, char c, const char *what) {
  if (write(wfd, &c, 1) != 1) FAIL("%s: write: %s", what, strerror(errno_now()));
  read_back(rfd, c, what);
}

static void dup2_reader(void) {
  int a[2], s[2];
  if (pipe(a) || socketpair(AF_UNIX, SOCK_STREAM, 0, s)) FAIL("pipe, socketpair");
  struct blocked b;
  block(&b, a[0], 0);
  if (dup2(s[0], a[0]) != a[0]) FAIL("dup2: %s", strerror(errno_now()));
  /* natively the reader still holds the pipe: this byte ends its read;
   * under the preload nobody does, and the write fails with EPIPE */
  ssize_t k = write(a[1], "x", 1);
  if (k != 1 && !(k < 0 && errno_now() == EPIPE)) FAIL("write: %s", strerror(errno_now()));
  close(a[1]);
  finish(&b, "dup2 onto a read end");
  int ok = (b.k == 1 && b.c == 'x') || (b.k < 0 && b.err == EBADF);
  printf("dup2 onto a read end a thread waits in: the thread got %s\n",
         ok ? "the old file's byte or EBADF" : "something else");
  if (!ok) FAIL("dup2: the blocked read returned %zd (%s, byte %d)", b.k, strerror(b.err), b.c);
  /* the number is the socket now (a pipe's record would not read it) */
  if (write(s[1], "Q", 1) != 1) FAIL("write");
  read_back(a[0], 'Q', "dup2: the number's new file");
  printf("dup2: the number then reads its new file, a socket\n");
  close(a[0]), close(s[0]), close(s[1]);
}

static void dup3_writer(void) {
  int p[2], c[2];
  if (pipe(p) || pipe(c)) FAIL("pipe");
  struct blocked b;
  block(&b, p[1], 200000); /* fills the pipe (64 KiB) and waits for room */
  if (dup3(c[1], p[1], O_CLOEXEC) != p[1]) FAIL("dup3: %s", strerror(errno_now()));
  /* natively the writer finishes into the old pipe as this drains it */
  static char buf[65536];
  size_t drained = 0;
  ssize_t k;
  while ((k = read(p[0], buf, sizeof buf)) > 0) drained += (size_t)k;
  if (k < 0) FAIL("drain: %s", strerror(errno_now()));
  finish(&b, "dup3 onto a write end");
  /* the writer's count is what the reader got: all of it natively, what
   * was written before the wake-up under the preload */
  int ok = b.k > 0 && (size_t)b.k == drained;
  printf("dup3 onto a write end a thread waits in: %s\n",
         ok ? "the writer's count equals what the old pipe delivered" : "counts differ");
  if (!ok)
    FAIL("dup3: the writer returned %zd (%s), the old pipe delivered %zu", b.k,
         b.k < 0 ? strerror(b.err) : "bytes", drained);
  int fdfl = fcntl(p[1], F_GETFD);
  printf("dup3: O_CLOEXEC %s\n", fdfl >= 0 && (fdfl & FD_CLOEXEC) ? "set" : "not set");
  write_through(p[1], c[0], 'C', "dup3: the number's new file");
  printf("dup3: the number then writes to its new file\n");
  close(p[0]), close(p[1]), close(c[0]), close(c[1]);
}

static void range_reader(void) {
  int d[2];
  if (pipe(d)) FAIL("pipe");
  struct blocked b;
  block(&b, d[0], 0);
  unsigned lo = (unsigned)(d[0] < d[1] ? d[0] : d[1]), hi = (unsigned)(d[0] < d[1] ? d[1] : d[0]);
  if (close_range(lo, hi, 0) != 0) FAIL("close_range: %s", strerror(errno_now()));
  finish(&b, "close_range over a read end");
  /* natively: the write end is gone, so end of file */
  int ok = b.k == 0 || (b.k < 0 && b.err == EBADF);
  printf("close_range over a read end a thread waits in: %s\n",
         ok ? "end of file or EBADF" : "something else");
  if (!ok) FAIL("close_range: the blocked read returned %zd", b.k);
  if (fcntl(d[0], F_GETFD) != -1 || fcntl(d[1], F_GETFD) != -1) FAIL("close_range left an fd open");

  int e[2];
  if (pipe(e)) FAIL("pipe");
  lo = (unsigned)(e[0] < e[1] ? e[0] : e[1]), hi = (unsigned)(e[0] < e[1] ? e[1] : e[0]);
  if (close_range(lo, hi, CLOSE_RANGE_CLOEXEC) != 0) FAIL("close_range: %s", strerror(errno_now()));
  int f0 = fcntl(e[0], F_GETFD), f1 = fcntl(e[1], F_GETFD);
  printf("close_range(CLOSE_RANGE_CLOEXEC): %s\n",
         f0 >= 0 && f1 >= 0 && (f0 & f1 & FD_CLOEXEC) ? "both open, close-on-exec" : "wrong");
  write_through(e[1], e[0], 'e', "close_range(CLOSE_RANGE_CLOEXEC)");
  close(e[0]), close(e[1]);
}

/* After closing every number from 3 up: a thread still waits on a new
 * pipe and wakes when main writes. */
static void still_waits(const char *after) {
  int p[2];
  if (pipe(p)) FAIL("pipe");
  struct blocked b;
  block(&b, p[0], 0);
  if (write(p[1], "w", 1) != 1) FAIL("write");
  finish(&b, after);
  printf("after %s: a read waits and gets %s\n", after, b.k == 1 && b.c == 'w' ? "its byte" : "?");
  if (!(b.k == 1 && b.c == 'w')) FAIL("after %s: the read returned %zd", after, b.k);
  close(p[0]), close(p[1]);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  dup2_reader();
  dup3_writer();
  range_reader();
  still_waits("a first wait");
  closefrom(3);
  still_waits("closefrom(3)");
  if (close_range(3, ~0U, 0) != 0) FAIL("close_range: %s", strerror(errno_now()));
  still_waits("close_range(3, ~0U, 0)");
  printf("ok\n");
  return 0;
}
