/* Partial transfers and a peer that closes mid-transfer, through a pipe and
 * a socketpair each.
 *
 * 1. One write of 6 MiB (and one writev of 7 pieces) against a reader
 *    taking small odd-sized reads, readv of three odd pieces, and on the
 *    socket recv with MSG_WAITALL: the write returns the full length (a
 *    blocking write to a stream sends everything), and the reader gets
 *    every byte once, in order (count and FNV-1a).
 * 2. The writer closes mid-transfer (while the reader is still behind):
 *    the reader gets exactly the bytes written, then end of file (0), and
 *    0 again.
 * 3. The reader closes mid-transfer, after a fixed number of bytes, while
 *    the writer is inside one large write: with SIGPIPE ignored, that write
 *    returns a count of at least what the reader took and less than its
 *    length (the progress made: how much exactly depends on timing, so it
 *    is checked, not printed), and the next write fails with EPIPE. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define DROPIN_PROG "partial"
#include "dropin.h"

#define BIG (6u << 20)
#define CUT ((3u << 20) + 12345) /* case 2: what the writer sends before it closes */
#define TAKE 300001u             /* case 3: what the reader takes before it closes */
#define HUGE (16u << 20)         /* case 3: the write the reader walks away from */

static unsigned char *src;

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}
#define FNV_INIT 1469598103934665603ULL

struct xfer {
  int fd[2];
  int sock;
  size_t limit; /* the reader stops (and closes) after this many bytes; 0: reads to EOF */
  size_t got;
  uint64_t hash;
  int eof_again; /* a read after end of file gave 0 again */
  ssize_t wrote; /* the writer's result */
  int werr;
};

/* Odd sizes, cycling; every fifth read a readv of three odd pieces, on a
 * socket every seventh a recv with MSG_WAITALL. */
static void *reader(void *arg) {
  struct xfer *x = arg;
  static const size_t sizes[] = {1, 3, 7, 13, 61, 127, 509, 1021, 4093, 8191, 30011};
  unsigned char buf[30011];
  uint64_t h = FNV_INIT;
  size_t got = 0;
  for (unsigned i = 0;; i++) {
    size_t n = sizes[i % (sizeof sizes / sizeof *sizes)];
    if (x->limit && n > x->limit - got) n = x->limit - got;
    if (x->limit && n == 0) break;
    ssize_t k;
    if (i % 5 == 4 && n >= 3) {
      struct iovec v[3] = {{buf, 1}, {buf + 1, n / 2}, {buf + 1 + n / 2, n - 1 - n / 2}};
      k = readv(x->fd[0], v, 3);
    } else if (x->sock && i % 7 == 6) {
      k = recv(x->fd[0], buf, n, MSG_WAITALL);
      if (k >= 0 && (size_t)k != n && k != 0) {
        /* only end of file may cut a MSG_WAITALL read short */
        unsigned char c;
        if (read(x->fd[0], &c, 1) != 0) FAIL("recv MSG_WAITALL returned %zd of %zu", k, n);
        x->eof_again = 1;
      }
    } else {
      k = read(x->fd[0], buf, n);
    }
    if (k < 0) FAIL("read: %s", strerror(errno_now()));
    if (k == 0) {
      x->eof_again = read(x->fd[0], buf, 1) == 0;
      break;
    }
    h = fnv(h, buf, (size_t)k);
    got += (size_t)k;
  }
  x->got = got;
  x->hash = h;
  if (x->limit) close(x->fd[0]); /* case 3: walks away mid-transfer */
  return NULL;
}

static int make(struct xfer *x, int sock) {
  memset(x, 0, sizeof *x);
  x->sock = sock;
  return sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, x->fd) : pipe(x->fd);
}

static const char *kind(const struct xfer *x) { return x->sock ? "socketpair" : "pipe"; }

/* 1: one large write, then one writev of 7 pieces, against small reads. */
static void whole(int sock) {
  struct xfer x;
  if (make(&x, sock)) FAIL("pipe or socketpair");
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, reader, &x));
  ssize_t k = write(x.fd[1], src, BIG);
  if (k != (ssize_t)BIG) FAIL("%s: write of %u returned %zd", kind(&x), BIG, k);
  struct iovec v[7];
  size_t off = 0;
  for (int i = 0; i < 7; i++) {
    size_t n = (size_t)(i * 40009 + 17);
    v[i].iov_base = src + off;
    v[i].iov_len = n;
    off += n;
  }
  k = writev(x.fd[1], v, 7);
  if (k != (ssize_t)off) FAIL("%s: writev of %zu returned %zd", kind(&x), off, k);
  close(x.fd[1]);
  must("pthread_join", pthread_join(t, NULL));
  uint64_t want = fnv(fnv(FNV_INIT, src, BIG), src, off);
  if (x.got != BIG + off || x.hash != want)
    FAIL("%s: %zu bytes arrived of %zu, or they changed", kind(&x), x.got, BIG + off);
  printf(
      "%s: one write of %u and a writev of %zu: %zu bytes read in small pieces, fnv1a %016llx, "
      "then %s\n",
      kind(&x), BIG, off, x.got, (unsigned long long)x.hash, x.eof_again ? "end of file" : "more?");
  close(x.fd[0]);
}

/* 2: the writer closes after CUT bytes, the reader still behind. */
static void writer_closes(int sock) {
  struct xfer x;
  if (make(&x, sock)) FAIL("pipe or socketpair");
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, reader, &x));
  ssize_t k = write(x.fd[1], src, CUT);
  if (k != (ssize_t)CUT) FAIL("%s: write of %u returned %zd", kind(&x), CUT, k);
  close(x.fd[1]);
  must("pthread_join", pthread_join(t, NULL));
  if (x.got != CUT || x.hash != fnv(FNV_INIT, src, CUT) || !x.eof_again)
    FAIL("%s: the reader got %zu bytes of %u (or changed ones, or no end of file)", kind(&x), x.got,
         CUT);
  printf(
      "%s: the writer closed after %u bytes: the reader got %zu, fnv1a %016llx, then end of "
      "file twice\n",
      kind(&x), CUT, x.got, (unsigned long long)x.hash);
  close(x.fd[0]);
}

/* 3: the reader closes after TAKE bytes while the writer is in one write
 * of HUGE bytes. */
static void reader_closes(int sock) {
  struct xfer x;
  if (make(&x, sock)) FAIL("pipe or socketpair");
  x.limit = TAKE;
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, reader, &x));
  ssize_t k = write(x.fd[1], src, HUGE);
  int e = errno_now();
  must("pthread_join", pthread_join(t, NULL));
  if (x.got != TAKE || x.hash != fnv(FNV_INIT, src, TAKE))
    FAIL("%s: the reader got %zu bytes of %u, or changed ones", kind(&x), x.got, TAKE);
  /* the write made progress before the reader left: its count, not EPIPE */
  if (k < (ssize_t)TAKE || k >= (ssize_t)HUGE)
    FAIL("%s: the write the reader left returned %zd (%s); expected at least %u and less than %u",
         kind(&x), k, k < 0 ? strerror(e) : "a count", TAKE, HUGE);
  k = write(x.fd[1], src, 1000);
  e = errno_now();
  printf(
      "%s: the reader closed after %u bytes (fnv1a %016llx): the write it left returned its "
      "progress, the next write %s\n",
      kind(&x), TAKE, (unsigned long long)x.hash,
      k < 0 && e == EPIPE ? "EPIPE" : "did not fail with EPIPE");
  if (!(k < 0 && e == EPIPE))
    FAIL("%s: the write after the reader closed returned %zd", kind(&x), k);
  close(x.fd[1]);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  src = malloc(HUGE);
  if (!src) FAIL("malloc");
  uint64_t s = 0x2545F4914F6CDD1DULL;
  for (size_t i = 0; i < HUGE; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    src[i] = (unsigned char)(s >> 32);
  }
  for (int sock = 0; sock < 2; sock++) {
    whole(sock);
    writer_closes(sock);
    reader_closes(sock);
  }
  free(src);
  printf("ok\n");
  return 0;
}
