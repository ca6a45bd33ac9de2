/* ito_poll: libc's poll, but an ito thread parks while nothing is ready.
 * Invariants at the top of io.h; design in docs/io.md. */
#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <stdlib.h>

/* ---- poll ----------------------------------------------------------------------- */

static void unlink_node(struct fdrec *r, int d, struct pollnode *n) {
  if (n->prev)
    n->prev->next = n->next;
  else
    r->polls[d] = n->next;
  if (n->next) n->next->prev = n->prev;
}

#define POLL_STACK 64

/* Milliseconds from now to the monotonic deadline d, rounded up; 0 once
 * it has passed. */
static int ms_left(const struct timespec *d) {
  return (int)((ns_until(CLOCK_MONOTONIC, d) + 999999) / 1000000);
}

/* A poll that does not wait. A signal may land even there; the parked
 * thread's calls are not interrupted (docs/io.md invariant 5): again. */
static int poll_now(struct pollfd *fds, nfds_t n) {
  int rc;
  while ((rc = (int)ito__io_sys_poll(fds, n, 0)) < 0 && errno == EINTR) {
  }
  return rc;
}

/* libc's poll for the time left, where the layer cannot park the caller
 * (invariant 5: announced, blocking the worker) or epoll can watch none of
 * the fds (regular files, which are always ready; negative fds). A signal
 * does not cut it short, as no wait of a parked thread is. */
static __attribute__((noinline)) int blocking_poll(struct pollfd *fds, nfds_t n,
                                                   const struct timespec *dl, bool nowait) {
  if (nowait) return poll_now(fds, n);
  ito__io_block_begin();
  int rc;
  while ((rc = (int)ito__io_sys_poll(fds, n, dl ? ms_left(dl) : -1)) < 0 && errno == EINTR) {
  }
  int e = errno;
  ito__io_block_end();
  errno = e;
  return rc;
}

/* libc's poll, but an ito thread parks while nothing is ready: one node per
 * fd and direction on the records, one group, the first event wakes it;
 * then libc's poll with no wait computes revents. A spurious wake (the
 * readiness was taken by someone else) waits again for the time left.
 * deadline: CLOCK_MONOTONIC, NULL for none; nowait: a poll that does not
 * wait at all. The caller may park, and n > 0. */
int ito__io_poll(struct pollfd *fds, nfds_t n, const struct timespec *deadline, bool nowait) {
  const struct timespec *dl = nowait ? NULL : deadline;
  if (UNLIKELY(!ito__io_setup())) return blocking_poll(fds, n, dl, nowait);
  struct pollnode stack_nodes[POLL_STACK * 2], *nodes = stack_nodes;
  unsigned *seen = NULL, stack_seen[POLL_STACK * 2];
  if (n > POLL_STACK) {
    nodes = calloc(n * 2, sizeof *nodes);
    seen = calloc(n * 2, sizeof *seen);
    if (!nodes || !seen) {
      free(nodes);
      free(seen);
      return blocking_poll(fds, n, dl,
                           nowait); /* (out of memory: blocks the worker, but answers) */
    }
  } else {
    seen = stack_seen;
  }
  int rc;
  for (;;) {
    for (nfds_t i = 0; i < n; i++) {
      struct fdrec *r = ito__io_rec(fds[i].fd);
      for (int d = 0; d < 2; d++) seen[2 * i + d] = r ? LOAD_ACQ(&r->seq[d]) : 0;
    }
    rc = poll_now(fds, n);
    if (rc != 0 || nowait) break;
    struct pollgroup g = {0, 0, NULL, NULL};
    int stale = 0, hung = 0, short_of = 0;
    for (nfds_t i = 0; i < n; i++) {
      struct fdrec *r = ito__io_rec(fds[i].fd);
      if (!r) continue;
      short ev = fds[i].events;
      int want[2] = {(ev & (POLLIN | POLLPRI | POLLRDHUP)) != 0, (ev & POLLOUT) != 0};
      uint32_t gen;
      ito__io_fd_type(r, fds[i].fd, &gen);
      spin_lock(&r->lock, LR_QUEUE_OUTER);
      int e = r->registered ? 0 : ito__io_register_locked(r, fds[i].fd);
      if (e) {
        spin_unlock(&r->lock);
        short_of |= e == ENOSPC; /* (invariant 5) */
        continue;                /* ENOTSUP: a regular file, always ready anyway */
      }
      for (int d = 0; d < 2; d++) {
        struct pollnode *x = &nodes[2 * i + d];
        x->g = NULL;
        if (!want[d]) continue;
        if (LOAD_RLX(&r->seq[d]) != seen[2 * i + d]) stale = 1;
        x->g = &g;
        x->prev = NULL;
        x->next = r->polls[d];
        if (x->next) x->next->prev = x;
        r->polls[d] = x;
        hung++;
      }
      spin_unlock(&r->lock);
    }
    int woke = 0;
    if (!stale && hung && !short_of) {
      ito__io_wait_begin();
      spin_lock(&g.qlock, LR_QUEUE);
      if (!__atomic_load_n(&g.fired, __ATOMIC_ACQUIRE))
        woke = ito__wq_wait(&g.qlock, &g.head, &g.tail, WQ_INTR, CLOCK_MONOTONIC, dl, NULL, NULL);
      else
        spin_unlock(&g.qlock);
      ito__io_wait_end();
    }
    for (nfds_t i = 0; i < n; i++) { /* off every record before g goes away */
      struct fdrec *r = ito__io_rec(fds[i].fd);
      if (!r) continue;
      spin_lock(&r->lock, LR_QUEUE_OUTER);
      for (int d = 0; d < 2; d++)
        if (nodes[2 * i + d].g == &g) unlink_node(r, d, &nodes[2 * i + d]);
      spin_unlock(&r->lock);
    }
    if (!hung || (short_of && !stale)) { /* nothing epoll can watch, or not all of it */
      rc = blocking_poll(fds, n, dl, false);
      break;
    }
    if (woke == EINTR) { /* a signal's handler ran: poll says so, whatever SA_RESTART */
      rc = -1;
      ito__io_set_errno(EINTR);
      break;
    }
    if (dl && ns_until(CLOCK_MONOTONIC, dl) == 0) {
      rc = poll_now(fds, n);
      break;
    }
  }
  if (nodes != stack_nodes) {
    free(nodes);
    free(seen);
  }
  return rc;
}

int ito__io_sleep_until(const struct timespec *deadline) {
  for (;;) {
    long long left = deadline ? ns_until(CLOCK_MONOTONIC, deadline) : 86400LL * 1000000000LL;
    if (left <= 0) return 0;
    struct timespec t = ns_to_ts(left);
    ito_nanosleep(&t);
  }
}

int ito_poll(struct pollfd *fds, nfds_t n, int timeout_ms) {
  if (!ito__io_parkable()) return (int)ito__io_sys_poll(fds, n, timeout_ms);
  struct timespec deadline;
  if (timeout_ms > 0) deadline = deadline_in(CLOCK_MONOTONIC, (long long)timeout_ms * 1000000LL);
  if (n == 0) { /* a sleep */
    if (timeout_ms == 0) return 0;
    return ito__io_sleep_until(timeout_ms > 0 ? &deadline : NULL);
  }
  return ito__io_poll(fds, n, timeout_ms > 0 ? &deadline : NULL, timeout_ms == 0);
}
