/* Sleeping and yielding: an ito thread parks on a timer or goes to the back
 * of its worker's ready queue; its worker runs other work. Other threads,
 * and clocks other than CLOCK_REALTIME and CLOCK_MONOTONIC, get libc. */
#include "shim.h"

/* The sleeps themselves are the runtime's (ito__dropin_nanosleep and the
 * rest), shared with libito-omp.so, whose interposers test cancellation
 * the same way (docs/dropin.md, "the calls"). */

ITO_PT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
  ITO_PT_ENTER(nanosleep, req, rem);
  if (!ito__dropin_can_park()) return ito__pt_real.nanosleep(req, rem);
  ito__pt_testcancel();
  int rc = ito__dropin_nanosleep(req, rem);
  ito__pt_testcancel_eintr(rc && errno == EINTR);
  return rc;
}

ITO_PT_EXPORT int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                  struct timespec *rem) {
  ITO_PT_ENTER(clock_nanosleep, clock, flags, req, rem);
  if (!ito__dropin_can_park() || !ito__pt_clock_ok(clock))
    return ito__pt_real.clock_nanosleep(clock, flags, req, rem);
  ito__pt_testcancel();
  int rc = ito__dropin_clock_nanosleep(clock, flags, req, rem);
  ito__pt_testcancel_eintr(rc == EINTR);
  return rc;
}

ITO_PT_EXPORT int usleep(useconds_t us) {
  ITO_PT_ENTER(usleep, us);
  if (!ito__dropin_can_park()) return ito__pt_real.usleep(us);
  ito__pt_testcancel();
  int rc = ito__dropin_usleep(us);
  ito__pt_testcancel_eintr(rc && errno == EINTR);
  return rc;
}

ITO_PT_EXPORT unsigned sleep(unsigned s) {
  ITO_PT_ENTER(sleep, s);
  if (!ito__dropin_can_park()) return ito__pt_real.sleep(s);
  ito__pt_testcancel();
  unsigned left = ito__dropin_sleep(s);
  ito__pt_testcancel_eintr(left != 0);
  return left;
}

ITO_PT_EXPORT int sched_yield(void) {
  ITO_PT_ENTER(sched_yield);
  if (!ito__dropin_can_park()) return ito__pt_real.sched_yield();
  return ito_yield();
}

/* pthread.h redirects pthread_yield to sched_yield; binaries built against
 * older headers still call pthread_yield itself. */
ITO_PT_EXPORT int ito__pt_pthread_yield(void) __asm__("pthread_yield");
int ito__pt_pthread_yield(void) {
  ITO_PT_ENTER(pthread_yield);
  if (!ito__dropin_can_park()) return ito__pt_real.sched_yield();
  return ito_yield();
}
