/* Data through pipes and socketpairs while SIGALRM arrives every
 * millisecond (setitimer(ITIMER_REAL)), handled without SA_RESTART. A
 * process-directed signal goes to the main thread whenever it can take it
 * (here, blocked in pthread_join, which restarts by itself), so the
 * SIGALRM handler passes a SIGUSR1 on to one of the transfer threads in
 * turn (tgkill; its handler, also without SA_RESTART, only counts): their
 * blocked reads, writes, polls and sleeps return EINTR natively, and
 * writes short counts. The program does what real programs do: it retries
 * on EINTR and carries on after a short write. Under libito-pthread.so a
 * parked thread is never interrupted; the signals land on whichever worker
 * OS thread the tid names (the one the thread started on) and cut short
 * the runtime's own waits (epoll_wait, futex, the eventfd), which must
 * absorb them. Either way every byte must arrive once, in order: each pair
 * prints its byte count and the FNV-1a of the bytes, which the reader
 * checks against the writer's. Signal and EINTR counts go to stderr only
 * (they depend on timing). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "eintr"
#include "dropin.h"

#define PIPES 3
#define SOCKS 3
#define PAIRS (PIPES + SOCKS)
#define TOTAL (6u << 20) /* bytes per pair */

static long ticks;            /* SIGALRM handler runs */
static long relayed;          /* SIGUSR1 handler runs */
static long eintrs;           /* calls that returned EINTR */
static pid_t tids[2 * PAIRS]; /* of the transfer threads while they run (0: none) */

/* Async-signal-safe only: atomics, getpid, tgkill; errno is kept. */
static void on_alarm(int sig) {
  (void)sig;
  int e = errno;
  long k = __atomic_fetch_add(&ticks, 1, __ATOMIC_RELAXED);
  pid_t t = __atomic_load_n(&tids[k % (2 * PAIRS)], __ATOMIC_RELAXED);
  if (t) syscall(SYS_tgkill, getpid(), t, SIGUSR1);
  errno = e;
}
static void on_usr1(int sig) {
  (void)sig;
  __atomic_fetch_add(&relayed, 1, __ATOMIC_RELAXED);
}
static void enter(int slot) {
  __atomic_store_n(&tids[slot], (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
}
static void leave(int slot) { __atomic_store_n(&tids[slot], 0, __ATOMIC_RELAXED); }

static void interrupted(void) { __atomic_fetch_add(&eintrs, 1, __ATOMIC_RELAXED); }

static uint64_t fnv_step(uint64_t h, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}
#define FNV_INIT 1469598103934665603ULL

/* The bytes of pair i: a xorshift stream seeded by i, so the writer need
 * not keep them. */
struct gen {
  uint64_t s;
};
static unsigned char gen_byte(struct gen *g) {
  g->s ^= g->s << 13;
  g->s ^= g->s >> 7;
  g->s ^= g->s << 17;
  return (unsigned char)(g->s >> 24);
}
static uint64_t rnd(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return *s >> 33;
}

struct pair {
  int fd[2];
  int sock;
  uint64_t sent_hash, got_hash;
  size_t got;
};
static struct pair pairs[PAIRS];

/* All of n bytes, however often a signal cuts the call short. */
static void write_fully(struct pair *p, const unsigned char *b, size_t n, int use_vec) {
  while (n) {
    ssize_t k;
    if (use_vec) { /* writev in two pieces */
      struct iovec v[2] = {{(void *)b, n / 2}, {(void *)(b + n / 2), n - n / 2}};
      k = writev(p->fd[1], v, 2);
    } else if (p->sock) {
      k = send(p->fd[1], b, n, 0);
    } else {
      k = write(p->fd[1], b, n);
    }
    if (k < 0) {
      if (errno_now() == EINTR) {
        interrupted();
        continue;
      }
      FAIL("write to pair %d: %s", (int)(p - pairs), strerror(errno_now()));
    }
    b += k;
    n -= (size_t)k;
  }
}

static void *writer(void *arg) {
  struct pair *p = arg;
  int i = (int)(p - pairs);
  enter(PAIRS + i);
  struct gen g = {0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1)};
  uint64_t r = 1000 + (uint64_t)i;
  enum { BUF = 100000 }; /* on the heap: more than a 128 KiB ito stack should hold */
  unsigned char *buf = malloc(BUF);
  if (!buf) FAIL("malloc");
  uint64_t h = FNV_INIT;
  for (size_t done = 0; done < TOTAL;) {
    size_t n = 1 + rnd(&r) % BUF;
    if (n > TOTAL - done) n = TOTAL - done;
    for (size_t k = 0; k < n; k++) buf[k] = gen_byte(&g);
    h = fnv_step(h, buf, n);
    write_fully(p, buf, n, (rnd(&r) & 3) == 0);
    done += n;
    if ((rnd(&r) & 63) == 0) { /* now and then a pause, which signals cut short too */
      struct timespec d = {0, 200000}, rem;
      while (nanosleep(&d, &rem) != 0 && errno_now() == EINTR) {
        interrupted();
        d = rem;
      }
    }
  }
  free(buf);
  p->sent_hash = h;
  /* shutdown, not close: the reader sees the end of the data either way */
  if (p->sock)
    shutdown(p->fd[1], SHUT_WR);
  else
    close(p->fd[1]);
  leave(PAIRS + i);
  return NULL;
}

static void *reader(void *arg) {
  struct pair *p = arg;
  int i = (int)(p - pairs);
  enter(i);
  uint64_t r = 5000 + (uint64_t)i;
  unsigned char buf[9000];
  uint64_t h = FNV_INIT;
  size_t got = 0;
  for (;;) {
    size_t n = 1 + rnd(&r) % sizeof buf;
    ssize_t k;
    int how = (int)(rnd(&r) % 4);
    if (how == 0) { /* poll first: natively cut short by signals even with SA_RESTART */
      struct pollfd f = {p->fd[0], POLLIN, 0};
      int pr = poll(&f, 1, -1);
      if (pr < 0) {
        if (errno_now() != EINTR) FAIL("poll on pair %d: %s", i, strerror(errno_now()));
        interrupted();
        continue;
      }
      if (pr != 1 || !(f.revents & (POLLIN | POLLHUP))) FAIL("poll on pair %d gave %d", i, pr);
    }
    if (how == 1) {
      struct iovec v[3] = {
          {buf, n / 3}, {buf + n / 3, n / 3}, {buf + 2 * (n / 3), n - 2 * (n / 3)}};
      k = readv(p->fd[0], v, 3);
    } else if (how == 2 && p->sock) {
      k = recv(p->fd[0], buf, n, 0);
    } else {
      k = read(p->fd[0], buf, n);
    }
    if (k < 0) {
      if (errno_now() == EINTR) {
        interrupted();
        continue;
      }
      FAIL("read from pair %d: %s", i, strerror(errno_now()));
    }
    if (k == 0) break;
    h = fnv_step(h, buf, (size_t)k);
    got += (size_t)k;
  }
  leave(i);
  p->got = got;
  p->got_hash = h;
  return NULL;
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART: blocked calls fail with EINTR */
  if (sigaction(SIGALRM, &sa, NULL) != 0) FAIL("sigaction");
  sa.sa_handler = on_usr1;
  if (sigaction(SIGUSR1, &sa, NULL) != 0) FAIL("sigaction");
  signal(SIGPIPE, SIG_IGN);

  for (int i = 0; i < PAIRS; i++) {
    pairs[i].sock = i >= PIPES;
    if (pairs[i].sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[i].fd) : pipe(pairs[i].fd))
      FAIL("pipe or socketpair %d", i);
  }
  struct itimerval it = {{0, 1000}, {0, 1000}};
  if (setitimer(ITIMER_REAL, &it, NULL) != 0) FAIL("setitimer");

  pthread_t w[PAIRS], rd[PAIRS];
  for (int i = 0; i < PAIRS; i++) {
    must("pthread_create", pthread_create(&rd[i], NULL, reader, &pairs[i]));
    must("pthread_create", pthread_create(&w[i], NULL, writer, &pairs[i]));
  }
  for (int i = 0; i < PAIRS; i++) {
    must("pthread_join", pthread_join(w[i], NULL));
    must("pthread_join", pthread_join(rd[i], NULL));
  }
  /* the handler must have run: keep the timer going until it has, a few
   * times (a sleep it cuts short is retried) */
  while (__atomic_load_n(&ticks, __ATOMIC_RELAXED) < 5) {
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);

  uint64_t all = FNV_INIT;
  size_t total = 0;
  for (int i = 0; i < PAIRS; i++) {
    struct pair *p = &pairs[i];
    if (p->got != TOTAL) FAIL("pair %d: %zu bytes arrived, %u sent", i, p->got, TOTAL);
    if (p->got_hash != p->sent_hash) FAIL("pair %d: the bytes arrived changed", i);
    printf("%s %d: %zu bytes, fnv1a %016llx\n", p->sock ? "socketpair" : "pipe", i, p->got,
           (unsigned long long)p->got_hash);
    all = fnv_step(all, (const unsigned char *)&p->got_hash, sizeof p->got_hash);
    total += p->got;
    close(p->fd[0]);
    if (p->sock) close(p->fd[1]);
  }
  printf("total %zu bytes, combined %016llx\n", total, (unsigned long long)all);
  fprintf(stderr, "eintr: %ld SIGALRM and %ld SIGUSR1 handled, %ld calls returned EINTR\n",
          __atomic_load_n(&ticks, __ATOMIC_RELAXED), __atomic_load_n(&relayed, __ATOMIC_RELAXED),
          __atomic_load_n(&eintrs, __ATOMIC_RELAXED));
  printf("ok\n");
  return 0;
}
