/* The blocking objects' shared parts (sync.c), which the drop-in
 * libraries' objects use too. Design: docs/sync.md. */
#ifndef ITO_CORE_SYNC_H
#define ITO_CORE_SYNC_H

#include <ito/ito.h>

#include "base.h"

/* The clocks timed waits accept: CLOCK_REALTIME and CLOCK_MONOTONIC. */
HIDDEN bool ito__clock_ok(clockid_t c);
/* The contended lock of a lock word (0 free, 1 locked, 2 locked and maybe
 * waited on) with a wait queue, after the caller's own compare-and-swap
 * from 0 to 1 failed; abs on clock, NULL: no deadline. 0, ETIMEDOUT, or
 * EINVAL for a malformed abs; ECANCELED when the running thread's
 * cancellation type is asynchronous and a request (enabled) ended the wait
 * (a drop-in library acts on it). */
HIDDEN int ito__lock_slow(int *state, int *qlock, void **head, void **tail, clockid_t clock,
                          const struct timespec *abs);
/* The unlock of a word found at 2 (maybe waited on): frees it and wakes
 * the oldest waiter, the word's store made under the queue lock. */
HIDDEN void ito__unlock_slow(int *state, int *qlock, void **head, void **tail);
/* After an unlock that freed the word itself (1 to 0): waits until no
 * slow unlocker before it still holds the queue lock, so that the caller
 * may destroy the mutex and free its memory once this returns. */
static inline void ito__unlock_settle(const int *qlock) {
  while (__atomic_load_n(qlock, __ATOMIC_ACQUIRE)) cpu_relax();
}
/* Sleeps until abstime on clock; an ito thread parks on a timer. 0,
 * EINVAL, or EINTR when a signal's handler ran on the thread (signal.h:
 * only with a drop-in library's signals). */
HIDDEN int ito__sleep_until(clockid_t clock, const struct timespec *abstime);

#endif
