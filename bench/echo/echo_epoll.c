/* Echo server, one thread and level-triggered epoll (docs/dropin.md,
 * section 9, (b)): the event-loop baseline for echo_threads.
 *
 *   echo_epoll [port=0]
 *
 * Same protocol and output as echo_threads. Every socket is non-blocking.
 * A readable connection gets one read of up to 2 KiB, written back at once;
 * what the socket does not take goes into the connection's pending-output
 * buffer (allocated the first time it is needed), and the connection then
 * waits for EPOLLOUT instead of EPOLLIN until the buffer is drained, so at
 * most 2 KiB is ever pending per connection. On SIGTERM: "peak_rss_kib N". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "echo_common.h"

#define BUF_SIZE 2048
#define MAX_EVENTS 512
#define ACCEPTS_PER_EVENT 64

typedef struct conn {
  int fd;
  unsigned short off, len; /* pending output: pend[off..len) */
  char *pend;              /* BUF_SIZE bytes, or NULL until a write falls short */
} conn;

static int ep;

static void fail(const char *what) {
  fprintf(stderr, "echo_epoll: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void conn_close(conn *c) {
  close(c->fd); /* also leaves the epoll set: the fd is never duplicated */
  free(c->pend);
  free(c);
}

static void set_interest(conn *c, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) != 0) fail("epoll_ctl MOD");
}

/* Writes what it can of p[0..n); -1 on an error, else the bytes written. */
static ssize_t write_some(int fd, const char *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return -1;
    }
    done += (size_t)w;
  }
  return (ssize_t)done;
}

/* Readable (or an error or hang-up while waiting to read). */
static void on_readable(conn *c) {
  char buf[BUF_SIZE];
  ssize_t n = read(c->fd, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    conn_close(c);
    return;
  }
  ssize_t w = write_some(c->fd, buf, (size_t)n);
  if (w < 0) {
    conn_close(c);
    return;
  }
  if (w < n) {
    if (!c->pend && !(c->pend = malloc(BUF_SIZE))) fail("malloc");
    memcpy(c->pend, buf + w, (size_t)(n - w));
    c->off = 0;
    c->len = (unsigned short)(n - w);
    set_interest(c, EPOLLOUT);
  }
}

/* Writable (or an error or hang-up while output is pending). */
static void on_writable(conn *c) {
  ssize_t w = write_some(c->fd, c->pend + c->off, (size_t)(c->len - c->off));
  if (w < 0) {
    conn_close(c);
    return;
  }
  c->off = (unsigned short)(c->off + w);
  if (c->off == c->len) {
    c->off = c->len = 0;
    set_interest(c, EPOLLIN);
  }
}

static int said_accept;

static void on_listen(int lfd) {
  for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK) return;
      if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        /* level-triggered: retried on the next pass, once connections end */
        if (!said_accept)
          fprintf(stderr, "echo_epoll: accept: %s (further ones not reported)\n", strerror(e));
        said_accept = 1;
        return;
      }
      fail("accept4");
    }
    echo_nodelay(fd);
    conn *c = calloc(1, sizeof *c);
    if (!c) fail("calloc");
    c->fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) fail("epoll_ctl ADD");
  }
}

int main(int argc, char **argv) {
  int port = echo_port_arg("echo_epoll", argc, argv);
  echo_raise_nofile();
  echo_signals();
  int lfd = echo_listen("echo_epoll", port, 1);
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) fail("epoll_create1");
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL}; /* NULL: the listener */
  if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) != 0) fail("epoll_ctl ADD listener");

  struct epoll_event evs[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      conn *c = evs[i].data.ptr;
      if (!c)
        on_listen(lfd);
      else if (c->len)
        on_writable(c);
      else
        on_readable(c);
    }
  }
}
