/* Poll sources and the poll sleeper's wait (invariants at the top of
 * poll.h). The sleeper waits in epoll_wait on an epoll set of its own that
 * holds the sources' descriptors (level-triggered) and an eventfd, the
 * kick. */
#define _GNU_SOURCE
#include "poll.h"

#include "idle.h"
#include "os.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SYS(...) ito__os.syscall(__VA_ARGS__)
#define KICK_TAG (~0ULL)

static struct ito_poll_source *sources; /* invariant 1: prepended, never removed */
static int setup_lock;
static int sleep_ep = -1, kick_fd = -1;

static long sys_epoll_wait(int e, struct epoll_event *ev, int n, int ms) {
  return SYS(SYS_epoll_pwait, e, ev, n, ms, NULL, (size_t)8);
}

/* The sleeper's epoll set and its eventfd, made at the first registration
 * (setup_lock held). */
static int make_sleeper_set(void) {
  if (sleep_ep >= 0) return 0;
  int e = (int)SYS(SYS_epoll_create1, EPOLL_CLOEXEC);
  int k = (int)SYS(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e < 0 || k < 0) {
    if (e >= 0) SYS(SYS_close, e);
    if (k >= 0) SYS(SYS_close, k);
    return EAGAIN;
  }
  e = ito__own_fd_take(e);
  k = ito__own_fd_take(k);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KICK_TAG}; /* level-triggered */
  if (SYS(SYS_epoll_ctl, e, EPOLL_CTL_ADD, k, &ev) != 0) return EAGAIN;
  kick_fd = k;
  __atomic_store_n(&sleep_ep, e, __ATOMIC_RELEASE);
  return 0;
}

int ito__poll_register(struct ito_poll_source *s) {
  if (!s || !s->poll || (s->fd < 0 && (s->backoff_min_ns <= 0 || s->backoff_max_ns < 0)))
    return EINVAL;
  spin_lock(&setup_lock);
  int rc = make_sleeper_set();
  if (!rc && s->fd >= 0) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s}; /* level-triggered */
    if (SYS(SYS_epoll_ctl, sleep_ep, EPOLL_CTL_ADD, s->fd, &ev) != 0) rc = EINVAL;
  }
  if (!rc) {
    s->waiters = 0;
    s->backoff_ns = s->backoff_min_ns;
    if (s->backoff_max_ns < s->backoff_min_ns) s->backoff_max_ns = s->backoff_min_ns;
    s->due_ns = 0;
    s->next = sources;
    __atomic_store_n(&sources, s, __ATOMIC_RELEASE);
  }
  spin_unlock(&setup_lock);
  return rc;
}

void ito__poll_arrive(struct ito_poll_source *s) {
  __atomic_fetch_add(&s->waiters, 1, __ATOMIC_RELAXED);
  if (s->fd < 0) { /* polled soon, then with back-off */
    STORE_RLX(&s->backoff_ns, s->backoff_min_ns);
    STORE_RLX(&s->due_ns, 0);
  }
  ito__idle_waiter_arrives();
}

void ito__poll_leave(struct ito_poll_source *s) {
  int old = __atomic_fetch_sub(&s->waiters, 1, __ATOMIC_RELAXED);
  ITO_ASSERT(old > 0);
  (void)old;
  ito__idle_waiter_leaves();
}

void ito__poll_kick(void) {
  uint64_t one = 1;
  /* a lost kick is a lost wake-up: retry on EINTR, although a write to a
   * non-blocking eventfd never sleeps and so is never interrupted today */
  while (SYS(SYS_write, LOAD_ACQ(&kick_fd), &one, sizeof one) < 0 && errno == EINTR) {
  }
}

/* A back-off source is due: poll it, and double its gap if it found
 * nothing. */
static int poll_backoff(struct ito_poll_source *s, long long now) {
  if (now < LOAD_RLX(&s->due_ns)) return 0;
  int n = s->poll(s->arg);
  long gap = n > 0 ? s->backoff_min_ns : LOAD_RLX(&s->backoff_ns) * 2;
  if (gap > s->backoff_max_ns) gap = s->backoff_max_ns;
  STORE_RLX(&s->backoff_ns, gap);
  STORE_RLX(&s->due_ns, now + gap);
  return n;
}

/* Polls the sources with waiters: those with a descriptor when fds, the
 * back-off ones when due. */
static int run_sources(bool fds) {
  int n = 0;
  long long now = 0;
  for (struct ito_poll_source *s = LOAD_ACQ(&sources); s; s = s->next) {
    if (!LOAD_RLX(&s->waiters)) continue;
    if (s->fd >= 0) {
      if (fds) n += s->poll(s->arg);
    } else {
      if (!now) now = clock_ns(CLOCK_MONOTONIC);
      n += poll_backoff(s, now);
    }
  }
  return n;
}

int ito__poll_run(void) { return run_sources(true); }

/* Nanoseconds until the first back-off source with waiters is due, at most
 * limit (-1: no limit); -1 if none and no limit. */
static long backoff_wait(long limit) {
  long long now = 0;
  long best = limit;
  for (struct ito_poll_source *s = LOAD_ACQ(&sources); s; s = s->next) {
    if (s->fd >= 0 || !LOAD_RLX(&s->waiters)) continue;
    if (!now) now = clock_ns(CLOCK_MONOTONIC);
    long long left = LOAD_RLX(&s->due_ns) - now;
    if (left < 0) left = 0;
    if (best < 0 || left < best) best = (long)left;
  }
  return best;
}

int ito__poll_wait(long timeout_ns) {
  ITO_ASSERT(LOAD_ACQ(&sleep_ep) >= 0); /* a waiter exists, so a source was registered */
  timeout_ns = backoff_wait(timeout_ns);
  struct epoll_event ev[8];
  int got;
  if (timeout_ns >= 0) {
    struct timespec ts = ns_to_ts(timeout_ns);
    got = (int)SYS(SYS_epoll_pwait2, sleep_ep, ev, 8, &ts, NULL, 0);
    if (got < 0 && errno == ENOSYS)
      got = (int)sys_epoll_wait(sleep_ep, ev, 8, (int)((timeout_ns + 999999) / 1000000));
  } else {
    got = (int)sys_epoll_wait(sleep_ep, ev, 8, -1);
  }
  /* A signal handled on this OS thread ends the wait with EINTR: nothing is
   * lost, the readiness stays queued and the eventfd is level-triggered. */
  int n = 0;
  for (int i = 0; i < got; i++) {
    if (ev[i].data.u64 == KICK_TAG) {
      uint64_t v; /* drain: a stale count only costs a loop */
      SYS(SYS_read, kick_fd, &v, sizeof v);
      continue;
    }
    struct ito_poll_source *s = ev[i].data.ptr;
    n += s->poll(s->arg);
  }
  return n + run_sources(false);
}

/* After fork, in the child: the sleeper's epoll set and eventfd are the
 * parent's (shared files); the child gets its own under the same numbers,
 * with every source's descriptor again (a source replaces its own first:
 * the I/O layer's epoll). Nobody waits on a source any more. */
void ito__poll_after_fork(void) {
  setup_lock = 0;
  for (struct ito_poll_source *s = sources; s; s = s->next) s->waiters = 0;
  if (sleep_ep < 0) return;
  int e = (int)SYS(SYS_epoll_create1, EPOLL_CLOEXEC);
  int k = (int)SYS(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (e < 0 || k < 0 || SYS(SYS_dup3, e, sleep_ep, O_CLOEXEC) < 0 ||
      SYS(SYS_dup3, k, kick_fd, O_CLOEXEC) < 0)
    ito__fatal("fork: cannot give the child its own poller (out of descriptors?)");
  SYS(SYS_close, e);
  SYS(SYS_close, k);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KICK_TAG};
  SYS(SYS_epoll_ctl, sleep_ep, EPOLL_CTL_ADD, kick_fd, &ev);
  for (struct ito_poll_source *s = sources; s; s = s->next) {
    if (s->fd < 0) continue;
    struct epoll_event se = {.events = EPOLLIN, .data.ptr = s};
    SYS(SYS_epoll_ctl, sleep_ep, EPOLL_CTL_ADD, s->fd, &se);
  }
}
