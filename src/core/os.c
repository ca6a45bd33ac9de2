/* The libc calls of the runtime, through one table (struct ito_os, see
 * src/dropin/ito_dropin.h and docs/dropin.md section 2). Without the shim the table
 * holds the link-time addresses, so sanitizer interceptors stay in the
 * path; the shim installs libc's own definitions before the runtime starts,
 * since its interposers would otherwise catch the runtime's calls. */
#define _GNU_SOURCE
#include "internal.h"

#include <signal.h>
#include <unistd.h>

struct ito_os ito__os = {
    .pthread_create = pthread_create,
    .pthread_join = pthread_join,
    .pthread_self = pthread_self,
    .pthread_getattr_np = pthread_getattr_np,
    .pthread_setaffinity_np = pthread_setaffinity_np,
    .sched_yield = sched_yield,
    .nanosleep = nanosleep,
    .clock_nanosleep = clock_nanosleep,
    .write = write,
    .syscall = syscall,
    .sigaction = sigaction,
};

int ito__dropin_mode;

void ito__dropin_os_install(const struct ito_os *os) {
  if (__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 0)
    ito__fatal("the pthread library was set up after the runtime started; load libito-pthread.so "
               "with LD_PRELOAD or link it before libito");
#define TAKE(f) if (os->f) ito__os.f = os->f
  TAKE(pthread_create);
  TAKE(pthread_join);
  TAKE(pthread_self);
  TAKE(pthread_getattr_np);
  TAKE(pthread_setaffinity_np);
  TAKE(sched_yield);
  TAKE(nanosleep);
  TAKE(clock_nanosleep);
  TAKE(write);
  TAKE(syscall);
  TAKE(sigaction);
#undef TAKE
}

void ito__dropin_mode_on(void) { ito__dropin_mode = 1; }
