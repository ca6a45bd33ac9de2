/* A peer that closes, on AF_UNIX socketpairs and loopback TCP connections,
 * 12 connections at once (6 of each, TCP on 127.0.0.1 through a listener on
 * port 0), each with two threads of its own, so that under libito-pthread.so
 * the blocked threads park while the others run. SIGPIPE is ignored.
 *
 * 1. The writer closes mid-transfer: it sends a pattern in pieces of odd
 *    sizes, with pauses, and closes; on half the connections at once after
 *    its last piece (the reader still behind), on the other half once the
 *    reader has taken everything and waits for more (its read ends by the
 *    close). The reader gets every byte, in order, then 0 (end of file),
 *    and 0 again; a write to the closed peer then fails with EPIPE: at once
 *    on a socketpair; on TCP the first write may still be accepted (the
 *    peer answers it with a reset), and the failure that follows within
 *    1 s must be EPIPE.
 * 2. A writer blocked on a full socket (filled until EAGAIN with
 *    MSG_DONTWAIT, then blocking writes) when the peer closes without
 *    reading: on TCP the peer's close resets the connection (it had unread
 *    data) and the blocked write fails with ECONNRESET; on a socketpair
 *    with ECONNRESET natively and EPIPE under the preload (Linux's af_unix
 *    gives a write that starts after the close EPIPE: see full_writer;
 *    either is accepted);
 *    the next write fails with EPIPE.
 * 3. TCP only: the peer sets SO_LINGER {1, 0} and closes, after the reader
 *    has taken its data and waits for more: the blocked read fails with
 *    ECONNRESET, the next read returns 0, and a write fails with EPIPE.
 *
 * Every check fails the program with a message naming the connection and
 * what it got; alarm(60) ends a run in which a call never returns. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "peerclose"
#include "dropin.h"
#include "loopback.h"

#define NCONN 12 /* in 1 and 2, even: socketpair, odd: TCP; in 3, all TCP */

static void sleep_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0 && errno_now() == EINTR) {
  }
}

/* Byte j of connection i's data. */
static unsigned char pat(int i, size_t j) {
  return (unsigned char)(j * 131u + (j >> 11) + (size_t)i * 17u);
}

struct conn {
  int i;
  int tcp;
  int fd[2];    /* fd[0]: the reader's (or the blocked writer's), fd[1]: the peer's */
  size_t total; /* what the peer sends */
  size_t got;   /* what the reader has taken (atomic) */
  int wait_for_reader;
  int closed; /* the peer has closed (atomic) */
  pthread_t t[2];
};

static const char *kind(const struct conn *c) { return c->tcp ? "TCP" : "socketpair"; }
static struct conn conns[NCONN];

/* Waits until the reader has taken all c->total bytes (it then calls read
 * again and blocks), and a little more. */
static void wait_taken(struct conn *c) {
  while (__atomic_load_n(&c->got, __ATOMIC_ACQUIRE) < c->total) sleep_ms(1);
  sleep_ms(20);
}

/* Reads exactly c->total bytes of the pattern; fails on anything else. */
static void read_pattern(struct conn *c, const char *what) {
  unsigned char buf[1000 + 797 * NCONN];
  size_t want = 1000 + 797 * (size_t)c->i; /* odd read sizes, one per connection */
  while (c->got < c->total) {
    size_t n = c->total - c->got < want ? c->total - c->got : want;
    ssize_t k = read(c->fd[0], buf, n);
    int e = errno_now();
    if (k <= 0)
      FAIL("%s, connection %d (%s): after %zu of %zu bytes, read gave %s", what, c->i, kind(c),
           c->got, c->total, k == 0 ? "0 (end of file)" : io_result(k, e));
    for (ssize_t j = 0; j < k; j++)
      if (buf[j] != pat(c->i, c->got + (size_t)j))
        FAIL("%s, connection %d (%s): byte %zu is %u, expected %u", what, c->i, kind(c),
             c->got + (size_t)j, buf[j], pat(c->i, c->got + (size_t)j));
    __atomic_store_n(&c->got, c->got + (size_t)k, __ATOMIC_RELEASE);
  }
}

/* ---- 1. the writer closes mid-transfer ---------------------------------------------------- */

static void *close_writer(void *arg) {
  struct conn *c = arg;
  static const size_t sizes[] = {1, 7, 509, 4093, 8191, 30011, 3, 65537, 127};
  static unsigned char bufs[NCONN][65537];
  unsigned char *buf = bufs[c->i];
  size_t sent = 0;
  for (unsigned k = 0; sent < c->total; k++) {
    size_t n = sizes[k % (sizeof sizes / sizeof *sizes)];
    if (n > c->total - sent) n = c->total - sent;
    for (size_t j = 0; j < n; j++) buf[j] = pat(c->i, sent + j);
    ssize_t w = write(c->fd[1], buf, n);
    if (w <= 0)
      FAIL("close mid-transfer, connection %d (%s): the writer's write gave %s", c->i, kind(c),
           io_result(w, errno_now()));
    sent += (size_t)w;
    if (k % 4 == 3) sleep_ms(1);
  }
  if (c->wait_for_reader) wait_taken(c);
  if (close(c->fd[1])) FAIL("close: %s", strerror(errno_now()));
  __atomic_store_n(&c->closed, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void *eof_reader(void *arg) {
  struct conn *c = arg;
  static const char *what = "close mid-transfer";
  read_pattern(c, what);
  char b;
  for (int r = 0; r < 2; r++) {
    ssize_t k = read(c->fd[0], &b, 1);
    if (k != 0)
      FAIL("%s, connection %d (%s): after every byte, read %d gave %s, expected 0 (end of file)",
           what, c->i, kind(c), r + 1, io_result(k, errno_now()));
  }
  while (!__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE)) sleep_ms(1); /* its close has returned */
  int accepted = 0;
  for (;;) {
    ssize_t k = write(c->fd[0], "x", 1);
    int e = errno_now();
    if (k < 0 && e == EPIPE) break;
    if (k == 1 && c->tcp && accepted < 100) { /* TCP: until the reset has come back */
      accepted++;
      sleep_ms(10);
      continue;
    }
    FAIL(
        "%s, connection %d (%s): write to the closed peer gave %s after %d accepted writes, "
        "expected EPIPE",
        what, c->i, kind(c), io_result(k, e), accepted);
  }
  if (!c->tcp && accepted)
    FAIL("%s, connection %d (socketpair): a write to the closed peer was accepted", what, c->i);
  return NULL;
}

static void close_mid_transfer(void) {
  for (int i = 0; i < NCONN; i++) {
    struct conn *c = &conns[i];
    memset(c, 0, sizeof *c);
    c->i = i;
    c->total = 200000 + 4099 * (size_t)i;
    c->tcp = i % 2;
    c->wait_for_reader = (i / 2) % 2;
    pair(c->tcp, c->fd);
  }
  for (int i = 0; i < NCONN; i++) {
    must("pthread_create", pthread_create(&conns[i].t[0], NULL, eof_reader, &conns[i]));
    must("pthread_create", pthread_create(&conns[i].t[1], NULL, close_writer, &conns[i]));
  }
  for (int i = 0; i < NCONN; i++) {
    must("pthread_join", pthread_join(conns[i].t[0], NULL));
    must("pthread_join", pthread_join(conns[i].t[1], NULL));
    close(conns[i].fd[0]);
  }
  printf("close mid-transfer: %d socketpairs, %d TCP connections: every byte, then 0, then 0\n",
         NCONN / 2, NCONN / 2);
  printf("close mid-transfer: a write to the closed peer: EPIPE (TCP after at most the reset)\n");
}

/* ---- 2. a writer blocked on a full socket when the peer closes ----------------------------- */

static int full[NCONN]; /* the writer has filled its socket (atomic) */

static void *full_writer(void *arg) {
  struct conn *c = arg;
  static char buf[4096];
  long n = 0;
  ssize_t k;
  while ((k = send(c->fd[0], buf, sizeof buf, MSG_DONTWAIT)) > 0) n += k;
  if (!(k < 0 && errno_now() == EAGAIN) || n == 0)
    FAIL("blocked writer, connection %d (%s): filling with MSG_DONTWAIT gave %s after %ld bytes",
         c->i, kind(c), io_result(k, errno_now()), n);
  __atomic_store_n(&full[c->i], 1, __ATOMIC_RELEASE);
  /* blocking writes until one fails (one may still find room) */
  int e = 0, accepted = 0;
  while ((k = write(c->fd[0], buf, sizeof buf)) > 0) accepted++;
  e = errno_now();
  /* TCP: the reset. A socketpair: the peer's close sets ECONNRESET on this
   * end (it left data unread) and shuts it for writing; a write that was
   * already waiting in the kernel (natively) returns the ECONNRESET, one
   * that starts after the close (the drop-in's retry after its wake-up, or
   * natively a close that came first) finds the shutdown first: EPIPE */
  if (!(k < 0 && (e == ECONNRESET || (!c->tcp && e == EPIPE))))
    FAIL(
        "blocked writer, connection %d (%s): the write the peer's close ended gave %s after %d "
        "accepted writes, expected %s",
        c->i, kind(c), io_result(k, e), accepted, c->tcp ? "ECONNRESET" : "EPIPE or ECONNRESET");
  k = write(c->fd[0], buf, 1);
  e = errno_now();
  if (!(k < 0 && e == EPIPE))
    FAIL("blocked writer, connection %d (%s): the next write gave %s, expected EPIPE", c->i,
         kind(c), io_result(k, e));
  return NULL;
}

static void *full_closer(void *arg) {
  struct conn *c = arg;
  while (!__atomic_load_n(&full[c->i], __ATOMIC_ACQUIRE)) sleep_ms(1);
  /* TCP: what the writer sent has reached this end, so that the close
   * finds it unread and resets the connection at once; a close that found
   * nothing yet (a loaded machine may hold the loopback's packets back)
   * would end it with a FIN, and the data arriving later would meet the
   * writer in CLOSE_WAIT, which the kernel reports as EPIPE */
  int unread = 0;
  for (int waited = 0; c->tcp && waited < 30000; waited++) {
    if (ioctl(c->fd[1], FIONREAD, &unread) == 0 && unread > 0) break;
    sleep_ms(1);
  }
  if (c->tcp && unread <= 0)
    FAIL("blocked writer, connection %d (TCP): nothing arrived in 30 s", c->i);
  sleep_ms(30); /* the writer most likely waits for room by now */
  if (close(c->fd[1])) FAIL("close: %s", strerror(errno_now()));
  return NULL;
}

static void blocked_writer(void) {
  for (int i = 0; i < NCONN; i++) {
    struct conn *c = &conns[i];
    memset(c, 0, sizeof *c);
    c->i = i;
    c->tcp = i % 2;
    pair(c->tcp, c->fd);
  }
  for (int i = 0; i < NCONN; i++) {
    must("pthread_create", pthread_create(&conns[i].t[0], NULL, full_writer, &conns[i]));
    must("pthread_create", pthread_create(&conns[i].t[1], NULL, full_closer, &conns[i]));
  }
  for (int i = 0; i < NCONN; i++) {
    must("pthread_join", pthread_join(conns[i].t[0], NULL));
    must("pthread_join", pthread_join(conns[i].t[1], NULL));
    close(conns[i].fd[0]);
  }
  printf(
      "blocked writer, the peer closes unread: socketpair EPIPE or ECONNRESET, TCP ECONNRESET; "
      "then EPIPE\n");
}

/* ---- 3. SO_LINGER {1, 0}: a reset --------------------------------------------------------- */

static void *reset_sender(void *arg) {
  struct conn *c = arg;
  static unsigned char buf[NCONN][20000];
  for (size_t j = 0; j < c->total; j++) buf[c->i][j] = pat(c->i, j);
  if (write(c->fd[1], buf[c->i], c->total) != (ssize_t)c->total)
    FAIL("reset, connection %d: the sender's write: %s", c->i, strerror(errno_now()));
  wait_taken(c);
  struct linger lg = {1, 0};
  if (setsockopt(c->fd[1], SOL_SOCKET, SO_LINGER, &lg, sizeof lg))
    FAIL("setsockopt SO_LINGER: %s", strerror(errno_now()));
  if (close(c->fd[1])) FAIL("close: %s", strerror(errno_now()));
  return NULL;
}

static void *reset_reader(void *arg) {
  struct conn *c = arg;
  static const char *what = "reset";
  read_pattern(c, what);
  char b;
  ssize_t k = read(c->fd[0], &b, 1);
  int e = errno_now();
  if (!(k < 0 && e == ECONNRESET))
    FAIL("%s, connection %d: the read the reset ended gave %s, expected ECONNRESET", what, c->i,
         k == 0 ? "0 (end of file)" : io_result(k, e));
  k = read(c->fd[0], &b, 1);
  e = errno_now();
  if (k != 0)
    FAIL("%s, connection %d: the read after ECONNRESET gave %s, expected 0", what, c->i,
         io_result(k, e));
  k = write(c->fd[0], "x", 1);
  e = errno_now();
  if (!(k < 0 && e == EPIPE))
    FAIL("%s, connection %d: a write after the reset gave %s, expected EPIPE", what, c->i,
         io_result(k, e));
  return NULL;
}

static void linger_reset(void) {
  for (int i = 0; i < NCONN; i++) {
    struct conn *c = &conns[i];
    memset(c, 0, sizeof *c);
    c->i = i;
    c->tcp = 1;
    c->total = 10000 + 751 * (size_t)i;
    pair(1, c->fd);
  }
  for (int i = 0; i < NCONN; i++) {
    must("pthread_create", pthread_create(&conns[i].t[0], NULL, reset_reader, &conns[i]));
    must("pthread_create", pthread_create(&conns[i].t[1], NULL, reset_sender, &conns[i]));
  }
  for (int i = 0; i < NCONN; i++) {
    must("pthread_join", pthread_join(conns[i].t[0], NULL));
    must("pthread_join", pthread_join(conns[i].t[1], NULL));
    close(conns[i].fd[0]);
  }
  printf("SO_LINGER {1, 0}: %d TCP readers: their data, then ECONNRESET, then 0; a write: EPIPE\n",
         NCONN);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  alarm(60); /* a call that never returns: killed by SIGALRM */
  lst = bound(&laddr, NCONN);
  close_mid_transfer();
  blocked_writer();
  linger_reset();
  close(lst);
  printf("ok\n");
  return 0;
}
