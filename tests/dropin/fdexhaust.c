/* A program at its limit of descriptors still gets blocking I/O as glibc
 * gives it. Two threads pass values through a pipe and a socketpair: the
 * reader says which value it is about to read (a condition variable), and
 * the writer, once told, sleeps 2 ms and writes it, so the read usually
 * waits; half the reads poll first. Every value is checked, and the end of
 * each channel: a read after the writer closed gives 0, a write after the
 * reader closed EPIPE.
 *
 *   - tiny (in a child, before any thread): the soft limit of descriptors
 *     is lowered to the highest open one plus 2 and the holes below are
 *     filled but one, so that when the first thread starts the runtime it
 *     has too few descriptors to set up with; the program must still have
 *     that one (a runtime that kept what it could not use would take it). The reads block their
 * worker (libito-pthread.so cannot park them) and other threads go on. Then a fork, whose child
 * does the same; then the limit goes back up, and the same again (where the runtime can set up
 * again).
 *   - full (main, last): the runtime starts with room, then the table is
 *     filled (dup until EMFILE); the same rounds, a fork whose child does
 *     them, and again after the dups are closed.
 *
 * Natively every read waits in the kernel and returns; before the runtime
 * knew how to go on without descriptors it stopped the program ("ito:
 * cannot set up the I/O poller", exit status 134). With one worker, a read
 * that blocked its worker without the monitor knowing would hang the
 * writer: the watchdog ends such a run. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define DROPIN_PROG "fdexhaust"
#include "dropin.h"
#include "../fdtable.h"

#define ROUNDS 12

struct chan {
  int rd, wr;
};

/* One pipe and one socketpair, made while there is room. */
struct chans {
  struct chan c[2];
};
static const char *const chan_name[2] = {"pipe", "socketpair"};

static void make_chans(struct chans *s) {
  int p[2], sv[2];
  if (pipe(p)) FAIL("pipe: %s", code_name(errno));
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) FAIL("socketpair: %s", code_name(errno));
  s->c[0] = (struct chan){p[0], p[1]};
  s->c[1] = (struct chan){sv[0], sv[1]};
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int want; /* the value the reader is about to read (+1; 0: none yet) */

struct job {
  struct chan *c;
  const char *what;
  int use_poll, end; /* end: 1 the writer closes after the rounds, 2 the reader */
};

static uint64_t value(int i) { return (uint64_t)i * 2654435761u + 7; }

static void wait_for(int i) {
  pthread_mutex_lock(&mu);
  while (want < i) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

static void announce(int i) {
  pthread_mutex_lock(&mu);
  want = i;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void *writer(void *p) {
  struct job *j = p;
  for (int i = 1; i <= ROUNDS + 1; i++) {
    wait_for(i);
    struct timespec ts = {0, 2000000}; /* the reader is most likely in its read by now */
    nanosleep(&ts, NULL);
    if (i == ROUNDS + 1) break;
    uint64_t v = value(i);
    ssize_t k = write(j->c->wr, &v, sizeof v);
    if (k != (ssize_t)sizeof v) FAIL("%s: write %d: %s", j->what, i, io_result(k, errno_now()));
  }
  if (j->end == 1) {
    close(j->c->wr); /* the reader's last read waits for this */
  } else {
    wait_for(ROUNDS + 2); /* the reader closed its end */
    uint64_t v = 0;
    ssize_t k = write(j->c->wr, &v, sizeof v);
    if (k != -1 || errno_now() != EPIPE)
      FAIL("%s: write after the reader closed: %s, not EPIPE", j->what, io_result(k, errno_now()));
    close(j->c->wr);
  }
  return NULL;
}

static void *reader(void *p) {
  struct job *j = p;
  for (int i = 1; i <= ROUNDS + 1; i++) {
    if (i == ROUNDS + 1 && j->end == 2) { /* the writer writes into a closed pipe */
      close(j->c->rd);
      announce(ROUNDS + 2);
      return NULL;
    }
    announce(i);
    if (j->use_poll) {
      struct pollfd pf = {j->c->rd, POLLIN, 0};
      int k = poll(&pf, 1, -1);
      if (k != 1 || !(pf.revents & (POLLIN | POLLHUP)))
        FAIL("%s: poll %d gave %d, revents %#x (%s)", j->what, i, k, (unsigned)pf.revents,
             code_name(errno_now()));
    }
    uint64_t v = 0;
    ssize_t k = read(j->c->rd, &v, sizeof v);
    if (i == ROUNDS + 1) {
      if (k != 0)
        FAIL("%s: read after the writer closed: %s, not 0", j->what, io_result(k, errno_now()));
    } else if (k != (ssize_t)sizeof v || v != value(i)) {
      FAIL("%s: read %d: %s, value %llu", j->what, i, io_result(k, errno_now()),
           (unsigned long long)v);
    }
  }
  close(j->c->rd);
  return NULL;
}

/* Both channels, one read with poll first and the other without; the
 * channels are used up (closed at the end). */
static void rounds(struct chans *s, const char *phase) {
  for (int k = 0; k < 2; k++) {
    char what[96];
    snprintf(what, sizeof what, "%s, %s", phase, chan_name[k]);
    struct job j = {&s->c[k], what, k, 1 + k};
    want = 0;
    pthread_t r, w;
    must("pthread_create (reader)", pthread_create(&r, NULL, reader, &j));
    must("pthread_create (writer)", pthread_create(&w, NULL, writer, &j));
    must("pthread_join (reader)", pthread_join(r, NULL));
    must("pthread_join (writer)", pthread_join(w, NULL));
  }
  printf("%s: %d values through a pipe (read) and a socketpair (poll, read), and their ends: OK\n",
         phase, ROUNDS);
  fflush(stdout);
}

/* Fills every free number below the soft limit with a dup of fd0; returns
 * them. */
static int *fill(int fd0, int *n) {
  int cap = 1024, *fds = malloc(sizeof *fds * (size_t)cap);
  *n = 0;
  for (;;) {
    int fd = dup(fd0);
    if (fd < 0) {
      if (errno != EMFILE) FAIL("dup: %s, not EMFILE", code_name(errno));
      return fds;
    }
    if (*n == cap && !(fds = realloc(fds, sizeof *fds * (size_t)(cap *= 2)))) FAIL("realloc");
    fds[(*n)++] = fd;
  }
}

static void unfill(int *fds, int n) {
  for (int i = 0; i < n; i++) close(fds[i]);
  free(fds);
}

/* 0 under qemu-user ("no-fork" argument): qemu-user 7.2 aborts in a child
 * forked from a thread other than the first once that child creates a
 * thread (qemu_plugin_vcpu_init_hook), natively too, and preloaded the
 * program forks from an ito thread on a worker. */
static int fork_ok = 1;

/* A child that runs the rounds on channels it inherited; the parent waits. */
static void in_child(struct chans *s, const char *phase) {
  fflush(stdout);
  if (!fork_ok) {
    printf("%s: SKIPPED (no-fork: the emulator cannot create threads in a forked child)\n", phase);
    fflush(stdout);
    for (int k = 0; k < 2; k++) {
      close(s->c[k].rd);
      close(s->c[k].wr);
    }
    return;
  }
  pid_t pid = fork();
  if (pid < 0) FAIL("fork: %s", code_name(errno));
  if (pid == 0) {
    rounds(s, phase);
    exit(0);
  }
  for (int k = 0; k < 2; k++) { /* the parent's copies */
    close(s->c[k].rd);
    close(s->c[k].wr);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid: %s", code_name(errno));
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    FAIL("%s: the child ended with %s %d", phase, WIFEXITED(st) ? "status" : "signal",
         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void *nothing(void *p) { return p; }

static void tiny(void) {
  pid_t dog = dropin_watchdog(100, "tiny: the rounds did not end");
  struct chans a, b, c;
  make_chans(&a);
  make_chans(&b);
  make_chans(&c);
  struct rlimit old, rl;
  if (getrlimit(RLIMIT_NOFILE, &old)) FAIL("getrlimit");
  rl = old;
  int hi = fdtable_highest();
  if (hi < 0) FAIL("opendir /proc/self/fd: %s", code_name(errno));
  rl.rlim_cur = (rlim_t)hi + 2; /* (one number free at least) */
  if (setrlimit(RLIMIT_NOFILE, &rl)) FAIL("setrlimit: %s", code_name(errno));
  int n, *fds = fill(a.c[0].rd, &n);
  if (n < 1) FAIL("no hole to fill below the limit");
  close(fds[--n]);
  /* the first thread starts the runtime, with one descriptor to spare, not
   * enough to set up with: what it made is given back */
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, nothing, NULL));
  must("pthread_join", pthread_join(t, NULL));
  if ((fds[n++] = dup(a.c[0].rd)) < 0) FAIL("dup of the last free number: %s", code_name(errno));
  if (dup(a.c[0].rd) != -1 || errno != EMFILE) FAIL("the table has room after it was filled");
  rounds(&a, "tiny");
  in_child(&b, "tiny, forked");
  if (setrlimit(RLIMIT_NOFILE, &old)) FAIL("setrlimit back: %s", code_name(errno));
  rounds(&c, "tiny, limit raised");
  unfill(fds, n);
  dropin_watchdog_end(dog);
}

static void full(void) {
  pid_t dog = dropin_watchdog(100, "full: the rounds did not end");
  struct chans a, b, c;
  make_chans(&a);
  make_chans(&b);
  make_chans(&c);
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, nothing, NULL));
  must("pthread_join", pthread_join(t, NULL));
  int n, *fds = fill(a.c[0].rd, &n);
  rounds(&a, "full");
  in_child(&b, "full, forked");
  unfill(fds, n);
  rounds(&c, "full, dups closed");
  dropin_watchdog_end(dog);
}

int main(int argc, char **argv) {
  fork_ok = !(argc > 1 && strcmp(argv[1], "no-fork") == 0);
  signal(SIGPIPE, SIG_IGN);
  fflush(stdout);
  pid_t pid = fork(); /* tiny needs a process whose runtime has not started */
  if (pid < 0) FAIL("fork: %s", code_name(errno));
  if (pid == 0) {
    tiny();
    exit(0);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid: %s", code_name(errno));
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    FAIL("tiny: the child ended with %s %d", WIFEXITED(st) ? "status" : "signal",
         WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  full();
  return 0;
}
