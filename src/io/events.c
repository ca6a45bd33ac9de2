/* The program's own event loops: ppoll, select, pselect, epoll_wait,
 * epoll_pwait, epoll_pwait2, and the waits for signals (sigwait,
 * sigwaitinfo, sigtimedwait). An ito thread parks while nothing is ready,
 * through ito__io_poll: an epoll descriptor is itself pollable (readable
 * while its set has events), and a signalfd for the awaited set is
 * readable while one of them is pending. Invariants at the top of io.h;
 * design in docs/io.md, "The program's event loops". */
#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>

#define SIGSET_BYTES (_NSIG / 8) /* the kernel's sigset_t */

/* A relative timeout as a monotonic deadline; false for a malformed one. */
static bool deadline_of(const struct timespec *rel, struct timespec *out) {
  if (rel->tv_sec < 0 || rel->tv_nsec < 0 || rel->tv_nsec >= 1000000000L) return false;
  long long ns = rel->tv_sec > NS_FOREVER / 1000000000LL - 1
                     ? NS_FOREVER
                     : (long long)rel->tv_sec * 1000000000LL + rel->tv_nsec;
  *out = deadline_in(CLOCK_MONOTONIC, ns);
  return true;
}

static int fail(int e) {
  ito__io_set_errno(e);
  return -1;
}

/* ---- ppoll ------------------------------------------------------------------------------ */

/* With a signal mask the mask must be in force exactly while the call
 * waits, which only the kernel can do: libc's call, which blocks the
 * worker (the monitor runs another meanwhile). */
int ito_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
  if (mask || !ito__io_parkable())
    return (int)SYS(SYS_ppoll, fds, n, tmo, mask, (size_t)SIGSET_BYTES);
  struct timespec dl;
  if (tmo && !deadline_of(tmo, &dl)) return fail(EINVAL);
  bool now = tmo && tmo->tv_sec == 0 && tmo->tv_nsec == 0;
  if (n == 0) return now ? 0 : ito__io_sleep_until(tmo ? &dl : NULL);
  return ito__io_poll(fds, n, tmo ? &dl : NULL, now);
}

/* ---- select and pselect ------------------------------------------------------------------- */

/* The bits of an fd_set beyond FD_SETSIZE, as the kernel reads them (the
 * program may pass larger sets): no FD_ISSET, whose checks stop at 1024. */
#define WORD_BITS (8 * (int)sizeof(unsigned long))
static bool bit(const fd_set *s, int fd) {
  return s && (((const unsigned long *)(const void *)s)[fd / WORD_BITS] >> (fd % WORD_BITS)) & 1;
}
static void set_bit(fd_set *s, int fd) {
  ((unsigned long *)(void *)s)[fd / WORD_BITS] |= 1UL << (fd % WORD_BITS);
}
static void clear_set(fd_set *s, int nfds) {
  if (s) memset(s, 0, (size_t)(nfds + WORD_BITS - 1) / WORD_BITS * sizeof(unsigned long));
}

#define SELECT_STACK 64
#define IN_SET (POLLIN | POLLRDNORM | POLLRDBAND | POLLHUP | POLLERR) /* as the kernel's select */
#define OUT_SET (POLLOUT | POLLWRNORM | POLLWRBAND | POLLERR)
#define EX_SET (POLLPRI)

/* select's work on a monotonic deadline (NULL: none; nowait: none at all). */
static int select_on(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *dl,
                     bool nowait) {
  struct pollfd stack_fds[SELECT_STACK], *p = stack_fds;
  int n = 0;
  for (int fd = 0; fd < nfds; fd++) n += bit(r, fd) || bit(w, fd) || bit(e, fd);
  if (n == 0) return nowait ? 0 : ito__io_sleep_until(dl);
  if (n > SELECT_STACK && !(p = malloc((size_t)n * sizeof *p))) return fail(ENOMEM);
  n = 0;
  for (int fd = 0; fd < nfds; fd++) {
    short ev = (short)((bit(r, fd) ? POLLIN : 0) | (bit(w, fd) ? POLLOUT : 0) |
                       (bit(e, fd) ? POLLPRI : 0));
    if (ev) p[n++] = (struct pollfd){fd, ev, 0};
  }
  int rc = ito__io_poll(p, (nfds_t)n, dl, nowait);
  if (rc > 0) {
    for (int i = 0; i < n; i++) {
      if (p[i].revents & POLLNVAL) {
        rc = fail(EBADF);
        break;
      }
    }
  }
  if (rc >= 0) {
    /* the requests stay in p[].events: the sets are cleared and refilled */
    int count = 0;
    clear_set(r, nfds);
    clear_set(w, nfds);
    clear_set(e, nfds);
    for (int i = 0; i < n; i++) {
      short got = p[i].revents, asked = p[i].events;
      if ((asked & POLLIN) && (got & IN_SET)) set_bit(r, p[i].fd), count++;
      if ((asked & POLLOUT) && (got & OUT_SET)) set_bit(w, p[i].fd), count++;
      if ((asked & POLLPRI) && (got & EX_SET)) set_bit(e, p[i].fd), count++;
    }
    rc = count;
  }
  if (p != stack_fds) free(p);
  return rc;
}

int ito_select(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
  if (!ito__io_parkable()) {
#ifdef SYS_select
    return (int)SYS(SYS_select, nfds, r, w, e, tv);
#else
    struct timespec ts, *t = NULL;
    if (tv) ts = (struct timespec){tv->tv_sec, tv->tv_usec * 1000L}, t = &ts;
    return (int)SYS(SYS_pselect6, nfds, r, w, e, t, NULL);
#endif
  }
  if (nfds < 0) return fail(EINVAL);
  struct timespec dl;
  bool now = false;
  if (tv) {
    if (tv->tv_sec < 0 || tv->tv_usec < 0) return fail(EINVAL);
    struct timespec rel = {tv->tv_sec + tv->tv_usec / 1000000, (tv->tv_usec % 1000000) * 1000L};
    if (!deadline_of(&rel, &dl)) return fail(EINVAL);
    now = rel.tv_sec == 0 && rel.tv_nsec == 0;
  }
  int rc = select_on(nfds, r, w, e, tv ? &dl : NULL, now);
  if (tv) { /* Linux leaves the time not slept */
    long long left = now ? 0 : ns_until(CLOCK_MONOTONIC, &dl);
    tv->tv_sec = left / 1000000000LL;
    tv->tv_usec = (left % 1000000000LL) / 1000;
  }
  return rc;
}

int ito_pselect(int nfds, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
                const sigset_t *mask) {
  if (mask || !ito__io_parkable()) {
    struct {
      const sigset_t *set;
      size_t size;
    } m = {mask, SIGSET_BYTES};
    struct timespec t, *tp = NULL;
    if (ts) t = *ts, tp = &t; /* the kernel writes the time left; pselect's is const */
    return (int)SYS(SYS_pselect6, nfds, r, w, e, tp, mask ? &m : NULL);
  }
  if (nfds < 0) return fail(EINVAL);
  struct timespec dl;
  if (ts && !deadline_of(ts, &dl)) return fail(EINVAL);
  return select_on(nfds, r, w, e, ts ? &dl : NULL, ts && !ts->tv_sec && !ts->tv_nsec);
}

/* ---- epoll ----------------------------------------------------------------------------------- */

/* The events the set has now (no wait); -1 with errno for a bad call. */
static int epoll_now(int epfd, struct epoll_event *ev, int max) {
  return (int)SYS(SYS_epoll_pwait, epfd, ev, max, 0, NULL, (size_t)SIGSET_BYTES);
}

static int epoll_on(int epfd, struct epoll_event *ev, int max, const struct timespec *dl,
                    bool nowait) {
  for (;;) {
    int rc = epoll_now(epfd, ev, max);
    if (rc != 0 || nowait) return rc;
    /* parks until the set has events (the epoll fd is readable), then
     * takes them; another thread may take them first: again */
    struct pollfd p = {epfd, POLLIN, 0};
    rc = ito__io_poll(&p, 1, dl, false);
    if (rc < 0) return rc;
    if (rc == 0) return 0; /* the deadline */
    if (p.revents & POLLNVAL) return fail(EBADF);
  }
}

int ito_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout_ms) {
  return ito_epoll_pwait(epfd, ev, max, timeout_ms, NULL);
}

int ito_epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout_ms,
                    const sigset_t *mask) {
  if (mask || !ito__io_parkable())
    return (int)SYS(SYS_epoll_pwait, epfd, ev, max, timeout_ms, mask, (size_t)SIGSET_BYTES);
  struct timespec dl;
  if (timeout_ms > 0) dl = deadline_in(CLOCK_MONOTONIC, (long long)timeout_ms * 1000000LL);
  return epoll_on(epfd, ev, max, timeout_ms > 0 ? &dl : NULL, timeout_ms == 0);
}

int ito_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
                     const sigset_t *mask) {
  if (mask || !ito__io_parkable())
    return (int)SYS(SYS_epoll_pwait2, epfd, ev, max, tmo, mask, (size_t)SIGSET_BYTES);
  struct timespec dl;
  if (tmo && !deadline_of(tmo, &dl)) return fail(EINVAL);
  return epoll_on(epfd, ev, max, tmo ? &dl : NULL, tmo && !tmo->tv_sec && !tmo->tv_nsec);
}

/* ---- waiting for signals --------------------------------------------------------------------- */

/* One of set's signals, dequeued with its siginfo (the kernel's
 * rt_sigtimedwait with no wait: pending for this OS thread or the
 * process), or -1 with EAGAIN. */
static int sig_now(const sigset_t *set, siginfo_t *info) {
  struct timespec zero = {0, 0};
  return (int)SYS(SYS_rt_sigtimedwait, set, info, &zero, (size_t)SIGSET_BYTES);
}

/* libc's wait, announced (io.h, invariant 5). */
static __attribute__((noinline)) int sig_blocking(const sigset_t *set, siginfo_t *info,
                                                  const struct timespec *tmo) {
  ito__io_block_begin();
  int rc = (int)SYS(SYS_rt_sigtimedwait, set, info, tmo, (size_t)SIGSET_BYTES);
  int e = errno;
  ito__io_block_end();
  errno = e;
  return rc;
}

/* The signals of set must be blocked (as POSIX asks of the caller), so
 * that one sent to the process stays pending; a signalfd for set is
 * readable while one is, and the parked thread then takes it. */
int ito_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo) {
  if (!ito__io_parkable())
    return (int)SYS(SYS_rt_sigtimedwait, set, info, tmo, (size_t)SIGSET_BYTES);
  struct timespec dl;
  if (tmo && !deadline_of(tmo, &dl)) return fail(EINVAL);
  /* sent to this thread (pthread_kill), or held by the runtime for the
   * process (signal.c), before the kernel's */
  int rc = ito__sig_on ? ito__sig_take(set, info) : 0;
  if (rc > 0) return rc;
  rc = sig_now(set, info);
  if (rc >= 0 || ito__io_errno() != EAGAIN || (tmo && !tmo->tv_sec && !tmo->tv_nsec)) return rc;
  int fd = (int)SYS(SYS_signalfd4, -1, set, (size_t)SIGSET_BYTES, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) /* no descriptor left: wait as libc does, blocking the worker (invariant 5) */
    return sig_blocking(set, info, tmo);
  if (ito__sig_on) ito__sig_waiting(set); /* a signal of set sent to it wakes it */
  /* the first look is after the registration: a signal of the process
   * that the monitor put in ito's hands before it saw this thread waiting
   * is there now (signal.c, route) */
  int pr = 0, pe = 0;
  for (bool polled = false;; polled = true) {
    rc = ito__sig_on ? ito__sig_take(set, info) : 0;
    if (rc > 0) break;
    if (polled) {
      rc = sig_now(set, info);
      if (rc >= 0) break;
      if (pr < 0 && pe == EINTR) { /* a handler ran: sigwait waits on, the others return */
        ito__io_set_errno(EINTR);
        break;
      }
      if (pr <= 0) { /* the deadline (or an error of the poll) */
        ito__io_set_errno(pr == 0 ? EAGAIN : pe);
        break;
      }
    }
    struct pollfd p = {fd, POLLIN, 0};
    pr = ito__io_poll(&p, 1, tmo ? &dl : NULL, false);
    pe = ito__io_errno();
  }
  if (ito__sig_on) ito__sig_waiting(NULL);
  int e = ito__io_errno(); /* (after a park: not through an address kept from before) */
  ito_close(fd);
  ito__io_set_errno(e);
  return rc;
}

int ito_sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  return ito_sigtimedwait(set, info, NULL);
}

int ito_sigwait(const sigset_t *set, int *sig) {
  for (;;) {
    int rc = ito_sigtimedwait(set, NULL, NULL);
    if (rc > 0) {
      *sig = rc;
      return 0;
    }
    int e = ito__io_errno();
    if (e != EINTR) return e;
  }
}
