/* libito-omp.so: sleeping tasks and team members park, and yielding ones
 * yield. nanosleep, clock_nanosleep, usleep and sleep called by a
 * lightweight thread that can park (a member, a task, the initial thread
 * once the runtime runs) park it on a timer, and its worker runs other
 * tasks and members; sched_yield (and pthread_yield) lets the worker run
 * another ready one (a member spinning on a flag with sched_yield, as
 * OpenBLAS's threads do, gives its worker to the member that sets it), and
 * pthread_spin_lock yields every 1,000 spins (the holder may have been
 * preempted onto the spinner's worker);
 * other callers, and clocks other than CLOCK_REALTIME and CLOCK_MONOTONIC,
 * get the next definition (libc's). The sleeps themselves are the runtime's,
 * shared with libito-pthread.so through the drop-in interface
 * (ito__dropin_nanosleep and the rest). docs/openmp.md, "Sleeping". */
#include "omp_int.h"

#include "../core/relax.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

/* The next definitions: libc's, or, when libito-pthread.so is loaded
 * after this library, its interposers (which hand a caller that cannot
 * park to libc in turn). Resolved without dlsym, which may allocate. */
static struct {
  int (*nanosleep)(const struct timespec *, struct timespec *);
  int (*clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
  int (*usleep)(useconds_t);
  unsigned (*sleep)(unsigned);
  int (*sched_yield)(void);
  int (*spin_lock)(pthread_spinlock_t *);
  int (*spin_trylock)(pthread_spinlock_t *);
} next;

static void *next_of(const char *name) {
  void *p = ito__dropin_sym((const void *)&ito__omp_sleep_setup, name, NULL);
  if (!p) ito__omp_fatal("cannot find libc's %s (is libito-omp.so loaded before libc?)", name);
  return p;
}

/* From the library's constructor (omp.c), before the runtime starts: the
 * runtime's own sleeps must not come back here. */
void ito__omp_sleep_setup(void) {
  next.nanosleep = (int (*)(const struct timespec *, struct timespec *))next_of("nanosleep");
  next.clock_nanosleep = (int (*)(clockid_t, int, const struct timespec *,
                                  struct timespec *))next_of("clock_nanosleep");
  next.usleep = (int (*)(useconds_t))next_of("usleep");
  next.sched_yield = (int (*)(void))next_of("sched_yield");
  next.spin_lock = (int (*)(pthread_spinlock_t *))next_of("pthread_spin_lock");
  next.spin_trylock = (int (*)(pthread_spinlock_t *))next_of("pthread_spin_trylock");
  next.sleep = (unsigned (*)(unsigned))next_of("sleep");
  struct ito_os os = {.nanosleep = next.nanosleep,
                      .clock_nanosleep = next.clock_nanosleep,
                      .sched_yield = next.sched_yield};
  ito__dropin_os_install(&os);
}

/* The sleeps are cancellation points of libito-pthread.so's threads when
 * the program's calls reach these definitions first (both libraries
 * preloaded, this one before it): its check runs from this frame. */
static inline void testcancel(void) {
  if (UNLIKELY(__atomic_load_n(&ito__dropin_cancels, __ATOMIC_RELAXED))) {
    void (*check)(void) = __atomic_load_n(&ito__dropin_cancel_check, __ATOMIC_ACQUIRE);
    if (check) check();
  }
}

/* A call that comes before the constructor (another library's) */
static inline void ensure(void) {
  if (UNLIKELY(!__atomic_load_n(&next.sleep, __ATOMIC_ACQUIRE))) ito__omp_sleep_setup();
}

OMP_API int nanosleep(const struct timespec *req, struct timespec *rem) {
  ensure();
  if (!ito__dropin_can_park()) return next.nanosleep(req, rem);
  testcancel();
  int rc = ito__dropin_nanosleep(req, rem);
  if (UNLIKELY(rc && errno == EINTR)) testcancel();
  return rc;
}

OMP_API int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                            struct timespec *rem) {
  ensure();
  if (!ito__dropin_can_park() || (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC))
    return next.clock_nanosleep(clock, flags, req, rem);
  testcancel();
  int rc = ito__dropin_clock_nanosleep(clock, flags, req, rem);
  if (UNLIKELY(rc == EINTR)) testcancel();
  return rc;
}

OMP_API int usleep(useconds_t us) {
  ensure();
  if (!ito__dropin_can_park()) return next.usleep(us);
  testcancel();
  int rc = ito__dropin_usleep(us);
  if (UNLIKELY(rc && errno == EINTR)) testcancel();
  return rc;
}

OMP_API unsigned sleep(unsigned s) {
  ensure();
  if (!ito__dropin_can_park()) return next.sleep(s);
  testcancel();
  unsigned left = ito__dropin_sleep(s);
  if (UNLIKELY(left)) testcancel();
  return left;
}

OMP_API int sched_yield(void) {
  ensure();
  if (!ito__dropin_can_park()) return next.sched_yield();
  return ito_yield();
}

/* pthread.h redirects pthread_yield to sched_yield; binaries built against
 * older headers call pthread_yield itself (libc's is sched_yield). */
OMP_API int omp_pthread_yield(void) __asm__("pthread_yield");
int omp_pthread_yield(void) { return sched_yield(); }

/* The lock stays the next definition's (libc's layout: on x86-64 1 is
 * free and 0 held, elsewhere 0 is free): its trylock, and a yield every
 * 1,000 tries. */
OMP_API int pthread_spin_lock(pthread_spinlock_t *s) {
  ensure();
  if (!ito__dropin_can_park()) return next.spin_lock(s);
  for (unsigned n = 1;; n++) {
    if (next.spin_trylock(s) == 0) return 0;
    if (n % 1000 == 0)
      ito_yield(); /* the holder may be waiting for this worker */
    else
      cpu_relax();
  }
}
