/* Blocking I/O that parks the thread (src/io/): many readers on pipes
 * woken in random order, close with parked threads, partial transfers with
 * checksums, timeouts, connect/accept, readiness waking a worker that
 * sleeps in epoll_wait, O_NONBLOCK and socket timeouts set after an fd was
 * first waited on, and all of it again under a 1 ms SIGALRM without
 * SA_RESTART. With one worker a call that blocked the worker instead of
 * parking would hang (ctest's timeout). */
#define _GNU_SOURCE
#include "check.h"
#include "fdtable.h"

#include <ito/ito.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Waits that poll a state sleep between looks, so that on one worker the
 * thread they wait for runs meanwhile. */
static void ms_sleep(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  ito_nanosleep(&d);
}

/* Until a thread waits on fd (fdtable.h). */
static void nap_1ms(void) { ms_sleep(1); }
static void wait_for_waiter(int fd) { CHECK(fdtable_wait_for_waiter(fd, nap_1ms) == 1); }

/* ---- 1. many readers, woken in random order ------------------------------------ */
#define NPIPES 500
static int in[NPIPES][2], out[NPIPES][2];

static void *echo_one(void *p) {
  int i = (int)(intptr_t)p;
  uint64_t v;
  CHECK_EQ(ito_read(in[i][0], &v, sizeof v), (long)sizeof v);
  v = v * 3 + 1;
  CHECK_EQ(ito_write(out[i][1], &v, sizeof v), (long)sizeof v);
  return NULL;
}

static void test_pipes(void) {
  ito_thread_t t[NPIPES];
  int order[NPIPES];
  for (int i = 0; i < NPIPES; i++) {
    CHECK(pipe(in[i]) == 0 && pipe(out[i]) == 0);
    CHECK_EQ(ito_create(echo_one, (void *)(intptr_t)i, &t[i]), 0);
    order[i] = i;
  }
  for (int i = NPIPES - 1; i > 0; i--) {
    int j = (int)(next() % (uint64_t)(i + 1)), x = order[i];
    order[i] = order[j];
    order[j] = x;
  }
  for (int k = 0; k < NPIPES; k++) {
    uint64_t v = (uint64_t)order[k] * 1000003u;
    CHECK_EQ(ito_write(in[order[k]][1], &v, sizeof v), (long)sizeof v);
  }
  uint64_t sum = 0, want = 0;
  for (int i = 0; i < NPIPES; i++) {
    uint64_t v;
    CHECK_EQ(ito_read(out[i][0], &v, sizeof v), (long)sizeof v);
    sum += v;
    want += (uint64_t)i * 1000003u * 3 + 1;
    CHECK_EQ(ito_join(t[i], NULL), 0);
    ito_close(in[i][0]), ito_close(in[i][1]), ito_close(out[i][0]), ito_close(out[i][1]);
  }
  CHECK(sum == want);
}

/* ---- 2. close with a reader and a writer parked ------------------------------------ */
static int cp[2], sp[2];
static volatile int parked;

static void *parked_reader(void *p) {
  (void)p;
  char c;
  __atomic_add_fetch(&parked, 1, __ATOMIC_RELEASE);
  ssize_t k = ito_read(cp[0], &c, 1);
  CHECK_EQ(k, -1);
  CHECK_EQ(errno, EBADF);
  return NULL;
}

static void *parked_writer(void *p) {
  (void)p;
  static char big[1 << 20];
  __atomic_add_fetch(&parked, 1, __ATOMIC_RELEASE);
  ssize_t k = ito_write(sp[0], big, sizeof big); /* fills the buffer, then parks */
  CHECK(k == -1 ? errno == EBADF : k > 0);       /* progress made is reported */
  return (void *)(intptr_t)(k == -1);
}

static void test_close(void) {
  CHECK(pipe(cp) == 0);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
  ito_thread_t r, w;
  parked = 0;
  CHECK_EQ(ito_create(parked_reader, NULL, &r), 0);
  CHECK_EQ(ito_create(parked_writer, NULL, &w), 0);
  while (__atomic_load_n(&parked, __ATOMIC_ACQUIRE) < 2) ito_yield();
  /* both wait now (or have passed the point where the descriptor could
   * still name another file: they see EBADF either way); a close before
   * that would let the pipe below take the number, and the thread would
   * wait on the new file for ever */
  wait_for_waiter(cp[0]);
  wait_for_waiter(sp[0]);
  CHECK_EQ(ito_close(cp[0]), 0);
  CHECK_EQ(ito_close(sp[0]), 0);
  /* the numbers are reused at once; nobody reads the new files */
  int again[2];
  CHECK(pipe(again) == 0);
  CHECK_EQ(ito_join(r, NULL), 0);
  CHECK_EQ(ito_join(w, NULL), 0);
  ito_close(again[0]), ito_close(again[1]), ito_close(cp[1]), ito_close(sp[1]);
}

/* ---- 3. partial transfers: 8 MiB through a socketpair and a pipe ------------------ */
#define BIG (8u << 20)
static unsigned char *src;
static int xfer[2];

static void *reader_random(void *p) {
  (void)p;
  unsigned char buf[70000];
  uint64_t h = 1469598103934665603ULL, got = 0;
  while (got < BIG) {
    size_t want = 1 + next() % sizeof buf;
    ssize_t k = ito_read(xfer[0], buf, want);
    CHECK(k > 0);
    for (ssize_t i = 0; i < k; i++) h = (h ^ buf[i]) * 1099511628211ULL;
    got += (uint64_t)k;
  }
  CHECK(got == BIG);
  return (void *)(uintptr_t)h;
}

static void test_partial(int use_pipe) {
  if (use_pipe)
    CHECK(pipe(xfer) == 0);
  else
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, xfer) == 0);
  uint64_t h = 1469598103934665603ULL;
  for (unsigned i = 0; i < BIG; i++) h = (h ^ src[i]) * 1099511628211ULL;
  ito_thread_t r;
  CHECK_EQ(ito_create(reader_random, NULL, &r), 0);
  /* one write of 4 MiB, then 64 iovecs for the rest */
  CHECK_EQ(ito_write(xfer[1], src, BIG / 2), (long)(BIG / 2));
  struct iovec iov[64];
  for (int i = 0; i < 64; i++) {
    iov[i].iov_base = src + BIG / 2 + (size_t)i * (BIG / 128);
    iov[i].iov_len = BIG / 128;
  }
  CHECK_EQ(ito_writev(xfer[1], iov, 64), (long)(BIG / 2));
  void *got;
  CHECK_EQ(ito_join(r, &got), 0);
  CHECK((uint64_t)(uintptr_t)got == h);
  ito_close(xfer[0]), ito_close(xfer[1]);
}

/* ---- 4. SO_RCVTIMEO: EAGAIN, never early ------------------------------------------ */
static void *timeout_reader(void *p) {
  (void)p;
  int s[2];
  CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
  struct timeval tv = {0, 50000};
  CHECK(setsockopt(s[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  char c;
  CHECK_EQ(ito_read(s[0], &c, 1), -1);
  CHECK_EQ(errno, EAGAIN);
  clock_gettime(CLOCK_MONOTONIC, &b);
  long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
  CHECK(ns >= 50000000LL);
  ito_close(s[0]), ito_close(s[1]);
  return NULL;
}

/* ---- 5. TCP on loopback: accept, connect, echo ------------------------------------ */
static int lfd;
static unsigned short port;
#define CONNS 64

static void *serve_one(void *p) {
  int c = (int)(intptr_t)p;
  char buf[256];
  ssize_t k;
  while ((k = ito_read(c, buf, sizeof buf)) > 0) CHECK_EQ(ito_write(c, buf, (size_t)k), k);
  CHECK_EQ(k, 0);
  ito_close(c);
  return NULL;
}

static void *acceptor(void *p) {
  (void)p;
  for (int i = 0; i < CONNS; i++) {
    int c = ito_accept(lfd, NULL, NULL);
    CHECK(c >= 0);
    ito_thread_t t;
    CHECK_EQ(ito_create(serve_one, (void *)(intptr_t)c, &t), 0);
    CHECK_EQ(ito_detach(t), 0);
  }
  return NULL;
}

static void *client(void *p) {
  intptr_t id = (intptr_t)p;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(s >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_EQ(ito_connect(s, (struct sockaddr *)&a, sizeof a), 0);
  for (int round = 0; round < 20; round++) {
    char msg[64], back[64];
    memset(msg, (int)('a' + (id + round) % 26), sizeof msg);
    CHECK_EQ(ito_write(s, msg, sizeof msg), 64);
    CHECK_EQ(ito_recv(s, back, sizeof back, MSG_WAITALL), 64);
    CHECK(memcmp(msg, back, 64) == 0);
  }
  ito_close(s);
  return NULL;
}

static void test_tcp(void) {
  lfd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(lfd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(lfd, (struct sockaddr *)&a, sizeof a) == 0);
  CHECK(listen(lfd, 128) == 0);
  socklen_t l = sizeof a;
  CHECK(getsockname(lfd, (struct sockaddr *)&a, &l) == 0);
  port = ntohs(a.sin_port);
  ito_thread_t acc, cl[CONNS];
  CHECK_EQ(ito_create(acceptor, NULL, &acc), 0);
  for (intptr_t i = 0; i < CONNS; i++) CHECK_EQ(ito_create(client, (void *)i, &cl[i]), 0);
  for (int i = 0; i < CONNS; i++) CHECK_EQ(ito_join(cl[i], NULL), 0);
  CHECK_EQ(ito_join(acc, NULL), 0);
  /* connecting to a closed port */
  int s = socket(AF_INET, SOCK_STREAM, 0);
  ito_close(lfd);
  CHECK_EQ(ito_connect(s, (struct sockaddr *)&a, sizeof a), -1);
  CHECK_EQ(errno, ECONNREFUSED);
  ito_close(s);
}

/* ---- 6. readiness wakes a worker asleep in epoll_wait ----------------------------- */
static int wp[2];

static void *late_writer(void *p) { /* a plain OS thread */
  (void)p;
  struct timespec d = {0, 100 * 1000000};
  nanosleep(&d, NULL);
  CHECK_EQ(write(wp[1], "x", 1), 1);
  return NULL;
}

static void *sleepy_reader(void *p) {
  (void)p;
  char c;
  CHECK_EQ(ito_read(wp[0], &c, 1), 1);
  CHECK(c == 'x');
  return NULL;
}

static void test_wake_sleeper(void) {
  CHECK(pipe(wp) == 0);
  ito_thread_t r;
  CHECK_EQ(ito_create(sleepy_reader, NULL, &r), 0);
  pthread_t w;
  CHECK(pthread_create(&w, NULL, late_writer, NULL) == 0);
  CHECK_EQ(ito_join(r, NULL), 0); /* every worker sleeps meanwhile (ITO_SPIN_US=0) */
  pthread_join(w, NULL);
  ito_close(wp[0]), ito_close(wp[1]);
}

/* ---- 7. poll: several fds, the first ready one wakes the thread; timeouts --------- */
static int pp[3][2];

static void *poller(void *p) {
  (void)p;
  struct pollfd f[3];
  for (int i = 0; i < 3; i++) f[i] = (struct pollfd){pp[i][0], POLLIN, 0};
  int k = ito_poll(f, 3, 60000); /* (the write comes after 20 ms, or much later when loaded) */
  CHECK_EQ(k, 1);
  CHECK(f[1].revents & POLLIN);
  CHECK_EQ(f[0].revents, 0);
  CHECK_EQ(f[2].revents, 0);
  /* nothing ready: returns 0 at the timeout, not before */
  char c;
  CHECK_EQ(ito_read(pp[1][0], &c, 1), 1);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  CHECK_EQ(ito_poll(f, 3, 30), 0);
  clock_gettime(CLOCK_MONOTONIC, &b);
  CHECK((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) >= 30000000LL);
  return NULL;
}

static void test_poll(void) {
  for (int i = 0; i < 3; i++) CHECK(pipe(pp[i]) == 0);
  ito_thread_t t;
  CHECK_EQ(ito_create(poller, NULL, &t), 0);
  struct timespec d = {0, 20 * 1000000};
  ito_nanosleep(&d);
  CHECK_EQ(ito_write(pp[1][1], "p", 1), 1);
  CHECK_EQ(ito_join(t, NULL), 0);
  for (int i = 0; i < 3; i++) ito_close(pp[i][0]), ito_close(pp[i][1]);
}

/* ---- 8. the program's view: O_NONBLOCK and timeouts set after a first wait -------- */
static int vp[2];

/* errno after a call that parked: read in a function of its own, since the
 * thread may have moved to another OS thread and __errno_location is const
 * (docs/api.md, the hazard of reading errno across a blocking call). */
static __attribute__((noinline)) int errno_now(void) { return errno; }
static volatile int view_step;

/* Waits once on vp[0] (the runtime learns the fd's view then), then reads
 * again after the main thread changed the view: EAGAIN at once. */
static void *view_reader(void *p) {
  int sock = (int)(intptr_t)p;
  char c;
  __atomic_store_n(&view_step, 1, __ATOMIC_RELEASE);
  CHECK_EQ(ito_read(vp[0], &c, 1), 1); /* parks: nothing written yet */
  while (__atomic_load_n(&view_step, __ATOMIC_ACQUIRE) != 2) ms_sleep(1);
  /* O_NONBLOCK (pipe) or SO_RCVTIMEO (socket) is set now; a stale view
   * would park until the main thread's late byte and return it */
  CHECK_EQ(ito_read(vp[0], &c, 1), -1);
  CHECK_EQ(errno_now(), EAGAIN);
  __atomic_store_n(&view_step, 3, __ATOMIC_RELEASE);
  while (__atomic_load_n(&view_step, __ATOMIC_ACQUIRE) != 4) ms_sleep(1);
  /* cleared again: parks until the byte */
  CHECK_EQ(ito_read(vp[0], &c, 1), 1);
  CHECK(c == 'z');
  (void)sock;
  return NULL;
}

static void test_view(int sock) {
  if (sock)
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, vp) == 0);
  else
    CHECK(pipe(vp) == 0);
  view_step = 0;
  ito_thread_t t;
  CHECK_EQ(ito_create(view_reader, (void *)(intptr_t)sock, &t), 0);
  while (__atomic_load_n(&view_step, __ATOMIC_ACQUIRE) != 1) ms_sleep(1);
  wait_for_waiter(vp[0]); /* (a new descriptor: the reader's first park adds it) */
  CHECK_EQ(ito_write(vp[1], "a", 1), 1);
  int fl = fcntl(vp[0], F_GETFL);
  struct timeval tv = {0, 20000}, none = {0, 0};
  if (sock) /* through ito_setsockopt: the runtime sees the change */
    CHECK_EQ(ito_setsockopt(vp[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  else /* a plain fcntl: natively the runtime asks for the flag at each wait */
    CHECK_EQ(fcntl(vp[0], F_SETFL, fl | O_NONBLOCK), 0);
  __atomic_store_n(&view_step, 2, __ATOMIC_RELEASE);
  /* a stale view parks the reader: this byte (after 30 s, which no
   * descheduling on a busy machine reaches) would end it */
  for (int i = 0; i < 3000 && __atomic_load_n(&view_step, __ATOMIC_ACQUIRE) != 3; i++) ms_sleep(10);
  if (__atomic_load_n(&view_step, __ATOMIC_ACQUIRE) != 3) CHECK_EQ(ito_write(vp[1], "!", 1), 1);
  while (__atomic_load_n(&view_step, __ATOMIC_ACQUIRE) != 3) ms_sleep(1);
  if (sock)
    CHECK_EQ(ito_setsockopt(vp[0], SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none), 0);
  else
    CHECK_EQ(fcntl(vp[0], F_SETFL, fl), 0);
  __atomic_store_n(&view_step, 4, __ATOMIC_RELEASE);
  ms_sleep(30); /* longer than the old timeout: a stale one would give EAGAIN */
  CHECK_EQ(ito_write(vp[1], "z", 1), 1);
  CHECK_EQ(ito_join(t, NULL), 0);
  ito_close(vp[0]), ito_close(vp[1]);
}

/* A program-nonblocking pipe and socket: EAGAIN, never a park. */
static void *nonblocking_calls(void *p) {
  (void)p;
  int q[2], s[2];
  char c;
  CHECK(pipe2(q, O_NONBLOCK) == 0);
  CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, s) == 0);
  CHECK_EQ(ito_read(q[0], &c, 1), -1);
  CHECK_EQ(errno_now(), EAGAIN);
  CHECK_EQ(ito_recv(s[0], &c, 1, 0), -1);
  CHECK_EQ(errno_now(), EAGAIN);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 4) == 0);
  CHECK_EQ(ito_accept(l, NULL, NULL), -1);
  CHECK_EQ(errno_now(), EAGAIN);
  CHECK(fcntl(l, F_GETFL) & O_NONBLOCK);
  ito_close(q[0]), ito_close(q[1]), ito_close(s[0]), ito_close(s[1]), ito_close(l);
  return NULL;
}

/* ---- 9. EINTR: everything above under a 1 ms SIGALRM without SA_RESTART ----------- */
static long alarms;
static void on_alarm(int sig) {
  (void)sig;
  __atomic_fetch_add(&alarms, 1, __ATOMIC_RELAXED);
}

static void start_alarms(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART: the runtime's waits get EINTR */
  CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
  struct itimerval it = {{0, 1000}, {0, 1000}};
  CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
}

static void stop_alarms(void) {
  while (__atomic_load_n(&alarms, __ATOMIC_RELAXED) < 5) ms_sleep(1);
  struct itimerval off = {{0, 0}, {0, 0}};
  CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
  fprintf(stderr, "io eintr: %ld signals handled\n", __atomic_load_n(&alarms, __ATOMIC_RELAXED));
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : "all";
  static const char *const parts[] = {"all",     "eintr", "pipes", "close", "partial",
                                      "timeout", "tcp",   "wake",  "poll",  "view"};
  int known = 0;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) known |= !strcmp(only, parts[i]);
  if (!known) {
    fprintf(stderr, "test_io: unknown part \"%s\"\n", only);
    return 2;
  }
  CHECK_EQ(ito_init(), 0);
  int eintr = !strcmp(only, "eintr");
  if (eintr) {
    only = "all";
    start_alarms();
  }
  if (!strcmp(only, "all") || !strcmp(only, "pipes")) test_pipes();
  if (!strcmp(only, "all") || !strcmp(only, "close")) test_close();
  if (!strcmp(only, "all") || !strcmp(only, "partial")) {
    src = malloc(BIG);
    CHECK(src != NULL);
    for (unsigned i = 0; i < BIG; i++) src[i] = (unsigned char)next();
    test_partial(0);
    test_partial(1);
    free(src);
  }
  if (!strcmp(only, "all") || !strcmp(only, "timeout")) {
    ito_thread_t t;
    CHECK_EQ(ito_create(timeout_reader, NULL, &t), 0);
    CHECK_EQ(ito_join(t, NULL), 0);
  }
  if (!strcmp(only, "all") || !strcmp(only, "tcp")) test_tcp();
  if (!strcmp(only, "all") || !strcmp(only, "wake")) test_wake_sleeper();
  if (!strcmp(only, "all") || !strcmp(only, "poll")) test_poll();
  if (!strcmp(only, "all") || !strcmp(only, "view")) {
    test_view(0);
    test_view(1);
    ito_thread_t t;
    CHECK_EQ(ito_create(nonblocking_calls, NULL, &t), 0);
    CHECK_EQ(ito_join(t, NULL), 0);
  }
  if (eintr) {
    stop_alarms();
    only = "eintr";
  }
  printf("io %s: passed\n", only);
  return 0;
}
