/* A poll source without a descriptor (docs/poll.md): requests that complete
 * outside the runtime, at a time of their own, as MPI requests do. Threads
 * wait for them parked on a queue; the runtime polls the source with
 * back-off while they wait, also when every worker would otherwise sleep
 * (ITO_SPIN_US=0), and the poll wakes them. Checks: every request is
 * completed and every thread woken, the source was polled, nothing is
 * left counted as waiting; registration refuses a source without a poll
 * function or a back-off. "nofds": the source is registered and the first
 * round runs while the table of descriptors is full, so the poll sleeper
 * has no epoll set and waits in slices; the table has room again for the
 * other rounds, where the sleeper makes its set. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../src/dropin/ito_dropin.h"
#include "check.h"
#include "fdtable.h"

#define NREQ 64

static struct request {
  long long due_ns; /* CLOCK_MONOTONIC: when it completes */
  int done;
} req[NREQ];
static int qlock;
static void *head, *tail;
static long polls;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Completes the due requests and wakes every waiter to check its own. */
static int poll_requests(void *arg) {
  (void)arg;
  __atomic_add_fetch(&polls, 1, __ATOMIC_RELAXED);
  long long now = now_ns();
  int completed = 0;
  for (int i = 0; i < NREQ; i++)
    if (!__atomic_load_n(&req[i].done, __ATOMIC_ACQUIRE) &&
        __atomic_load_n(&req[i].due_ns, __ATOMIC_RELAXED) <= now) {
      __atomic_store_n(&req[i].done, 1, __ATOMIC_RELEASE);
      completed++;
    }
  if (!completed) return 0;
  ito__dropin_lock(&qlock, ITO_DROPIN_LR_QUEUE);
  void *list = ito__dropin_wq_take(&head, &tail, -1);
  ito__dropin_unlock(&qlock);
  ito__dropin_wq_wake(list);
  return completed;
}

static struct ito_poll_source src = {.name = "requests",
                                     .fd = -1,
                                     .poll = poll_requests,
                                     .backoff_min_ns = 100 * 1000,
                                     .backoff_max_ns = 2 * 1000 * 1000};

static int is_done(void *p) {
  return __atomic_load_n(&((struct request *)p)->done, __ATOMIC_ACQUIRE);
}

/* Waits for request p: counted before the last check (invariant 2 of
 * poll.h), then parked until a poll completes it. */
static void *wait_request(void *p) {
  struct request *r = p;
  ito__dropin_poll_arrive(&src);
  for (;;) {
    ito__dropin_lock(&qlock, ITO_DROPIN_LR_QUEUE);
    if (ito__dropin_wq_wait(&qlock, &head, &tail, 0, CLOCK_MONOTONIC, NULL, is_done, r)) break;
  }
  ito__dropin_poll_leave(&src);
  return NULL;
}

/* The table of descriptors: full (the soft limit down to the highest open
 * one plus 1, the holes below filled with dups of 2), then as before. */
static struct rlimit old_limit;
static int dups[4096], ndups;

static void fill_table(void) {
  CHECK_EQ(getrlimit(RLIMIT_NOFILE, &old_limit), 0);
  int hi = fdtable_highest();
  CHECK(hi >= 0);
  struct rlimit rl = old_limit;
  rl.rlim_cur = (rlim_t)hi + 1;
  CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
  for (int fd; ndups < 4096 && (fd = dup(2)) >= 0;) dups[ndups++] = fd;
  CHECK_EQ(dup(2), -1);
  CHECK_EQ(errno, EMFILE);
}

static void free_table(void) {
  CHECK_EQ(setrlimit(RLIMIT_NOFILE, &old_limit), 0);
  for (int i = 0; i < ndups; i++) close(dups[i]);
  ndups = 0;
}

int main(int argc, char **argv) {
  int nofds = argc > 1 && !strcmp(argv[1], "nofds");
  if (nofds) fill_table();
  struct ito_poll_source bad = {.name = "bad", .fd = -1, .poll = poll_requests};
  CHECK_EQ(ito__dropin_poll_register(&bad), EINVAL); /* no back-off */
  bad.backoff_min_ns = 1000;
  bad.poll = NULL;
  CHECK_EQ(ito__dropin_poll_register(&bad), EINVAL); /* no poll function */
  CHECK_EQ(ito__dropin_poll_register(&src), 0);
  CHECK_EQ(ito_init(), 0);
  for (int round = 0; round < 3; round++) {
    long long t0 = now_ns();
    /* Atomic stores: a poll of the last round may still be running on a
     * worker (the source is polled until its last waiter has left). */
    for (int i = 0; i < NREQ; i++) {
      __atomic_store_n(&req[i].due_ns, t0 + (long long)(i % 8) * 3000000LL, /* 0 to 21 ms */
                       __ATOMIC_RELAXED);
      __atomic_store_n(&req[i].done, 0, __ATOMIC_RELEASE);
    }
    ito_thread_t th[NREQ];
    for (int i = 0; i < NREQ; i++) CHECK_EQ(ito_create(wait_request, &req[i], &th[i]), 0);
    for (int i = 0; i < NREQ; i++) CHECK_EQ(ito_join(th[i], NULL), 0);
    for (int i = 0; i < NREQ; i++) CHECK(req[i].done);
    CHECK(!head && !tail);
    if (nofds && round == 0) free_table();
  }
  CHECK(__atomic_load_n(&polls, __ATOMIC_RELAXED) > 0);
  CHECK_EQ(src.waiters, 0);
  CHECK_EQ(ito_finalize(), 0);
  printf("test_poll_source: %d requests x 3 rounds completed, %ld polls\n", NREQ, polls);
  puts("test_poll_source: OK");
  return 0;
}
