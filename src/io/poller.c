/* The I/O layer's epoll instance, which is a poll source of the core
 * (src/core/poll.h): registering fds, taking the waiters of fds that
 * became ready, and parking a thread on a record. Invariants at the top of
 * io.h; design in docs/io.md. */
#define _GNU_SOURCE
#include "io.h"

#include "../core/config.h"
#include "../core/forkpart.h"
#include "../core/monitor.h"
#include "../core/poll.h"
#include "../core/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/uio.h>

/* ITO_IO_PIPE_NOWAIT (config.h) */
static struct { int no_pipe_nowait; /* 1: pipes polled before each call */ } io_cfg;
static const struct ito_cfg_choice nowait_words[] = {{"auto", 0}, {"0", 1}, {0, 0}};
static const struct ito_cfg io_rows[] = {
    {.name = "ITO_IO_PIPE_NOWAIT",
     .kind = ITO_CFG_CHOICE,
     .dst = &io_cfg.no_pipe_nowait,
     .choices = nowait_words,
     .dflt = "auto",
     .what = "0: pipes are polled before each call instead of RWF_NOWAIT"},
};
ITO_CONFIG_MODULE(io_config, io_rows, io_cfg, NULL, NULL);

#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

/* invariant 6: ep >= 0 only once the poll sleeper's set watches it */
static int ep = -1;      /* the epoll instance the calls park on */
static int ep_made = -1; /* the instance, made (in a child after fork, not yet watched) */
static bool linked;      /* io_source is registered with the core */
static int setup_lock, poll_lock;
static bool pipe_nowait; /* RWF_NOWAIT works on pipes (Linux 6.4 and later) */
static bool probed;

static int io_poll(void *arg);
static struct ito_poll_source io_source = {.name = "epoll", .fd = -1, .poll = io_poll};

/* Whether RWF_NOWAIT works on pipes; false, and *done false, where no pipe
 * can be made to ask (out of descriptors). */
static bool probe_pipe_nowait(bool *done) {
  *done = true;
  if (io_cfg.no_pipe_nowait) return false;
  int p[2];
  if (SYS(SYS_pipe2, p, O_CLOEXEC) != 0) {
    *done = false;
    return false;
  }
  char c;
  struct iovec iov = {&c, 1};
  long r = SYS(SYS_preadv2, p[0], &iov, 1, -1L, 0L, RWF_NOWAIT);
  bool ok = r < 0 && errno == EAGAIN;
  SYS(SYS_close, p[0]);
  SYS(SYS_close, p[1]);
  return ok;
}

/* Makes the epoll instance and its place in the poll sleeper's set (the
 * set itself if need be). Where a descriptor or the kernel's memory runs
 * out it says no and gives back what it made for the instance (the
 * program's table is as it was: invariant 5); the next call that would
 * park tries again. */
static __attribute__((noinline)) bool setup_slow(void) {
  spin_lock(&setup_lock, LR_IO_SETUP);
  if (ep < 0) {
    /* known before the first call that may park; without a pipe to ask
     * with, no, and asked again at the next set-up */
    if (!probed) pipe_nowait = probe_pipe_nowait(&probed);
    int e = ep_made;
    if (e < 0 && (e = (int)SYS(SYS_epoll_create1, EPOLL_CLOEXEC)) >= 0)
      e = ito__own_fd_take(e); /* out of the way of closefrom(3) and dup2 onto small numbers */
    if (e >= 0) {
      int rc;
      if (linked) {
        rc = ito__poll_watch(&io_source, e);
      } else {
        io_source.fd = e;
        rc = ito__poll_register(&io_source);
        linked = rc == 0;
      }
      if (rc == 0) {
        ep_made = e;
        __atomic_store_n(&ep, e, __ATOMIC_RELEASE);
      } else {
        if (linked) ito__poll_unwatch(&io_source);
        SYS(SYS_close, e);
        ito__own_fd_drop(e);
        ep_made = -1;
      }
    }
  }
  bool ok = ep >= 0;
  spin_unlock(&setup_lock);
  return ok;
}

bool ito__io_setup(void) {
  if (LIKELY(__atomic_load_n(&ep, __ATOMIC_ACQUIRE) >= 0)) return true;
  return setup_slow();
}

bool ito__io_pipe_nowait(void) { return LOAD_RLX(&pipe_nowait); }

int ito__io_register_locked(struct fdrec *r, int fd) {
  ITO_ASSERT(spin_held(&r->lock) && LOAD_RLX(&ep) >= 0);
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                           .data.u64 = (uint64_t)(uint32_t)fd | (uint64_t)r->gen << 32};
  if (SYS(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
    int e = errno;
    if (e == EEXIST && SYS(SYS_epoll_ctl, ep, EPOLL_CTL_MOD, fd, &ev) == 0) {
      r->registered = 1;
      return 0;
    }
    if (e == EEXIST) e = errno;
    /* the kernel's memory or the user's epoll watches ran out: not this
     * file's fault, and the next wait tries again */
    return e == ENOMEM || e == ENOSPC ? ENOSPC : ENOTSUP;
  }
  r->registered = 1;
  return 0;
}

void ito__io_block_begin(void) { ito__monitor_kwait_begin(NULL, NULL, KWAIT_ON); }
void ito__io_block_end(void) { ito__monitor_kwait_end(); }

/* Takes the waiters of the fds that became ready; returns how many threads
 * it made ready. */
static int dispatch(struct epoll_event *ev, int n) {
  int woke = 0;
  for (int i = 0; i < n; i++) {
    uint64_t d = ev[i].data.u64;
    struct fdrec *r = ito__io_rec((int)(d & 0xFFFFFFFFu));
    if (!r) continue;
    uint32_t e = ev[i].events;
    waiter *lists[2] = {NULL, NULL};
    spin_lock(&r->lock, LR_QUEUE_OUTER);
    if (r->gen == (uint32_t)(d >> 32)) {
      if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) {
        __atomic_store_n(&r->seq[RD], r->seq[RD] + 1, __ATOMIC_RELEASE);
        lists[RD] = ito__wq_take(&r->head[RD], &r->tail[RD], -1);
        if (r->polls[RD]) lists[RD] = ito__io_fire_polls(r->polls[RD], lists[RD]);
      }
      if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR)) {
        __atomic_store_n(&r->seq[WR], r->seq[WR] + 1, __ATOMIC_RELEASE);
        lists[WR] = ito__wq_take(&r->head[WR], &r->tail[WR], -1);
        if (r->polls[WR]) lists[WR] = ito__io_fire_polls(r->polls[WR], lists[WR]);
      }
    }
    spin_unlock(&r->lock);
    for (int k = 0; k < 2; k++)
      if (lists[k]) {
        ito__wq_wake(lists[k]);
        woke++;
      }
  }
  return woke;
}

/* The poll source's poll: an epoll_wait that does not wait, by one worker
 * at a time. An EINTR (or any error) returns 0 events: the readiness stays
 * on epoll's ready list for the next poll. */
static int io_poll(void *arg) {
  (void)arg;
  if (LOAD_ACQ(&ep) < 0 || !spin_trylock(&poll_lock, LR_LEAF)) return 0;
  struct epoll_event ev[64];
  int n = (int)SYS(SYS_epoll_pwait, ep, ev, 64, 0, NULL, (size_t)8);
  spin_unlock(&poll_lock);
  return n > 0 ? dispatch(ev, n) : 0;
}

void ito__io_wait_begin(void) { ito__poll_arrive(&io_source); }
void ito__io_wait_end(void) { ito__poll_leave(&io_source); }

int ito__io_park(struct fdrec *r, int fd, uint32_t gen, int dir, unsigned seen,
                 const struct timespec *deadline) {
  if (!ito__io_setup()) return ENOSPC;
  ITO_ASSERT(linked); /* invariant 6 (written before ep was published) */
  spin_lock(&r->lock, LR_QUEUE_OUTER);
  if (r->gen != gen) {
    spin_unlock(&r->lock);
    return EBADF;
  }
  int e = r->registered ? 0 : ito__io_register_locked(r, fd);
  if (e) {
    if (e == ENOTSUP) r->type = FD_OTHER;
    spin_unlock(&r->lock);
    return e;
  }
  if (__atomic_load_n(&r->seq[dir], __ATOMIC_ACQUIRE) != seen) {
    spin_unlock(&r->lock);
    return 0;
  }
  ito__io_wait_begin(); /* invariant 4 */
  int rc = ito__wq_wait(&r->lock, &r->head[dir], &r->tail[dir], dir | WQ_INTR, CLOCK_MONOTONIC,
                        deadline, NULL, NULL);
  ito__io_wait_end();
  if (__atomic_load_n(&r->gen, __ATOMIC_ACQUIRE) != gen) return EBADF;
  return rc;
}

bool ito__io_parkable(void) { return parkable(cur_worker()) != NULL; }

/* After fork, in the child (before the core's poller): its own epoll
 * instance, under the same number where it can, and every record out of it
 * and without waiters (they were the parent's threads); a record is added
 * again at its next wait. The parent's instance is closed first, so that a
 * full table has room for the child's. The layer parks nothing until the
 * child's first call that would park has seen the poll sleeper's set
 * watch the new instance (invariant 6); where none can be made, that call
 * tries again. */
static void io_fork_child(struct worker *w, struct ithread *self) {
  (void)w, (void)self;
  setup_lock = poll_lock = 0;
  ep = -1;
  if (ep_made >= 0) {
    SYS(SYS_close, ep_made);
    int e = (int)SYS(SYS_epoll_create1, EPOLL_CLOEXEC);
    if (e >= 0) {
      ep_made = ito__own_fd_renew(ep_made, e);
    } else {
      ito__own_fd_drop(ep_made);
      ep_made = -1;
    }
    if (linked) {
      if (ep_made >= 0)
        io_source.fd = ep_made; /* (the core's after-fork adds it to the child's set) */
      else
        ito__poll_unwatch(&io_source);
    }
  }
  ito__io_recs_after_fork();
}
/* (before the poll sleeper's part, which adds the new instance to its set) */
ITO_FORK_PART(io_fork, .child_order = FORK_IO, .child = io_fork_child);
