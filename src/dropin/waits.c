/* Wait queues, lock words and sleeps for the drop-in libraries' objects
 * (src/core/waitq.h, src/core/sync.h). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/sync.h"
#include "../core/waitq.h"

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
void ito__dropin_unlock_wake(int *qlock, void **head, void **tail) {
  ito__unlock_wake(qlock, head, tail);
}
void ito__dropin_lock(int *qlock) { spin_lock(qlock); }
void ito__dropin_unlock(int *qlock) { spin_unlock(qlock); }

int ito__dropin_sleep_until(clockid_t clock, const struct timespec *abstime) {
  return ito__sleep_until(clock, abstime);
}
