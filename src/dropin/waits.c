/* Wait queues, lock words and sleeps for the drop-in libraries' objects
 * (src/core/waitq.h, src/core/sync.h), and libc's sleeps for the
 * libraries that interpose them. */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/sync.h"
#include "../core/timespec.h"
#include "../core/wait.h"
#include "../core/monitor.h"

#include <errno.h>

_Static_assert(ITO_DROPIN_WQ_INTR == WQ_INTR, "the drop-in's interruptible wait flag");

int ito__dropin_wq_wait(int *qlock, void **head, void **tail, int tag, clockid_t clock,
                        const struct timespec *abstime, int (*locked)(void *), void *arg) {
  return ito__wq_wait(qlock, head, tail, tag, clock, abstime, locked, arg);
}
void *ito__dropin_wq_take(void **head, void **tail, int n) { return ito__wq_take(head, tail, n); }
void *ito__dropin_wq_take_tag(void **head, void **tail, int tag, int *n) {
  return ito__wq_take_tag(head, tail, tag, n);
}
int ito__dropin_wq_head_tag(void *const *head) { return wq_head_tag(head); }
void ito__dropin_wq_wake(void *list) { ito__wq_wake(list); }

int ito__dropin_lock_slow(int *state, int *qlock, void **head, void **tail, clockid_t clock,
                          const struct timespec *abs) {
  return ito__lock_slow(state, qlock, head, tail, clock, abs);
}
void ito__dropin_unlock_slow(int *state, int *qlock, void **head, void **tail) {
  ito__unlock_slow(state, qlock, head, tail);
}
_Static_assert((int)ITO_DROPIN_LR_MPI_TABLE == (int)LR_MPI_TABLE &&
                   (int)ITO_DROPIN_LR_OMP_RING == (int)LR_OMP_RING &&
                   (int)ITO_DROPIN_LR_QUEUE_OUTER == (int)LR_QUEUE_OUTER &&
                   (int)ITO_DROPIN_LR_QUEUE == (int)LR_QUEUE &&
                   (int)ITO_DROPIN_LR_LEAF == (int)LR_LEAF,
               "the drop-in's lock ranks");
void ito__dropin_lock(int *qlock, int rank) { spin_lock(qlock, rank); }
void ito__dropin_unlock(int *qlock) { spin_unlock(qlock); }

int ito__dropin_sleep_until(clockid_t clock, const struct timespec *abstime) {
  return ito__sleep_until(clock, abstime);
}

/* ---- libc's sleeps, for an ito thread that can park --------------------------------------
 * Shared by every library that interposes them (docs/dropin.md, "the
 * calls"), so that whichever library's definition the program's call
 * reaches, it behaves the same. The cancellation points are the
 * interposers' (ito__dropin_cancel_check): a cancellation's forced unwind
 * ends at the first frame of the runtime it meets. */

void (*ito__dropin_cancel_check)(void);

/* 0, or EINTR with *left_ns the time that was left (a signal's handler
 * ran on the thread: the sleep ends, as the kernel's does). A time of 0
 * or less yields. */
static int sleep_for(long long ns, long long *left_ns) {
  if (ns <= 0) return ito_yield();
  struct timespec until = deadline_in(CLOCK_MONOTONIC, ns);
  int rc = ito__sleep_until(CLOCK_MONOTONIC, &until);
  if (rc == EINTR && left_ns) *left_ns = ns_until(CLOCK_MONOTONIC, &until);
  return rc;
}

static void put_left(struct timespec *rem, long long ns) {
  if (rem) rem->tv_sec = ns / NS_PER_S, rem->tv_nsec = ns % NS_PER_S;
}

static int bad_time(const struct timespec *ts) { return !ts || !ts_valid(ts); }

int ito__dropin_nanosleep(const struct timespec *req, struct timespec *rem) {
  if (!req || req->tv_sec < 0 || bad_time(req)) {
    errno = EINVAL;
    return -1;
  }
  long long left = 0;
  if (sleep_for(ts_to_ns(req), &left) == EINTR) { /* (saturates: centuries are for ever) */
    put_left(rem, left);
    errno = EINTR;
    return -1;
  }
  return 0;
}

int ito__dropin_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                struct timespec *rem) {
  if (!req || req->tv_sec < 0 || bad_time(req)) return EINVAL;
  if (flags & TIMER_ABSTIME) return ito__sleep_until(clock, req);
  long long ns = ts_to_ns(req);
  if (ns == 0) return ito_yield();
  struct timespec until = deadline_in(clock, ns);
  int rc = ito__sleep_until(clock, &until);
  if (rc == EINTR) put_left(rem, ns_until(clock, &until));
  return rc;
}

int ito__dropin_usleep(useconds_t us) {
  if (sleep_for((long long)us * 1000, NULL) == EINTR) {
    errno = EINTR;
    return -1;
  }
  return 0;
}

unsigned ito__dropin_sleep(unsigned s) {
  long long left = 0;
  if (sleep_for((long long)s * NS_PER_S, &left) == EINTR) /* the seconds left, rounded up */
    return (unsigned)((left + NS_PER_S - 1) / NS_PER_S);
  return 0;
}

/* ---- waits in the kernel (docs/monitor.md, "Extra workers") ------------------------------ */

void ito__dropin_kwait_begin(void (*wake)(void *), void *obj) {
  ito__monitor_kwait_begin(wake, obj, KWAIT_ON);
}
void ito__dropin_kwait_begin_lock(void) { ito__monitor_kwait_begin(NULL, NULL, KWAIT_ASYNC); }
void ito__dropin_kwait_end(void) { ito__monitor_kwait_end(); }
