/* Sleeping and yielding: an ito thread parks on a timer or goes to the back
 * of its worker's ready queue; its worker runs other work. Other threads,
 * and clocks other than CLOCK_REALTIME and CLOCK_MONOTONIC, get libc. */
#include "shim.h"

/* The sleeps themselves are the runtime's (ito__dropin_nanosleep and the
 * rest), shared with libito-omp.so, whose interposers test cancellation
 * the same way (docs/dropin.md, "the calls"). */

SHIM_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
  SHIM_ENTER(nanosleep, req, rem);
  if (!ito__dropin_can_park()) return shim_real.nanosleep(req, rem);
  shim_testcancel();
  int rc = ito__dropin_nanosleep(req, rem);
  shim_testcancel_eintr(rc && errno == EINTR);
  return rc;
}

SHIM_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                struct timespec *rem) {
  SHIM_ENTER(clock_nanosleep, clock, flags, req, rem);
  if (!ito__dropin_can_park() || !shim_clock_ok(clock))
    return shim_real.clock_nanosleep(clock, flags, req, rem);
  shim_testcancel();
  int rc = ito__dropin_clock_nanosleep(clock, flags, req, rem);
  shim_testcancel_eintr(rc == EINTR);
  return rc;
}

SHIM_EXPORT int usleep(useconds_t us) {
  SHIM_ENTER(usleep, us);
  if (!ito__dropin_can_park()) return shim_real.usleep(us);
  shim_testcancel();
  int rc = ito__dropin_usleep(us);
  shim_testcancel_eintr(rc && errno == EINTR);
  return rc;
}

SHIM_EXPORT unsigned sleep(unsigned s) {
  SHIM_ENTER(sleep, s);
  if (!ito__dropin_can_park()) return shim_real.sleep(s);
  shim_testcancel();
  unsigned left = ito__dropin_sleep(s);
  shim_testcancel_eintr(left != 0);
  return left;
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
