/* Unnamed semaphores (sem_init) in place: the count and a wait queue of the
 * runtime, so sem_wait parks an ito thread instead of blocking its worker.
 * A process-shared semaphore (sem_init with pshared, sem_open) stays
 * glibc's: a mark word tells the two layouts apart. Its waits block the
 * worker (announced: docs/monitor.md) in slices of SLICE_NS, so that a
 * cancellation request is seen within one. */
#include "shim.h"

#include <limits.h>
#include <semaphore.h>

struct pt_sem {
  unsigned value;
  int qlock;
  void *head, *tail;
  unsigned mark; /* SEM_MARK: one of ours */
};
#define SEM_MARK 0x69746f73u /* "sotI" */
_Static_assert(sizeof(struct pt_sem) <= sizeof(sem_t), "semaphore layout");
#define PS(s) ((struct pt_sem *)(void *)(s))

static int ours(sem_t *s) { return __atomic_load_n(&PS(s)->mark, __ATOMIC_RELAXED) == SEM_MARK; }

ITO_PT_EXPORT int sem_init(sem_t *s, int pshared, unsigned value) {
  ITO_PT_ENTER(sem_init, s, pshared, value);
  if (pshared) { /* glibc's, shared with other processes */
    __atomic_store_n(&PS(s)->mark, 0, __ATOMIC_RELAXED);
    return ito__pt_real.sem_init(s, pshared, value);
  }
  if (value > SEM_VALUE_MAX) {
    errno = EINVAL;
    return -1;
  }
  struct pt_sem *p = PS(s);
  p->value = value;
  p->qlock = 0;
  p->head = p->tail = NULL;
  __atomic_store_n(&p->mark, SEM_MARK, __ATOMIC_RELEASE);
  return 0;
}

ITO_PT_EXPORT int sem_destroy(sem_t *s) {
  ITO_PT_ENTER(sem_destroy, s);
  if (!ours(s)) return ito__pt_real.sem_destroy(s);
  __atomic_store_n(&PS(s)->mark, 0, __ATOMIC_RELAXED);
  return 0;
}

ITO_PT_EXPORT int sem_post(sem_t *s) {
  ITO_PT_ENTER(sem_post, s);
  if (!ours(s)) return ito__pt_real.sem_post(s);
  struct pt_sem *p = PS(s);
  ito__dropin_lock(&p->qlock, ITO_DROPIN_LR_QUEUE);
  /* a waiter is handed the count directly */
  void *w = ito__dropin_wq_take(&p->head, &p->tail, 1);
  if (!w) { /* takers decrement without the lock: atomic read-modify-writes only */
    unsigned v = __atomic_load_n(&p->value, __ATOMIC_RELAXED);
    do {
      if (v >= SEM_VALUE_MAX) {
        ito__dropin_unlock(&p->qlock);
        errno = EOVERFLOW;
        return -1;
      }
    } while (
        !__atomic_compare_exchange_n(&p->value, &v, v + 1, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
  }
  ito__dropin_unlock(&p->qlock);
  ito__dropin_wq_wake(w);
  return 0;
}

/* Takes one from the count if it is above zero. */
static int take_one(struct pt_sem *p) {
  unsigned v = __atomic_load_n(&p->value, __ATOMIC_RELAXED);
  while (v > 0)
    if (__atomic_compare_exchange_n(&p->value, &v, v - 1, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      return 1;
  return 0;
}

/* A post either finds the count above zero here (under the lock), or
 * finds this thread queued and hands the count to it. A post raises the
 * count under the lock and releases the lock last: a taker that took
 * without the lock waits until the lock is free before it returns, so that
 * it may destroy the semaphore and free its memory at once (a semaphore on
 * the stack as a completion). */
static int sem_take(struct pt_sem *p, int try, clockid_t clock, const struct timespec *abs) {
  if (take_one(p)) {
    while (__atomic_load_n(&p->qlock, __ATOMIC_ACQUIRE)) cpu_relax();
    return 0;
  }
  if (try) return EAGAIN;
  if (abs && ito__pt_bad_time(abs)) return EINVAL;
  ito__dropin_lock(&p->qlock, ITO_DROPIN_LR_QUEUE);
  if (take_one(p)) {
    ito__dropin_unlock(&p->qlock);
    return 0;
  }
  /* a signal's handler ends the wait with EINTR, as glibc's does; without
   * a deadline, a wait whose handlers all had SA_RESTART goes on (the
   * kernel restarts glibc's futex wait then) */
  int rc = ito__dropin_wq_wait(&p->qlock, &p->head, &p->tail, ITO_DROPIN_WQ_INTR, clock, abs, NULL,
                               NULL);
  if (rc == EINTR && !abs && ito__dropin_sig_restartable()) return sem_take(p, 0, clock, abs);
  return rc;
}

/* ---- glibc's semaphore: the wait in slices --------------------------------------------- */

#define SLICE_NS 100000000LL

/* glibc's wait until abs on clock (none: for ever): 0, or -1 with errno. */
static int shared_wait(sem_t *s, clockid_t clock, const struct timespec *abs) {
  for (;;) {
    if (ito__pt_real.sem_trywait(s) == 0) return 0;
    if (errno != EAGAIN) return -1;
    if (abs && ito__pt_bad_time(abs)) { /* (as glibc: only a wait checks the time) */
      errno = EINVAL;
      return -1;
    }
    int last = abs && ns_until(clock, abs) <= SLICE_NS;
    struct timespec slice = deadline_in(CLOCK_MONOTONIC, SLICE_NS);
    ito__dropin_kwait_begin(NULL, NULL);
    int rc = last ? ito__pt_real.sem_clockwait(s, clock, abs)
                  : ito__pt_real.sem_clockwait(s, CLOCK_MONOTONIC, &slice);
    int e = errno;
    ito__dropin_kwait_end();
    if (rc == 0) return 0;
    if (e == ETIMEDOUT && !last) {
      ito__pt_testcancel(); /* a cancellation point all along */
      continue;
    }
    ito__pt_testcancel_eintr(e == EINTR);
    errno = e;
    return -1;
  }
}

static int sem_result(int rc) {
  if (!rc) return 0;
  ito__pt_testcancel_eintr(rc == EINTR); /* a cancellation point */
  errno = rc;
  return -1;
}

ITO_PT_EXPORT int sem_wait(sem_t *s) {
  ITO_PT_ENTER(sem_wait, s);
  ito__pt_testcancel();
  if (!ours(s)) return shared_wait(s, CLOCK_REALTIME, NULL);
  return sem_result(sem_take(PS(s), 0, CLOCK_REALTIME, NULL));
}

ITO_PT_EXPORT int sem_trywait(sem_t *s) {
  ITO_PT_ENTER(sem_trywait, s);
  if (!ours(s)) return ito__pt_real.sem_trywait(s);
  return sem_result(sem_take(PS(s), 1, CLOCK_REALTIME, NULL));
}

ITO_PT_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abs) {
  ITO_PT_ENTER(sem_timedwait, s, abs);
  ito__pt_testcancel();
  if (ito__pt_null(abs)) return sem_result(EINVAL);
  if (!ours(s)) return shared_wait(s, CLOCK_REALTIME, abs);
  return sem_result(sem_take(PS(s), 0, CLOCK_REALTIME, abs));
}

ITO_PT_EXPORT int sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abs) {
  ITO_PT_ENTER(sem_clockwait, s, clock, abs);
  ito__pt_testcancel();
  if (ito__pt_bad_clockwait(clock, abs)) return sem_result(EINVAL);
  if (!ours(s)) return shared_wait(s, clock, abs);
  return sem_result(sem_take(PS(s), 0, clock, abs));
}

ITO_PT_EXPORT int sem_getvalue(sem_t *s, int *out) {
  ITO_PT_ENTER(sem_getvalue, s, out);
  if (!ours(s)) return ito__pt_real.sem_getvalue(s, out);
  *out = (int)__atomic_load_n(&PS(s)->value, __ATOMIC_RELAXED);
  return 0;
}
