/* Sleeping and yielding: an ito thread parks on a timer or goes to the back
 * of its worker's ready queue; its worker runs other work. Other threads,
 * and clocks other than CLOCK_REALTIME and CLOCK_MONOTONIC, get libc. */
#include "shim.h"

/* 0, or EINTR with *left_ns the time that was left (a signal's handler
 * ran on the thread: the sleep ends, as the kernel's does). */
static int sleep_for(long long ns, long long *left_ns) {
  if (ns <= 0) return ito_yield();
  struct timespec until = deadline_in(CLOCK_MONOTONIC, ns);
  int rc = ito__dropin_sleep_until(CLOCK_MONOTONIC, &until);
  if (rc == EINTR && left_ns) *left_ns = ns_until(CLOCK_MONOTONIC, &until);
  return rc;
}

static void put_left(struct timespec *rem, long long ns) {
  if (rem) rem->tv_sec = ns / NS_PER_S, rem->tv_nsec = ns % NS_PER_S;
}

SHIM_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
  SHIM_ENTER(nanosleep, req, rem);
  if (!ito__dropin_can_park()) return shim_real.nanosleep(req, rem);
  shim_testcancel();
  if (!req || req->tv_sec < 0 || shim_bad_time(req)) {
    errno = EINVAL;
    return -1;
  }
  long long left = 0;
  if (sleep_for(ts_to_ns(req), &left) == EINTR) { /* (saturates: centuries are for ever) */
    shim_testcancel();
    put_left(rem, left);
    errno = EINTR;
    return -1;
  }
  return 0;
}

SHIM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                struct timespec *rem) {
  SHIM_ENTER(clock_nanosleep, clock, flags, req, rem);
  if (!ito__dropin_can_park() || !shim_clock_ok(clock))
    return shim_real.clock_nanosleep(clock, flags, req, rem);
  if (!req || req->tv_sec < 0 || shim_bad_time(req)) return EINVAL;
  shim_testcancel();
  if (flags & TIMER_ABSTIME) {
    int rc = ito__dropin_sleep_until(clock, req);
    shim_testcancel_eintr(rc == EINTR);
    return rc;
  }
  long long ns = ts_to_ns(req);
  if (ns == 0) return ito_yield();
  struct timespec until = deadline_in(clock, ns);
  int rc = ito__dropin_sleep_until(clock, &until);
  shim_testcancel_eintr(rc == EINTR);
  if (rc == EINTR) put_left(rem, ns_until(clock, &until));
  return rc;
}

SHIM_EXPORT int usleep(useconds_t us) {
  SHIM_ENTER(usleep, us);
  if (!ito__dropin_can_park()) return shim_real.usleep(us);
  shim_testcancel();
  if (sleep_for((long long)us * 1000, NULL) == EINTR) {
    shim_testcancel();
    errno = EINTR;
    return -1;
  }
  return 0;
}

SHIM_EXPORT unsigned sleep(unsigned s) {
  SHIM_ENTER(sleep, s);
  if (!ito__dropin_can_park()) return shim_real.sleep(s);
  shim_testcancel();
  long long left = 0;
  if (sleep_for((long long)s * NS_PER_S, &left) == EINTR) { /* the seconds left, rounded up */
    shim_testcancel();
    return (unsigned)((left + NS_PER_S - 1) / NS_PER_S);
  }
  return 0;
}

SHIM_EXPORT int sched_yield(void) {
  SHIM_ENTER(sched_yield);
  if (!ito__dropin_can_park()) return shim_real.sched_yield();
  return ito_yield();
}

/* pthread.h redirects pthread_yield to sched_yield; binaries built against
 * older headers still call pthread_yield itself. */
SHIM_EXPORT int shim_pthread_yield(void) __asm__("pthread_yield");
int shim_pthread_yield(void) {
  SHIM_ENTER(pthread_yield);
  if (!ito__dropin_can_park()) return shim_real.sched_yield();
  return ito_yield();
}
