/* The work-stealing deque's slower operations: the owner's pop, the
 * settling of a conflict, the end of a fenced window and the thief's
 * steal. Invariants at the top of deque.h; the protocol and why the owner
 * needs no fence are in docs/scheduler.md. */
#define _GNU_SOURCE
#include "deque.h"

#include "hooks.h"
#include "worker.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

int ito__deque_init(struct ito_deque *d, int log2) {
  memset(d, 0, sizeof *d);
  d->mask = (1ULL << log2) - 1;
  void *m = mmap(NULL, sizeof(uintptr_t) << log2, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return ENOMEM;
  d->slots = m;
  return 0;
}

void ito__deque_drop_all(struct ito_deque *d) {
  uint64_t h = __atomic_load_n(&d->head, __ATOMIC_RELAXED);
  uint64_t t = __atomic_load_n(&d->tail, __ATOMIC_RELAXED);
  for (uint64_t i = h; i < t; i++) d->slots[i & d->mask] = 0; /* (invariant 2's cleared slots) */
  __atomic_store_n(&d->head, t, __ATOMIC_RELAXED);
  d->steal_lock = 0;
  ito__deque_reset(d);
}

void ito__deque_reset(struct ito_deque *d) {
  ITO_ASSERT(!dq_nonempty(d));
  /* without membarrier every pop fences, for ever (invariant 4) */
  d->fence_pops = ito__asym_fence ? 0 : 1 << 30;
}

/* The window ran out: back to fence-free pops, unless a thief holds the
 * steal lock (it may be relying on the fence: one more fenced pop, then
 * try again). Without membarrier the window never closes. */
void ito__deque_fence_expire(struct ito_deque *d) {
  int n = 1;
  if (!ito__asym_fence) {
    n = 1 << 30;
  } else if (spin_trylock(&d->steal_lock, LR_STEAL)) {
    __atomic_store_n(&d->fence_pops, 0, __ATOMIC_RELAXED);
    spin_unlock(&d->steal_lock);
    return;
  }
  __atomic_store_n(&d->fence_pops, n, __ATOMIC_RELAXED);
}

/* The owner waits for a thief that holds its steal lock: as long as the
 * thief's OS thread is off its CPU, on a loaded machine (the thief makes
 * a system call, membarrier, under the lock). A recorder sees the wait
 * as the runtime's, not as the code that forked (docs/hooks.md). */
static __attribute__((noinline)) void wait_thief(struct ito_deque *d) {
  worker *w = cur_worker();
  int id = w ? w->id : -1;
  ito__hook_emit(ITO_EV_WAIT_THIEF, id, d, 0);
  spin_lock(&d->steal_lock, LR_STEAL);
  ito__hook_emit(ITO_EV_WAIT_THIEF, id, d, 1);
}

bool ito__deque_conflict(struct ito_deque *d, uint64_t t) {
  if (!spin_trylock(&d->steal_lock, LR_STEAL)) {
    if (UNLIKELY(LOAD_RLX(&ito__hooks_on)))
      wait_thief(d);
    else
      spin_lock(&d->steal_lock, LR_STEAL);
  }
  bool ours = __atomic_load_n(&d->head, __ATOMIC_RELAXED) <= t;
  if (!ours) __atomic_store_n(&d->tail, t + 1, __ATOMIC_RELAXED);
  spin_unlock(&d->steal_lock);
  return ours;
}

/* Owner pop of index t:
 *     tail = t; barrier (invariant 4); if head <= t: the entry is ours;
 *     else settle under the lock. */
uintptr_t ito__deque_pop(struct ito_deque *d) {
  uint64_t t;
  if (!dq_pop_begin(d, &t)) return 0;
  dq_owner_barrier(d);
  if (!LIKELY(dq_pop_uncontended(d, t)) && !ito__deque_conflict(d, t)) return 0;
  return dq_pop_take(d, t);
}

/* Thief:
 *     lock; h = head; head = h + 1; barrier (membarrier, or a fence while
 *     the owner's window is open); if h + 1 > tail: head = h, unlock, fail;
 *     the entry at h is ours. */
uintptr_t ito__deque_steal(struct ito_deque *v, uintptr_t **slot) {
  uint64_t h = __atomic_load_n(&v->head, __ATOMIC_RELAXED);
  if (h >= __atomic_load_n(&v->tail, __ATOMIC_ACQUIRE)) return 0;
  if (!dq_steal_claim(v, &h)) return 0;
  if (__atomic_load_n(&v->fence_pops, __ATOMIC_ACQUIRE))
    full_fence(); /* the owner fences its pops now */
  else
    ito__heavy_barrier();
  return dq_steal_check(v, h, slot);
}
