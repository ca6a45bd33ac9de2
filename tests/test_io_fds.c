/* Blocking I/O (src/io/) when the descriptors run out (docs/io.md, "When
 * the layer cannot park"): the I/O layer sets itself up at the first call
 * that would park, and here the table is full by then. Nothing stops the
 * program: the calls block their worker, announced to the monitor, and give
 * what libc gives.
 *
 *   full:   a reader and a writer, both ito threads, pass values through a
 *           pipe and a socketpair (the reader says which it is about to
 *           read; the writer then sleeps 2 ms and writes it); half the
 *           reads poll first; then the ends (0 after the writer closed,
 *           EPIPE after the reader closed); a connect on loopback, and an
 *           accept that gets EMFILE as libc's would; then the same rounds
 *           after the limit went back up. With ITO_EXTRA_WORKERS=0 and one
 *           worker, a read that blocked its worker without saying so would
 *           leave the writer without a worker.
 *   regain: one worker and no extra ones at all (ITO_WORKER_LIMIT=1): a
 *           round with a plain OS thread writing, while the table is full;
 *           then, once the limit is up again, a round with an ito thread
 *           writing, which runs only if the reader parked: the layer set
 *           itself up at a later call. A watchdog thread fails a run that
 *           hangs. */
#define _GNU_SOURCE
#include "check.h"
#include "fdtable.h"

#include <ito/ito.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 12

/* errno after a call that may have parked (the thread may be on another
 * OS thread, and __errno_location is const): in a function of its own. */
static __attribute__((noinline)) int errno_now(void) { return errno; }

static void ms_sleep(long ms, int os) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  if (os)
    nanosleep(&d, NULL);
  else
    ito_nanosleep(&d);
}

/* ---- the table ---------------------------------------------------------------------- */
static struct rlimit old_limit;
static int *dups, ndups;

/* The soft limit down to the highest open descriptor plus one, and every
 * free number below it taken (dups of fd). */
static void fill_table(int fd0) {
  CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old_limit), 0);
  struct rlimit rl = old_limit;
  int hi = fdtable_highest();
  CHECK(hi >= 0);
  rl.rlim_cur = (rlim_t)hi + 1;
  CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
  int cap = 64;
  dups = malloc(sizeof *dups * (size_t)cap);
  CHECK(dups != NULL);
  for (int fd; (fd = dup(fd0)) >= 0;) {
    if (ndups == cap) CHECK((dups = realloc(dups, sizeof *dups * (size_t)(cap *= 2))) != NULL);
    dups[ndups++] = fd;
  }
  CHECK_EQ(errno, EMFILE);
}

static void free_table(void) {
  CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old_limit), 0);
  for (int i = 0; i < ndups; i++) close(dups[i]);
  free(dups);
  dups = NULL;
  ndups = 0;
}

/* ---- rounds ----------------------------------------------------------------------------- */
struct chan {
  int rd, wr;
  int use_poll, end; /* end: 1 the writer closes after the rounds, 2 the reader */
  int os_writer;     /* the writer is a plain OS thread */
  int want;          /* the value the reader is about to read (0: none yet) */
};

static uint64_t value(int i) { return (uint64_t)i * 2654435761u + 7; }

static void wait_for(struct chan *c, int i) {
  while (__atomic_load_n(&c->want, __ATOMIC_ACQUIRE) < i) ms_sleep(1, c->os_writer);
}

static void *writer(void *p) {
  struct chan *c = p;
  for (int i = 1; i <= ROUNDS; i++) {
    wait_for(c, i);
    ms_sleep(2, c->os_writer); /* the reader is most likely in its read by now */
    uint64_t v = value(i);
    CHECK_EQ(c->os_writer ? write(c->wr, &v, sizeof v) : ito_write(c->wr, &v, sizeof v), sizeof v);
  }
  wait_for(c, ROUNDS + 1);
  if (c->end == 1) {
    ms_sleep(2, c->os_writer);
    c->os_writer ? close(c->wr) : ito_close(c->wr); /* the reader's last read waits for it */
    return NULL;
  }
  uint64_t v = 0; /* the reader closed its end */
  CHECK_EQ(c->os_writer ? write(c->wr, &v, sizeof v) : ito_write(c->wr, &v, sizeof v), -1);
  CHECK_EQ(errno_now(), EPIPE);
  c->os_writer ? close(c->wr) : ito_close(c->wr);
  return NULL;
}

static void *reader(void *p) {
  struct chan *c = p;
  for (int i = 1; i <= ROUNDS; i++) {
    __atomic_store_n(&c->want, i, __ATOMIC_RELEASE);
    if (c->use_poll) {
      struct pollfd f = {c->rd, POLLIN, 0};
      CHECK_EQ(ito_poll(&f, 1, -1), 1);
      CHECK(f.revents & POLLIN);
    }
    uint64_t v = 0;
    CHECK_EQ(ito_read(c->rd, &v, sizeof v), sizeof v);
    CHECK(v == value(i));
  }
  if (c->end == 2) ito_close(c->rd);
  __atomic_store_n(&c->want, ROUNDS + 1, __ATOMIC_RELEASE);
  if (c->end == 1) {
    uint64_t v;
    CHECK_EQ(ito_read(c->rd, &v, sizeof v), 0);
    ito_close(c->rd);
  }
  return NULL;
}

/* A pipe (read, the writer closes) and a socketpair (poll and read, the
 * reader closes), made before the table was filled. */
struct pair {
  struct chan c[2];
};

static void make_pair(struct pair *s, int os_writer) {
  int p[2], sv[2];
  CHECK_EQ(pipe(p), 0);
  CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  s->c[0] = (struct chan){p[0], p[1], 0, 1, os_writer, 0};
  s->c[1] = (struct chan){sv[0], sv[1], 1, 2, os_writer, 0};
}

static void rounds(struct pair *s) {
  for (int k = 0; k < 2; k++) {
    struct chan *c = &s->c[k];
    ito_thread_t r, w;
    pthread_t ow;
    /* an OS thread first: the reader may run at once and block the only
     * worker, main's continuation with it (regain) */
    if (c->os_writer) CHECK_EQ(pthread_create(&ow, NULL, writer, c), 0);
    CHECK_EQ(ito_create(reader, c, &r), 0);
    if (!c->os_writer) CHECK_EQ(ito_create(writer, c, &w), 0);
    CHECK_EQ(ito_join(r, NULL), 0);
    if (c->os_writer)
      CHECK_EQ(pthread_join(ow, NULL), 0);
    else
      CHECK_EQ(ito_join(w, NULL), 0);
  }
}

/* ---- connect and accept ------------------------------------------------------------ */
static int lfd, cfd;
static struct sockaddr_in addr;

static void make_listener(void) {
  lfd = socket(AF_INET, SOCK_STREAM, 0);
  cfd = socket(AF_INET, SOCK_STREAM, 0);
  CHECK(lfd >= 0 && cfd >= 0);
  addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = 0};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_EQ(bind(lfd, (struct sockaddr *)&addr, sizeof addr), 0);
  CHECK_EQ(listen(lfd, 8), 0);
  socklen_t l = sizeof addr;
  CHECK_EQ(getsockname(lfd, (struct sockaddr *)&addr, &l), 0);
}

/* The table is full: the connect completes; the accept has a connection
 * waiting and no number for it, EMFILE, as libc's. */
static void *connect_accept(void *p) {
  (void)p;
  CHECK_EQ(ito_connect(cfd, (struct sockaddr *)&addr, sizeof addr), 0);
  CHECK_EQ(ito_accept(lfd, NULL, NULL), -1);
  CHECK_EQ(errno_now(), EMFILE);
  return NULL;
}

/* ---- a watchdog --------------------------------------------------------------------- */
static int finished;

static void *watchdog(void *p) {
  const char *what = p;
  for (int i = 0; i < 600 && !__atomic_load_n(&finished, __ATOMIC_ACQUIRE); i++) ms_sleep(100, 1);
  if (__atomic_load_n(&finished, __ATOMIC_ACQUIRE)) return NULL;
  fprintf(stderr, "test_io_fds: FAILED: %s (no end after 60 s)\n", what);
  fflush(stderr);
  _exit(1);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "";
  if (strcmp(part, "full") && strcmp(part, "regain")) {
    fprintf(stderr, "usage: test_io_fds full|regain\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int regain = !strcmp(part, "regain");
  pthread_t dog;
  CHECK_EQ(pthread_create(&dog, NULL, watchdog,
                          regain ? "the reader did not park once descriptors were free"
                                 : "a call that could not park blocked the program"),
           0);
  CHECK_EQ(ito_init(), 0);
  struct pair a, b;
  make_pair(&a, regain);
  make_pair(&b, 0);
  if (!regain) make_listener();
  fill_table(a.c[0].rd);
  if (!regain) { /* (first: the rounds close their channels, which frees numbers) */
    ito_thread_t t;
    CHECK_EQ(ito_create(connect_accept, NULL, &t), 0);
    CHECK_EQ(ito_join(t, NULL), 0);
  }
  rounds(&a);
  free_table();
  rounds(&b);
  if (!regain) {
    ito_close(cfd);
    ito_close(lfd);
  }
  __atomic_store_n(&finished, 1, __ATOMIC_RELEASE);
  CHECK_EQ(pthread_join(dog, NULL), 0);
  printf("io fds %s: passed\n", part);
  return 0;
}
