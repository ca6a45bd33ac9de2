/* 1,000 threads each block in read() on a pipe of their own; main writes
 * to them in a seeded random order; each thread writes the value, changed,
 * to a second pipe, which main reads back. Under libito-pthread.so with one
 * worker, a read that blocked the worker instead of parking the thread
 * would hang. Also: a socketpair whose peer closes mid-transfer (the data
 * first, then 0), a write to it after (EPIPE), and SO_RCVTIMEO (EAGAIN). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DROPIN_PROG "pipes"
#include "dropin.h"

#define N 1000
static int in[N][2], out[N][2];

static void *echo(void *p) {
  int i = (int)(intptr_t)p;
  uint64_t v;
  if (read(in[i][0], &v, sizeof v) != (ssize_t)sizeof v) FAIL("read %d", i);
  v = v * 7 + 3;
  if (write(out[i][1], &v, sizeof v) != (ssize_t)sizeof v) FAIL("write %d", i);
  return NULL;
}

static int sp[2];
static void *send_then_close(void *p) {
  (void)p;
  char buf[3000];
  memset(buf, 'z', sizeof buf);
  if (write(sp[1], buf, sizeof buf) != (ssize_t)sizeof buf) FAIL("socketpair write");
  close(sp[1]);
  return NULL;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  pthread_t t[N];
  int order[N];
  uint64_t rng = 12345;
  for (int i = 0; i < N; i++) {
    if (pipe(in[i]) || pipe(out[i])) FAIL("pipe (raise ulimit -n above 4,100)");
    if (pthread_create(&t[i], NULL, echo, (void *)(intptr_t)i)) FAIL("pthread_create");
    order[i] = i;
  }
  for (int i = N - 1; i > 0; i--) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    int j = (int)((rng >> 33) % (uint64_t)(i + 1)), x = order[i];
    order[i] = order[j];
    order[j] = x;
  }
  for (int k = 0; k < N; k++) {
    uint64_t v = (uint64_t)order[k] * 1000003u;
    if (write(in[order[k]][1], &v, sizeof v) != (ssize_t)sizeof v) FAIL("main write");
  }
  uint64_t sum = 0;
  for (int i = 0; i < N; i++) {
    uint64_t v;
    if (read(out[i][0], &v, sizeof v) != (ssize_t)sizeof v) FAIL("main read");
    sum += v;
    pthread_join(t[i], NULL);
    close(in[i][0]), close(in[i][1]), close(out[i][0]), close(out[i][1]);
  }
  printf("pipes: %d threads echoed, sum %llu\n", N, (unsigned long long)sum);

  /* the peer closes mid-transfer: its data, then end of file, then EPIPE */
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) FAIL("socketpair");
  pthread_t c;
  pthread_create(&c, NULL, send_then_close, NULL);
  char buf[1024];
  size_t got = 0;
  ssize_t k;
  while ((k = read(sp[0], buf, sizeof buf)) > 0) got += (size_t)k;
  pthread_join(c, NULL);
  printf("peer close: %zu bytes then %s\n", got, k == 0 ? "end of file" : strerror(errno));
  k = write(sp[0], "x", 1);
  printf("write after the peer closed: %s\n", k < 0 && errno == EPIPE ? "EPIPE" : "unexpected");
  close(sp[0]);

  /* SO_RCVTIMEO */
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) FAIL("socketpair");
  struct timeval tv = {0, 30000};
  setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  k = read(sp[0], buf, 1);
  printf("read with SO_RCVTIMEO: %s\n", k < 0 && errno == EAGAIN ? "EAGAIN" : "unexpected");
  close(sp[0]), close(sp[1]);
  return 0;
}
