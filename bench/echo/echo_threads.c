/* Echo server, one thread per connection (docs/dropin.md, section 9, (a)).
 *
 *   echo_threads [port=0]
 *
 * Listens on 127.0.0.1:port (0: any; "port N" on stdout), accepts in the
 * main thread and starts one detached thread per connection, with a 64 KiB
 * stack, that loops on a blocking read into a 2 KiB buffer on its stack and
 * writes back exactly what it read (all of it, across partial writes) until
 * read returns 0 or an error. On SIGTERM: "peak_rss_kib N" and exit 0.
 *
 * A plain pthread program: natively every connection is an OS thread;
 * under LD_PRELOAD=libito-pthread.so every connection is a lightweight
 * thread whose blocking read parks it, not its worker. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "echo_common.h"

#define BUF_SIZE 2048
#define STACK_SIZE (64 * 1024)

/* Writes all n bytes; 0, or -1 on an error (EINTR retried). */
static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void *connection(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[BUF_SIZE];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; /* peer closed, or reset by the load generator */
    if (write_all(fd, buf, (size_t)n) != 0) break;
  }
  close(fd);
  return NULL;
}

/* One line on stderr the first time a given kind of trouble happens. */
static void note_once(int *said, const char *what, int err) {
  if (*said) return;
  *said = 1;
  fprintf(stderr, "echo_threads: %s: %s (further ones not reported)\n", what, strerror(err));
}

int main(int argc, char **argv) {
  int port = echo_port_arg("echo_threads", argc, argv);
  echo_raise_nofile();
  echo_signals();
  int lfd = echo_listen("echo_threads", port, 0);

  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, STACK_SIZE);

  int said_accept = 0, said_create = 0;
  for (;;) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) {
      int e = errno;
      if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        /* out of descriptors or memory: wait for connections to end */
        note_once(&said_accept, "accept", e);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        continue;
      }
      fprintf(stderr, "echo_threads: accept: %s\n", strerror(e));
      return 1;
    }
    echo_nodelay(fd);
    pthread_t t;
    int e = pthread_create(&t, &attr, connection, (void *)(intptr_t)fd);
    if (e != 0) {
      /* no thread for it: the load generator sees the close as an error */
      note_once(&said_create, "pthread_create", e);
      close(fd);
    }
  }
}
