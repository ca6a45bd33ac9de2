/* What the two echo servers (echo_threads.c, echo_epoll.c) share: the
 * argument, the file limit, the listening socket and the SIGTERM report.
 * Plain C and Linux only; no ito header (echo_threads runs under
 * LD_PRELOAD=libito-pthread.so as an unmodified pthread program).
 *
 * Protocol of a server:
 *   SERVER [port=0]
 * listens on 127.0.0.1:port (0: the kernel picks one) and prints
 *   port N
 * on stdout, flushed; it echoes every byte each connection sends until the
 * peer closes. On SIGTERM it prints
 *   peak_rss_kib N
 * (VmHWM of /proc/self/status) and exits with status 0. */
#ifndef BENCH_ECHO_COMMON_H
#define BENCH_ECHO_COMMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* argv[1] as a port in [0, 65535], 0 when absent; exits 2 on garbage. */
static inline int echo_port_arg(const char *prog, int argc, char **argv) {
  if (argc > 2) {
    fprintf(stderr, "usage: %s [port=0]\n", prog);
    exit(2);
  }
  if (argc < 2) return 0;
  char *end;
  long v = strtol(argv[1], &end, 10);
  if (*end || end == argv[1] || v < 0 || v > 65535) {
    fprintf(stderr, "%s: port must be an integer in [0, 65535], got '%s'\n", prog, argv[1]);
    exit(2);
  }
  return (int)v;
}

/* Raises the soft RLIMIT_NOFILE to the hard limit (one fd per connection);
 * returns the soft limit now in force. */
static inline long echo_raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (rl.rlim_cur != rl.rlim_max) {
    struct rlimit want = rl;
    /* an infinite hard limit still stops at fs.nr_open */
    if (want.rlim_max == RLIM_INFINITY) want.rlim_max = 1 << 20;
    want.rlim_cur = want.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
  }
  return rl.rlim_cur == RLIM_INFINITY ? (long)(1 << 20) : (long)rl.rlim_cur;
}

/* A listening TCP socket on 127.0.0.1:port with SO_REUSEADDR and a
 * SOMAXCONN backlog; prints "port N" (the bound port) on stdout, flushed.
 * Exits 1 on failure. */
static inline int echo_listen(const char *prog, int port, int nonblock) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) {
    fprintf(stderr, "%s: socket: %s\n", prog, strerror(errno));
    exit(1);
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    fprintf(stderr, "%s: bind 127.0.0.1:%d: %s\n", prog, port, strerror(errno));
    exit(1);
  }
  if (listen(fd, SOMAXCONN) != 0) {
    fprintf(stderr, "%s: listen: %s\n", prog, strerror(errno));
    exit(1);
  }
  socklen_t len = sizeof a;
  if (getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    fprintf(stderr, "%s: getsockname: %s\n", prog, strerror(errno));
    exit(1);
  }
  printf("port %d\n", ntohs(a.sin_port));
  fflush(stdout);
  return fd;
}

/* Small messages echoed in a closed loop: never wait for Nagle. Both
 * servers and the load generator set it on every connection. */
static inline void echo_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* The SIGTERM handler: reads VmHWM, prints "peak_rss_kib N" on fd 1 and ends
 * the process. It may run on any thread, at any point, so it uses raw system
 * calls only: async-signal-safe, and never an interposed read/write/open of
 * libito-pthread.so, whose bookkeeping the interrupted thread may hold. */
static void echo_on_sigterm(int sig) {
  (void)sig;
  char buf[8192];
  long len = 0;
  long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    for (;;) {
      long n = syscall(SYS_read, fd, buf + len, sizeof buf - 1 - (size_t)len);
      if (n <= 0 || (len += n) >= (long)sizeof buf - 1) break;
    }
    syscall(SYS_close, fd);
  }
  buf[len] = 0;
  long kib = -1;
  static const char key[] = "\nVmHWM:";
  for (long i = 0; i + (long)sizeof key - 1 <= len; i++) {
    if (memcmp(buf + i, key, sizeof key - 1) != 0) continue;
    const char *p = buf + i + sizeof key - 1;
    while (*p == ' ' || *p == '\t') p++;
    for (kib = 0; *p >= '0' && *p <= '9'; p++) kib = kib * 10 + (*p - '0');
    break;
  }
  /* "peak_rss_kib N\n" with N formatted by hand (no printf in a handler) */
  char out[64] = "peak_rss_kib ";
  size_t o = sizeof "peak_rss_kib " - 1;
  if (kib < 0) {
    out[o++] = '-';
    out[o++] = '1';
  } else {
    char d[24];
    int nd = 0;
    do d[nd++] = (char)('0' + kib % 10);
    while ((kib /= 10) > 0);
    while (nd > 0) out[o++] = d[--nd];
  }
  out[o++] = '\n';
  for (size_t done = 0; done < o;) {
    long n = syscall(SYS_write, 1, out + done, o - done);
    if (n <= 0) break;
    done += (size_t)n;
  }
  syscall(SYS_exit_group, 0);
}

/* SIGTERM reports and exits; SIGPIPE is ignored (a write to a connection the
 * load generator reset gives EPIPE, and the connection ends). */
static inline void echo_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = echo_on_sigterm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

#endif
