/* Load generator for the echo servers (docs/dropin.md, section 9).
 *
 *   loadgen PORT CONNS [threads=4] [warmup_s=2] [duration_s=10] [max_requests=0]
 *
 * Opens CONNS connections to 127.0.0.1:PORT from `threads` threads, each
 * with its own epoll set and an equal share of the connections. Every
 * connection runs a closed loop: send a 64-byte message (sequence number,
 * connection number, then bytes derived from both), wait for all 64 bytes of
 * the echo, compare them byte for byte with what was sent, send the next.
 *
 * Connecting: non-blocking connects in batches of 500 over all threads (so
 * at most 500 wait in the server's accept queue, under somaxconn); a batch
 * is done when every connection in it has had its first message echoed.
 * Then, with every connection up, warm-up for warmup_s, then the measured
 * window of duration_s (ended early, within about 1 ms, once max_requests
 * requests, if nonzero, completed in it), then every connection is closed with SO_LINGER 0 (a
 * reset: no TIME_WAIT). Seconds may be fractional. Hard timeout: 60 s from
 * start (exit 3).
 *
 * Soft RLIMIT_NOFILE is raised to the hard limit; below CONNS + 100 the
 * connection count is lowered to fit, and stderr says so.
 *
 * stdout, one line:
 *   requests N seconds S rps R errors E
 * N requests completed in the measured window of S seconds; E counts echoes
 * that differ from what was sent, connections that failed to connect, and
 * connections closed or reset by the server. Exit status 1 when E > 0.
 * stderr: progress lines for a driver to time the window by (run_echo.py):
 *   loadgen: connected N in S s
 *   loadgen: measure start
 *   loadgen: measure end
 * and one line per error (the first 20). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64
#define BATCH 500
#define HARD_TIMEOUT_S 60
#define MAX_EVENTS 256
#define REPORTED_ERRORS 20

enum { CONNECTING, FIRST, UP };

typedef struct conn {
  int fd; /* -1 once dead */
  uint32_t id;
  uint64_t seq;     /* of the message in flight */
  uint8_t sent;     /* bytes of it written */
  uint8_t got;      /* bytes of its echo read */
  uint8_t want_out; /* EPOLLOUT is in the interest set */
  uint8_t state;    /* CONNECTING, FIRST (first echo awaited), UP */
  uint8_t rx[MSG];
} conn;

typedef struct worker {
  pthread_t thread;
  int ep;
  conn *conns;
  int n;
  int live;
  int connected; /* connections that completed their first echo */
  _Atomic unsigned long long completed;
  char pad[64];
} worker;

static struct sockaddr_in server;
static pthread_barrier_t start_barrier;
static atomic_int stop;
static atomic_long errors;
static int batch_per_thread;

static void say_error(const char *fmt, ...) {
  long k = atomic_fetch_add(&errors, 1);
  if (k >= REPORTED_ERRORS) return;
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "loadgen: error: %s%s\n", line,
          k == REPORTED_ERRORS - 1 ? " (further errors only counted)" : "");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "loadgen: hard timeout (60 s), giving up\n";
  ssize_t r = write(2, m, sizeof m - 1);
  (void)r;
  _exit(3);
}

/* The message number `seq` of connection `id`. */
static void make_msg(uint8_t *m, uint32_t id, uint64_t seq) {
  memcpy(m, &seq, 8);
  memcpy(m + 8, &id, 4);
  for (int i = 12; i < MSG; i++) m[i] = (uint8_t)(seq * 131u + id * 7u + (unsigned)i * 13u);
}

static void interest(worker *w, conn *c, uint32_t events, int op) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  if (epoll_ctl(w->ep, op, c->fd, &ev) != 0) {
    fprintf(stderr, "loadgen: epoll_ctl: %s\n", strerror(errno));
    exit(1);
  }
}

static void kill_conn(worker *w, conn *c) {
  if (c->fd < 0) return;
  close(c->fd);
  c->fd = -1;
  w->live--;
}

/* Writes the rest of the message in flight; waits for EPOLLOUT if the
 * socket takes only part of it. */
static void send_rest(worker *w, conn *c) {
  uint8_t m[MSG];
  make_msg(m, c->id, c->seq);
  while (c->sent < MSG) {
    ssize_t n = write(c->fd, m + c->sent, MSG - c->sent);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      say_error("connection %u: write: %s", c->id, strerror(errno));
      kill_conn(w, c);
      return;
    }
    c->sent = (uint8_t)(c->sent + n);
  }
  int want = c->sent < MSG;
  if (want != c->want_out) {
    c->want_out = (uint8_t)want;
    interest(w, c, EPOLLIN | (want ? EPOLLOUT : 0), EPOLL_CTL_MOD);
  }
}

static void send_next(worker *w, conn *c) {
  c->seq++;
  c->sent = 0;
  c->got = 0;
  send_rest(w, c);
}

/* Reads what has come of the echo; 1 when it completed and matched. */
static int receive(worker *w, conn *c) {
  for (;;) {
    ssize_t n = read(c->fd, c->rx + c->got, MSG - c->got);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
      say_error("connection %u: read: %s", c->id, strerror(errno));
      kill_conn(w, c);
      return 0;
    }
    if (n == 0) {
      say_error("connection %u: closed by the server after %llu requests", c->id,
                (unsigned long long)c->seq);
      kill_conn(w, c);
      return 0;
    }
    c->got = (uint8_t)(c->got + n);
    if (c->got < MSG) continue;
    uint8_t m[MSG];
    make_msg(m, c->id, c->seq);
    if (c->sent < MSG || memcmp(m, c->rx, MSG) != 0) {
      int at = 0;
      while (at < MSG && m[at] == c->rx[at]) at++;
      say_error("connection %u: echo of message %llu differs at byte %d%s", c->id,
                (unsigned long long)c->seq, at, c->sent < MSG ? " (more bytes than sent)" : "");
      kill_conn(w, c);
      return 0;
    }
    return 1;
  }
}

/* One connection event; 1 when a request completed. */
static int on_event(worker *w, conn *c, uint32_t ev) {
  if (c->fd < 0) return 0;
  if ((ev & EPOLLOUT) && c->sent < MSG) send_rest(w, c);
  if (c->fd >= 0 && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP))) return receive(w, c);
  return 0;
}

/* Connects w->conns[lo..hi) and waits until each has had its first echo
 * (or failed). Connections of earlier batches are idle meanwhile; if one of
 * them is closed by the server, that is counted as an error here. */
static void connect_batch(worker *w, int lo, int hi) {
  int pending = 0;
  for (int i = lo; i < hi; i++) {
    conn *c = &w->conns[i];
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
      say_error("connection %u: socket: %s", c->id, strerror(errno));
      continue;
    }
    w->live++;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&server, sizeof server) != 0 && errno != EINPROGRESS) {
      say_error("connection %u: connect: %s", c->id, strerror(errno));
      kill_conn(w, c);
      continue;
    }
    /* writable means connected (or failed): then the first message goes out */
    c->state = CONNECTING;
    c->want_out = 1;
    interest(w, c, EPOLLIN | EPOLLOUT, EPOLL_CTL_ADD);
    pending++;
  }
  struct epoll_event evs[MAX_EVENTS];
  while (pending > 0) {
    int n = epoll_wait(w->ep, evs, MAX_EVENTS, 100);
    for (int k = 0; k < n; k++) {
      conn *c = evs[k].data.ptr;
      if (c->fd < 0) continue;
      int was = c->state;
      if (was == CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
          say_error("connection %u: connect: %s", c->id, strerror(err));
          kill_conn(w, c);
        } else {
          c->state = FIRST;
          c->seq = 0;
          c->sent = c->got = 0;
          send_rest(w, c);
        }
      } else if (on_event(w, c, evs[k].events)) {
        c->state = UP; /* idle until the measured loop starts */
        w->connected++;
      }
      if (was != UP && (c->state == UP || c->fd < 0)) pending--;
    }
  }
}

static void *worker_main(void *arg) {
  worker *w = arg;
  for (int lo = 0; lo < w->n; lo += batch_per_thread)
    connect_batch(w, lo, lo + batch_per_thread < w->n ? lo + batch_per_thread : w->n);
  pthread_barrier_wait(&start_barrier);

  for (int i = 0; i < w->n; i++)
    if (w->conns[i].fd >= 0) send_next(w, &w->conns[i]);
  struct epoll_event evs[MAX_EVENTS];
  unsigned long long done = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    int n = epoll_wait(w->ep, evs, MAX_EVENTS, 5);
    for (int k = 0; k < n; k++) {
      conn *c = evs[k].data.ptr;
      if (on_event(w, c, evs[k].events)) {
        atomic_store_explicit(&w->completed, ++done, memory_order_relaxed);
        send_next(w, c);
      }
    }
  }
  /* reset, so that no port is left in TIME_WAIT */
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  for (int i = 0; i < w->n; i++) {
    conn *c = &w->conns[i];
    if (c->fd < 0) continue;
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    kill_conn(w, c);
  }
  close(w->ep);
  return NULL;
}

static double num_arg(int argc, char **argv, int i, double dflt, double lo, double hi,
                      const char *name) {
  if (i >= argc) return dflt;
  char *end;
  double v = strtod(argv[i], &end);
  if (*end || end == argv[i] || !(v >= lo && v <= hi)) {
    fprintf(stderr, "loadgen: %s must be a number in [%g, %g], got '%s'\n", name, lo, hi, argv[i]);
    exit(2);
  }
  return v;
}

static unsigned long long total_completed(worker *ws, int nt) {
  unsigned long long s = 0;
  for (int t = 0; t < nt; t++) s += atomic_load_explicit(&ws[t].completed, memory_order_relaxed);
  return s;
}

static void sleep_until(double t) {
  double d = t - now_s();
  if (d <= 0) return;
  struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 7) {
    fprintf(stderr,
            "usage: loadgen PORT CONNS [threads=4] [warmup_s=2] [duration_s=10] "
            "[max_requests=0]\n");
    return 2;
  }
  int port = (int)num_arg(argc, argv, 1, 0, 1, 65535, "PORT");
  long conns = (long)num_arg(argc, argv, 2, 0, 1, 1e7, "CONNS");
  int nt = (int)num_arg(argc, argv, 3, 4, 1, 1024, "threads");
  double warmup = num_arg(argc, argv, 4, 2, 0, HARD_TIMEOUT_S, "warmup_s");
  double duration = num_arg(argc, argv, 5, 10, 0.001, HARD_TIMEOUT_S, "duration_s");
  double cap = num_arg(argc, argv, 6, 0, 0, 1e18, "max_requests");
  if (warmup + duration >= HARD_TIMEOUT_S - 5) {
    fprintf(stderr,
            "loadgen: warmup_s + duration_s must stay under %d s (the hard timeout "
            "less 5 s for connecting)\n",
            HARD_TIMEOUT_S - 5);
    return 2;
  }
  double t_start = now_s();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigaction(SIGALRM, &sa, NULL);
  alarm(HARD_TIMEOUT_S);
  signal(SIGPIPE, SIG_IGN);

  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    if (rl.rlim_max == RLIM_INFINITY) rl.rlim_max = 1 << 20;
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    long room = rl.rlim_cur == RLIM_INFINITY ? 1L << 20 : (long)rl.rlim_cur;
    if (room < conns + 100) {
      long fit = room > 101 ? room - 100 : 1;
      fprintf(stderr, "loadgen: RLIMIT_NOFILE is %ld: lowering connections from %ld to %ld\n", room,
              conns, fit);
      conns = fit;
    }
  }
  if (nt > conns) nt = (int)conns;
  batch_per_thread = (BATCH + nt - 1) / nt;

  memset(&server, 0, sizeof server);
  server.sin_family = AF_INET;
  server.sin_port = htons((unsigned short)port);
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  worker *ws = calloc((size_t)nt, sizeof *ws);
  conn *all = calloc((size_t)conns, sizeof *all);
  if (!ws || !all) {
    fprintf(stderr, "loadgen: out of memory\n");
    return 1;
  }
  pthread_barrier_init(&start_barrier, NULL, (unsigned)nt + 1);
  long at = 0;
  for (int t = 0; t < nt; t++) {
    worker *w = &ws[t];
    w->n = (int)(conns / nt + (t < conns % nt));
    w->conns = all + at;
    for (int i = 0; i < w->n; i++) {
      w->conns[i].id = (uint32_t)(at + i);
      w->conns[i].fd = -1;
    }
    at += w->n;
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    if (w->ep < 0) {
      fprintf(stderr, "loadgen: epoll_create1: %s\n", strerror(errno));
      return 1;
    }
    int e = pthread_create(&w->thread, NULL, worker_main, w);
    if (e) {
      fprintf(stderr, "loadgen: pthread_create: %s\n", strerror(e));
      return 1;
    }
  }
  pthread_barrier_wait(&start_barrier);
  long up = 0;
  for (int t = 0; t < nt; t++) up += ws[t].connected;
  double t0 = now_s();
  fprintf(stderr, "loadgen: connected %ld in %.3f s\n", up, t0 - t_start);

  sleep_until(t0 + warmup);
  unsigned long long c0 = total_completed(ws, nt);
  double t1 = now_s();
  fprintf(stderr, "loadgen: measure start\n");
  double end = t1 + duration;
  unsigned long long c1;
  for (;;) {
    double t = now_s();
    c1 = total_completed(ws, nt);
    if (t >= end || (cap > 0 && (double)(c1 - c0) >= cap)) break;
    double step = cap > 0 ? 0.001 : 0.01; /* with a cap, overshoot by ~1 ms of requests */
    sleep_until(t + step < end ? t + step : end);
  }
  double t2 = now_s();
  fprintf(stderr, "loadgen: measure end\n");
  atomic_store(&stop, 1);
  for (int t = 0; t < nt; t++) pthread_join(ws[t].thread, NULL);

  long e = atomic_load(&errors);
  double secs = t2 - t1;
  printf("requests %llu seconds %.6f rps %.1f errors %ld\n", c1 - c0, secs,
         (double)(c1 - c0) / secs, e);
  fflush(stdout);
  pthread_barrier_destroy(&start_barrier);
  free(all);
  free(ws);
  return e > 0 ? 1 : 0;
}
