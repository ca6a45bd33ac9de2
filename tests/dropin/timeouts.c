/* Calls that end by a timeout or by a refusal, 12 threads at once, each with
 * a socket of its own (6 AF_UNIX socketpairs and 6 loopback TCP
 * connections, TCP on 127.0.0.1 through a listener on port 0), so that
 * under libito-pthread.so the waiting threads park while the others run:
 *
 * 1. SO_RCVTIMEO of 20 to 75 ms (a different one per thread) on an empty
 *    socket: read (half the threads) or recv fails with EAGAIN, and not
 *    before the timeout. Then SO_RCVTIMEO of 10 s and a byte written 20 ms
 *    later by a helper thread: the read returns that byte.
 * 2. poll for POLLIN with a timeout of 20 to 75 ms on an empty socket:
 *    returns 0, revents 0, and not before the timeout. Then poll with 10 s
 *    and a byte written 20 ms later by a helper thread: returns 1 with
 *    POLLIN, and the byte is read.
 * 3. A blocking connect to a closed port of 127.0.0.1 (a socket bound to
 *    port 0 tells the port, and is closed): fails with ECONNREFUSED.
 * 4. accept (half the threads accept4) on a listener of its own with
 *    SO_RCVTIMEO of 20 to 75 ms: fails with EAGAIN, not before the timeout.
 *    Then SO_RCVTIMEO of 10 s and a connect 20 ms later by a helper
 *    thread: accept returns that connection (its peer's port is the
 *    helper's socket's).
 *
 * "Not before the timeout": CLOCK_MONOTONIC around the call, at least the
 * timeout less 1 ms (clock granularity). No upper bound is checked; a call
 * that never returns is ended by alarm(60). Every check fails the program
 * with a message naming the thread and what it got. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "timeouts"
#include "dropin.h"
#include "loopback.h"

#define NTHR 12            /* even: socketpair, odd: TCP (sections 1 and 2) */
#define SLACK_NS 1000000LL /* clock granularity */
#define LATE_MS 20         /* the helper acts this long after it is asked to */
#define LONG_S 10          /* the timeout that the helper's act must beat */

static void sleep_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0 && errno_now() == EINTR) {
  }
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int local_port(int fd) {
  struct sockaddr_in a;
  socklen_t al = sizeof a;
  if (getsockname(fd, (struct sockaddr *)&a, &al)) FAIL("getsockname: %s", strerror(errno));
  return ntohs(a.sin_port);
}

struct task {
  int i, tcp;
  int fd[2]; /* fd[0]: the waiter's; fd[1]: the helper's (or -1) */
  long timeout_ms;
  struct sockaddr_in addr; /* a closed port (3), the waiter's listener (4) */
  int go;                  /* the waiter asks the helper to act (atomic) */
  int helper_port;         /* 4: the helper's socket's port */
  int peer_port;           /* 4: the accepted connection's peer's port */
  pthread_t t[2];
};
static struct task tasks[NTHR];

static const char *kind(const struct task *t) { return t->tcp ? "TCP" : "socketpair"; }

static void set_timeo(int fd, int opt, long ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  if (setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof tv)) FAIL("setsockopt: %s", strerror(errno));
}

/* Fails unless a call that ended by a timeout of ms took at least that
 * long (less the slack). */
static void not_early(const char *what, const struct task *t, long long t0, long long t1) {
  if (t1 - t0 < t->timeout_ms * 1000000LL - SLACK_NS)
    FAIL("%s, thread %d (%s): ended after %.3f ms, before its timeout of %ld ms", what, t->i,
         kind(t), (double)(t1 - t0) / 1e6, t->timeout_ms);
}

/* The helper: once asked, waits LATE_MS and then writes a byte 'L' to
 * fd[1], or (with no fd[1]) connects to addr and keeps the socket. */
static void *helper(void *arg) {
  struct task *t = arg;
  while (!__atomic_load_n(&t->go, __ATOMIC_ACQUIRE)) sleep_ms(1);
  sleep_ms(LATE_MS);
  if (t->fd[1] >= 0) {
    if (write(t->fd[1], "L", 1) != 1) FAIL("the helper's write: %s", strerror(errno_now()));
    return NULL;
  }
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0) FAIL("socket: %s", strerror(errno_now()));
  if (connect(c, (struct sockaddr *)&t->addr, sizeof t->addr))
    FAIL("the helper's connect: %s", strerror(errno_now()));
  t->helper_port = local_port(c);
  t->fd[1] = c; /* read by main after the join */
  return NULL;
}

static void ask_helper(struct task *t) { __atomic_store_n(&t->go, 1, __ATOMIC_RELEASE); }

/* Starts every task's waiter (and helper, if asked) and joins them. */
static void run_all(void *(*waiter)(void *), int with_helper) {
  for (int i = 0; i < NTHR; i++) {
    must("pthread_create", pthread_create(&tasks[i].t[0], NULL, waiter, &tasks[i]));
    if (with_helper)
      must("pthread_create", pthread_create(&tasks[i].t[1], NULL, helper, &tasks[i]));
  }
  for (int i = 0; i < NTHR; i++) {
    must("pthread_join", pthread_join(tasks[i].t[0], NULL));
    if (with_helper) must("pthread_join", pthread_join(tasks[i].t[1], NULL));
  }
}

/* Fresh tasks, with a connected pair each if pairs. */
static void setup(int pairs) {
  for (int i = 0; i < NTHR; i++) {
    struct task *t = &tasks[i];
    memset(t, 0, sizeof *t);
    t->i = i;
    t->tcp = i % 2;
    t->timeout_ms = 20 + 5 * i;
    t->fd[0] = t->fd[1] = -1;
    if (pairs) pair(t->tcp, t->fd);
  }
}

static void close_all(void) {
  for (int i = 0; i < NTHR; i++) {
    if (tasks[i].fd[0] >= 0) close(tasks[i].fd[0]);
    if (tasks[i].fd[1] >= 0) close(tasks[i].fd[1]);
  }
}

/* Reads the helper's byte; what: the call that said it was there. */
static void read_late_byte(const char *what, const struct task *t) {
  char c = 0;
  ssize_t k = read(t->fd[0], &c, 1);
  int e = errno_now();
  if (k != 1 || c != 'L')
    FAIL("%s, thread %d (%s): the read of the byte written %d ms later gave %s (byte %d)", what,
         t->i, kind(t), LATE_MS, io_result(k, e), c);
}

/* ---- 1. SO_RCVTIMEO on a read --------------------------------------------------------------- */

static void *rcvtimeo_reader(void *arg) {
  struct task *t = arg;
  static const char *what = "read with SO_RCVTIMEO";
  int use_recv = t->i % 4 >= 2;
  set_timeo(t->fd[0], SO_RCVTIMEO, t->timeout_ms);
  char c;
  long long t0 = now_ns();
  ssize_t k = use_recv ? recv(t->fd[0], &c, 1, 0) : read(t->fd[0], &c, 1);
  long long t1 = now_ns();
  int e = errno_now();
  if (!(k < 0 && e == EAGAIN))
    FAIL(
        "%s, thread %d (%s): %s on an empty socket with a timeout of %ld ms gave %s, expected "
        "EAGAIN",
        what, t->i, kind(t), use_recv ? "recv" : "read", t->timeout_ms, io_result(k, e));
  not_early(what, t, t0, t1);

  set_timeo(t->fd[0], SO_RCVTIMEO, LONG_S * 1000L);
  ask_helper(t);
  read_late_byte("read with a 10 s SO_RCVTIMEO", t);
  return NULL;
}

static void rcvtimeo(void) {
  setup(1);
  run_all(rcvtimeo_reader, 1);
  close_all();
  printf(
      "SO_RCVTIMEO of 20-75 ms, %d socketpairs and %d TCP connections: read and recv give "
      "EAGAIN, none before its timeout\n",
      NTHR / 2, NTHR / 2);
  printf("SO_RCVTIMEO of %d s: a byte written %d ms later is read\n", LONG_S, LATE_MS);
}

/* ---- 2. poll -------------------------------------------------------------------------------- */

static void *poller(void *arg) {
  struct task *t = arg;
  static const char *what = "poll";
  struct pollfd p = {t->fd[0], POLLIN, 0};
  long long t0 = now_ns();
  int r = poll(&p, 1, (int)t->timeout_ms);
  long long t1 = now_ns();
  int e = errno_now();
  if (r != 0 || p.revents != 0)
    FAIL(
        "%s, thread %d (%s): on an empty socket with a timeout of %ld ms, poll returned %d (%s), "
        "revents 0x%x; expected 0, revents 0",
        what, t->i, kind(t), t->timeout_ms, r, r < 0 ? code_name(e) : "no error",
        (unsigned)p.revents);
  not_early(what, t, t0, t1);

  ask_helper(t);
  p.revents = 0;
  r = poll(&p, 1, LONG_S * 1000);
  e = errno_now();
  if (r != 1 || !(p.revents & POLLIN))
    FAIL(
        "%s, thread %d (%s): with a byte written %d ms later and a timeout of %d s, poll "
        "returned %d (%s), revents 0x%x; expected 1 with POLLIN",
        what, t->i, kind(t), LATE_MS, LONG_S, r, r < 0 ? code_name(e) : "no error",
        (unsigned)p.revents);
  read_late_byte("poll with a 10 s timeout", t);
  return NULL;
}

static void polls(void) {
  setup(1);
  run_all(poller, 1);
  close_all();
  printf(
      "poll with 20-75 ms, %d socketpairs and %d TCP connections: 0 and revents 0, none "
      "before its timeout\n",
      NTHR / 2, NTHR / 2);
  printf("poll with %d s: a byte written %d ms later: 1, POLLIN, and the byte\n", LONG_S, LATE_MS);
}

/* ---- 3. connect to a closed port ------------------------------------------------------------ */

static void *refused_connector(void *arg) {
  struct task *t = arg;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) FAIL("socket: %s", strerror(errno_now()));
  int rc = connect(s, (struct sockaddr *)&t->addr, sizeof t->addr);
  int e = errno_now();
  if (!(rc < 0 && e == ECONNREFUSED))
    FAIL("connect to a closed port, thread %d: 127.0.0.1 port %d gave %s, expected ECONNREFUSED",
         t->i, ntohs(t->addr.sin_port), rc == 0 ? "a connection" : code_name(e));
  close(s);
  return NULL;
}

static void refused(void) {
  setup(0);
  /* the ports: all bound at once, so that they differ, then all closed */
  int b[NTHR];
  for (int i = 0; i < NTHR; i++) b[i] = bound(&tasks[i].addr, 0);
  for (int i = 0; i < NTHR; i++) close(b[i]);
  run_all(refused_connector, 0);
  printf("connect to a closed port of 127.0.0.1, %d threads: ECONNREFUSED\n", NTHR);
}

/* ---- 4. accept with SO_RCVTIMEO ------------------------------------------------------------- */

static int accept_any(const struct task *t) {
  return t->i % 2 ? accept4(t->fd[0], NULL, NULL, SOCK_CLOEXEC) : accept(t->fd[0], NULL, NULL);
}

static void *timed_acceptor(void *arg) {
  struct task *t = arg;
  static const char *what = "accept with SO_RCVTIMEO";
  const char *call = t->i % 2 ? "accept4" : "accept";
  set_timeo(t->fd[0], SO_RCVTIMEO, t->timeout_ms);
  long long t0 = now_ns();
  int c = accept_any(t);
  long long t1 = now_ns();
  int e = errno_now();
  if (!(c < 0 && e == EAGAIN))
    FAIL(
        "%s, thread %d: %s with a timeout of %ld ms and nobody connecting gave %s, expected "
        "EAGAIN",
        what, t->i, call, t->timeout_ms, c >= 0 ? "a connection" : code_name(e));
  if (t1 - t0 < t->timeout_ms * 1000000LL - SLACK_NS)
    FAIL("%s, thread %d: %s ended after %.3f ms, before its timeout of %ld ms", what, t->i, call,
         (double)(t1 - t0) / 1e6, t->timeout_ms);

  set_timeo(t->fd[0], SO_RCVTIMEO, LONG_S * 1000L);
  ask_helper(t);
  c = accept_any(t);
  e = errno_now();
  if (c < 0)
    FAIL("%s, thread %d: %s with a timeout of %d s and a connect %d ms later gave %s", what, t->i,
         call, LONG_S, LATE_MS, code_name(e));
  struct sockaddr_in p;
  socklen_t pl = sizeof p;
  if (getpeername(c, (struct sockaddr *)&p, &pl)) FAIL("getpeername: %s", strerror(errno_now()));
  t->peer_port = ntohs(p.sin_port);
  close(c);
  return NULL;
}

static void timed_accept(void) {
  setup(0);
  for (int i = 0; i < NTHR; i++) tasks[i].fd[0] = bound(&tasks[i].addr, 4);
  run_all(timed_acceptor, 1);
  for (int i = 0; i < NTHR; i++)
    if (tasks[i].peer_port != tasks[i].helper_port)
      FAIL(
          "accept, thread %d: the connection accepted is from port %d, the helper's socket has "
          "port %d",
          i, tasks[i].peer_port, tasks[i].helper_port);
  close_all();
  printf(
      "accept and accept4 with SO_RCVTIMEO of 20-75 ms, %d listeners: EAGAIN, none before "
      "its timeout\n",
      NTHR);
  printf("accept with SO_RCVTIMEO of %d s: the connection made %d ms later\n", LONG_S, LATE_MS);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  alarm(60); /* a call that never returns: killed by SIGALRM */
  lst = bound(&laddr, NTHR);
  rcvtimeo();
  polls();
  refused();
  timed_accept();
  close(lst);
  printf("ok\n");
  return 0;
}
