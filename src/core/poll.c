/* Poll sources and the poll sleeper's wait (invariants at the top of
 * poll.h). The sleeper waits in epoll_wait on an epoll set of its own that
 * holds the sources' descriptors (level-triggered) and an eventfd, the
 * kick; while the set cannot be made (descriptors ran out), in slices. */
#define _GNU_SOURCE
#include "poll.h"

#include "forkpart.h"
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
static int sleep_ep = -1, kick_fd = -1; /* invariant 4: both, or neither */
static unsigned set_gen;                /* sets made so far */
static unsigned waited_gen;             /* the last the poll sleeper has seen (its own) */

static long sys_epoll_wait(int e, struct epoll_event *ev, int n, int ms) {
  return SYS(SYS_epoll_pwait, e, ev, n, ms, NULL, (size_t)8);
}

/* Adds s's descriptor to the sleeper's set e; 0, or the error (EEXIST: it
 * is there already, which is no error). */
static int watch(int e, struct ito_poll_source *s) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s}; /* level-triggered */
  if (SYS(SYS_epoll_ctl, e, EPOLL_CTL_ADD, LOAD_RLX(&s->fd), &ev) == 0 || errno == EEXIST) return 0;
  return errno;
}

/* The sleeper's epoll set and its eventfd, with the descriptor of every
 * source registered so far (setup_lock held). 0, or EAGAIN when a
 * descriptor or the kernel's memory for it ran out: nothing is kept, and
 * the next call tries again (invariant 4). */
static int make_sleeper_set(void) {
  ITO_ASSERT(spin_held(&setup_lock) && (sleep_ep < 0) == (kick_fd < 0));
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
  int rc = SYS(SYS_epoll_ctl, e, EPOLL_CTL_ADD, k, &ev) == 0 ? 0 : EAGAIN;
  for (struct ito_poll_source *s = sources; s && !rc; s = s->next)
    if (LOAD_RLX(&s->fd) >= 0 && watch(e, s)) rc = EAGAIN;
  if (rc) {
    SYS(SYS_close, e);
    SYS(SYS_close, k);
    ito__own_fd_drop(e);
    ito__own_fd_drop(k);
    return rc;
  }
  STORE_REL(&kick_fd, k);
  STORE_REL(&sleep_ep, e);
  __atomic_add_fetch(&set_gen, 1, __ATOMIC_RELEASE); /* (invariant 4: the sleeper looks again) */
  return 0;
}

int ito__poll_register(struct ito_poll_source *s) {
  if (!s || !s->poll || (s->fd < 0 && (s->backoff_min_ns <= 0 || s->backoff_max_ns < 0)))
    return EINVAL;
  spin_lock(&setup_lock, LR_POLL_SETUP);
  int rc = make_sleeper_set();
  /* a back-off source needs no set: the poll sleeper waits in slices
   * without one (invariant 4) */
  if (s->fd < 0)
    rc = 0;
  else if (!rc && watch(sleep_ep, s))
    rc = EAGAIN;
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

int ito__poll_watch(struct ito_poll_source *s, int fd) {
  ITO_ASSERT(fd >= 0);
  spin_lock(&setup_lock, LR_POLL_SETUP);
  STORE_RLX(&s->fd, fd);
  int rc = make_sleeper_set(); /* (a new set holds it already) */
  if (!rc && watch(sleep_ep, s)) rc = EAGAIN;
  spin_unlock(&setup_lock);
  return rc;
}

void ito__poll_unwatch(struct ito_poll_source *s) { STORE_RLX(&s->fd, -1); }

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
  /* invariant 4: the waker's wake word (stored before this call) is seen
   * by a sleeper that looks after a set was made, or the kick finds it */
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  int k = LOAD_ACQ(&kick_fd);
  if (k < 0) return; /* no set: the sleeper waits in slices */
  uint64_t one = 1;
  /* a lost kick is a lost wake-up: retry on EINTR, although a write to a
   * non-blocking eventfd never sleeps and so is never interrupted today */
  while (SYS(SYS_write, k, &one, sizeof one) < 0 && errno == EINTR) {
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
    if (LOAD_RLX(&s->fd) >= 0) {
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
    if (LOAD_RLX(&s->fd) >= 0 || !LOAD_RLX(&s->waiters)) continue;
    if (!now) now = clock_ns(CLOCK_MONOTONIC);
    long long left = LOAD_RLX(&s->due_ns) - now;
    if (left < 0) left = 0;
    if (best < 0 || left < best) best = (long)left;
  }
  return best;
}

/* The poll sleeper's wait while there is no set (invariant 4): it tries to
 * make one; made (here or by anyone since it last looked), it returns
 * without waiting, after a fence that pairs with ito__poll_kick's, so
 * that its caller's next look at its wake word sees a waker whose kick
 * found no set. Without one it sleeps a slice (or less, for a timer or a
 * back-off source), then polls every source with waiters. */
#define SLICE_NS 1000000L
static int wait_without_set(long timeout_ns) {
  if (LOAD_ACQ(&sleep_ep) < 0) {
    spin_lock(&setup_lock, LR_POLL_SETUP);
    make_sleeper_set();
    spin_unlock(&setup_lock);
  }
  if (LOAD_ACQ(&sleep_ep) >= 0) {
    waited_gen = LOAD_ACQ(&set_gen);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return run_sources(true);
  }
  long ns = backoff_wait(timeout_ns);
  if (ns < 0 || ns > SLICE_NS) ns = SLICE_NS;
  struct timespec ts = ns_to_ts(ns);
  SYS(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL); /* (EINTR: the same) */
  return run_sources(true);
}

int ito__poll_wait(long timeout_ns) {
  if (UNLIKELY(LOAD_ACQ(&set_gen) != waited_gen || LOAD_ACQ(&sleep_ep) < 0))
    return wait_without_set(timeout_ns);
  ITO_ASSERT(LOAD_ACQ(&kick_fd) >= 0); /* invariant 4: published before the set */
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

/* A fresh epoll set (epoll) or eventfd in place of the parent's old, in
 * the child after fork (one thread): old is closed first, so that a full table
 * has room; -1 if none could be made (old is then no longer the
 * runtime's). */
static int renew(int old, bool epoll) {
  SYS(SYS_close, old);
  int fd = epoll ? (int)SYS(SYS_epoll_create1, EPOLL_CLOEXEC)
                 : (int)SYS(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    ito__own_fd_drop(old);
    return -1;
  }
  return ito__own_fd_renew(old, fd);
}

/* After fork, in the child: the sleeper's epoll set and eventfd are the
 * parent's (shared files); the child gets its own, under the same numbers
 * where it can, with every source's descriptor again (a source replaces
 * its own first: the I/O layer's epoll). Nobody waits on a source any
 * more. Where the kernel refuses (no memory, the system's table of files
 * full) the child goes on without a set (invariant 4), and makes one
 * later. */
static void poll_fork_child(struct worker *w, struct ithread *self) {
  (void)w, (void)self;
  setup_lock = 0;
  for (struct ito_poll_source *s = sources; s; s = s->next) s->waiters = 0;
  if (sleep_ep < 0) return;
  int old_e = sleep_ep, old_k = kick_fd;
  sleep_ep = kick_fd = -1;
  /* one after the other: the second's fresh number cannot be the first's old */
  int e = renew(old_e, true);
  int k = renew(old_k, false);
  int rc = e < 0 || k < 0 ? EAGAIN : 0;
  if (!rc) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KICK_TAG};
    if (SYS(SYS_epoll_ctl, e, EPOLL_CTL_ADD, k, &ev) != 0) rc = EAGAIN;
    for (struct ito_poll_source *s = sources; s && !rc; s = s->next)
      if (s->fd >= 0 && watch(e, s)) rc = EAGAIN;
  }
  if (rc) {
    for (int i = 0; i < 2; i++) {
      int fd = i ? k : e;
      if (fd < 0) continue;
      SYS(SYS_close, fd);
      ito__own_fd_drop(fd);
    }
    return;
  }
  kick_fd = k;
  sleep_ep = e;
  set_gen++;
}
ITO_FORK_PART(poll_fork, .child_order = FORK_POLL, .child = poll_fork_child);
