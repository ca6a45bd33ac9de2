/* The work-stealing deque: the only C code that touches its fields (the
 * x86-64 fork does the same in assembly, at the offsets of
 * asm_contract.h). Design and proofs: docs/scheduler.md, "The deque
 * protocol".
 *
 * Invariants:
 *  1. Indices grow without bound; entry i is in slot i & mask. The owner
 *     alone writes tail, with plain stores; thieves write head holding
 *     steal_lock. An entry in [head, tail) is never 0.
 *  2. Whoever takes an entry clears its slot: a thief after its accounting
 *     (dq_steal_done), the owner when it pops (dq_pop). The owner's fork
 *     that takes its own record back leaves the slot as it is; only that
 *     frame ever stores that record's address. So a slot that no longer
 *     holds what its pusher stored was taken by somebody else.
 *  3. Every pusher keeps DEQUE_MARGIN entries free (dq_full): the fork
 *     checks capacity only when the tail crosses a multiple of
 *     DEQUE_MARGIN.
 *  4. The owner's barrier between its tail store and its head load is a
 *     compiler barrier while fence_pops is 0, a full fence while it is
 *     positive; a thief that reads it 0 uses membarrier, one that reads it
 *     positive a plain fence (the fenced window). Without membarrier every
 *     pop fences. */
#ifndef ITO_CORE_DEQUE_H
#define ITO_CORE_DEQUE_H

#include "asm_contract.h"
#include "base.h"
#include "os.h"

/* Entries are tagged words: a fork record (tag 0), a suspended fiber
 * (ENT_FIBER) or a create record (ENT_CREATE). */
enum { ENT_FIBER = 1, ENT_CREATE = 2, ENT_TAGS = 3 };

struct ito_deque {
  /* the owner's line */
  uint64_t tail;
  uintptr_t *slots;
  uint64_t mask;
  int fence_pops; /* > 0: the owner's next pops fence (invariant 4) */
  char pad1[CACHELINE - 28];
  /* the thieves' line */
  uint64_t head;
  int steal_lock;
  char pad2[CACHELINE - 12];
};

_Static_assert(offsetof(struct ito_deque, tail) == W_TAIL, "asm: W_TAIL");
_Static_assert(offsetof(struct ito_deque, slots) == W_SLOTS, "asm: W_SLOTS");
_Static_assert(offsetof(struct ito_deque, mask) == W_MASK, "asm: W_MASK");
_Static_assert(offsetof(struct ito_deque, fence_pops) == W_FENCE, "asm: W_FENCE");
_Static_assert(offsetof(struct ito_deque, head) == W_HEAD, "asm: W_HEAD");
_Static_assert((DEQUE_MARGIN & (DEQUE_MARGIN - 1)) == 0, "DEQUE_MARGIN is a power of two");

/* Maps 2^log2 slots (touched lazily); 0 or ENOMEM. */
HIDDEN int ito__deque_init(struct ito_deque *d, int log2);
/* Before each start of the runtime: empty, and the fence mode set. */
HIDDEN void ito__deque_reset(struct ito_deque *d);
/* After fork, in the child: the entries belong to threads that are not
 * there; they are dropped (their slots cleared) and the deque is empty. */
HIDDEN void ito__deque_drop_all(struct ito_deque *d);

/* ---- the owner ---------------------------------------------------------------------- */

static inline uint64_t dq_tail(const struct ito_deque *d) {
  return __atomic_load_n(&d->tail, __ATOMIC_RELAXED);
}
/* Pushing at index t would leave fewer than DEQUE_MARGIN entries free.
 * Acquire: a slot is reused only after every thief that read it moved
 * head past it (release in dq_steal_claim; the same plain load on x86). */
static inline bool dq_full(const struct ito_deque *d, uint64_t t) {
  return t - __atomic_load_n(&d->head, __ATOMIC_ACQUIRE) + DEQUE_MARGIN > d->mask;
}
/* The capacity check of a push at t as the fork makes it: only when t is a
 * multiple of DEQUE_MARGIN (invariant 3). */
static inline bool dq_full_at_margin(const struct ito_deque *d, uint64_t t) {
  return (t & (DEQUE_MARGIN - 1)) == 0 && dq_full(d, t);
}
/* The slot of index t: an event recorder keeps its marks at a fixed
 * distance from it (hooks.h, invariant 4); nothing else uses its address. */
static inline uintptr_t *dq_slot(struct ito_deque *d, uint64_t t) { return &d->slots[t & d->mask]; }
/* The slot array's address and its capacity - 1 (the recorder's arrays
 * shadow it). */
static inline uintptr_t *dq_slots(const struct ito_deque *d) { return d->slots; }
static inline uint64_t dq_mask(const struct ito_deque *d) { return d->mask; }

/* Publishes e at index t (the tail; the caller checked capacity). */
static inline void dq_put(struct ito_deque *d, uint64_t t, uintptr_t e) {
  ITO_ASSERT(e != 0 && t == dq_tail(d));
  d->slots[t & d->mask] = e;
  __atomic_store_n(&d->tail, t + 1, __ATOMIC_RELEASE);
}
/* Publishes e at the tail; false (nothing pushed) if the deque is full. */
static inline bool dq_push(struct ito_deque *d, uintptr_t e) {
  uint64_t t = dq_tail(d);
  if (UNLIKELY(dq_full(d, t))) return false;
  dq_put(d, t, e);
  return true;
}

HIDDEN void ito__deque_fence_expire(struct ito_deque *d);
/* The owner's barrier between its tail store and its head load (invariant
 * 4). */
static inline void dq_owner_barrier(struct ito_deque *d) {
  int n = __atomic_load_n(&d->fence_pops, __ATOMIC_RELAXED);
  if (LIKELY(!n)) {
    __asm__ volatile("" ::: "memory");
    return;
  }
  full_fence();
  __atomic_store_n(&d->fence_pops, n - 1, __ATOMIC_RELAXED);
  if (n == 1) ito__deque_fence_expire(d);
}
/* The owner expects a thief soon: its next FENCE_WINDOW pops fence, so
 * that the thief needs a plain fence, not a membarrier. Only the owner
 * calls it. */
static inline void dq_expect_thief(struct ito_deque *d) {
  if (ito__asym_fence) __atomic_store_n(&d->fence_pops, FENCE_WINDOW, __ATOMIC_RELEASE);
}
static inline bool dq_window_open(const struct ito_deque *d) {
  return __atomic_load_n(&d->fence_pops, __ATOMIC_RELAXED) != 0;
}

/* The owner's pop of index t met a thief (head > t): settles it under the
 * steal lock. Returns true if entry t is still the owner's (else the deque
 * is left empty at t + 1). Called by the assembly fork too. */
HIDDEN bool ito__deque_conflict(struct ito_deque *d, uint64_t t);

/* Takes entry t back if the deque still ends with it (tail t + 1 and slot
 * t holding e) and no thief takes it now: the return of a fork or a create
 * to its own record. The slot keeps e (invariant 2). In steps: begin
 * (the check and tail = t), the barrier, then uncontended or the
 * conflict. */
static inline bool dq_take_back_begin(struct ito_deque *d, uint64_t t, uintptr_t e) {
  if (dq_tail(d) != t + 1 || __atomic_load_n(&d->slots[t & d->mask], __ATOMIC_ACQUIRE) != e)
    return false;
  __atomic_store_n(&d->tail, t, __ATOMIC_RELAXED);
  return true;
}
static inline bool dq_pop_uncontended(const struct ito_deque *d, uint64_t t);
static inline bool dq_take_back(struct ito_deque *d, uint64_t t, uintptr_t e) {
  if (!dq_take_back_begin(d, t, e)) return false;
  dq_owner_barrier(d);
  return dq_pop_uncontended(d, t) || ito__deque_conflict(d, t);
}

/* ---- the owner's pop, in the steps of docs/scheduler.md ------------------------------------
 * The steps exist as functions so that tests/unit/test_deque.c can run
 * them interleaved with a thief's in every order; ito__deque_pop is
 * begin, barrier, end. */
/* Step 1: claims the youngest index t by storing tail = t. False if the
 * deque is empty (nothing stored). */
static inline bool dq_pop_begin(struct ito_deque *d, uint64_t *t) {
  uint64_t x = dq_tail(d);
  if (__atomic_load_n(&d->head, __ATOMIC_RELAXED) >= x) return false;
  __atomic_store_n(&d->tail, x - 1, __ATOMIC_RELAXED);
  *t = x - 1;
  return true;
}
/* Step 3 (after the barrier, step 2): is entry t ours without the lock? */
static inline bool dq_pop_uncontended(const struct ito_deque *d, uint64_t t) {
  return __atomic_load_n(&d->head, __ATOMIC_RELAXED) <= t;
}
/* Step 4: takes entry t (ours) and clears its slot (invariant 2). */
static inline uintptr_t dq_pop_take(struct ito_deque *d, uint64_t t) {
  uintptr_t *slot = &d->slots[t & d->mask], e = *slot;
  ITO_ASSERT(e != 0); /* invariant 1 */
  __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
  return e;
}
/* Takes the youngest entry (clearing its slot), or returns 0. */
HIDDEN uintptr_t ito__deque_pop(struct ito_deque *d);

/* ---- the thief's steal, in steps ---------------------------------------------------------------
 * ito__deque_steal is: a look without the lock, claim, barrier, check. */
/* Step 1: with v's steal lock taken, claims the oldest index *h by storing
 * head = *h + 1. False (nothing stored) if the lock is busy. */
static inline bool dq_steal_claim(struct ito_deque *v, uint64_t *h) {
  if (!spin_trylock(&v->steal_lock, LR_STEAL)) return false;
  *h = __atomic_load_n(&v->head, __ATOMIC_RELAXED);
  /* release: orders this thief's earlier reads of slots before the owner's
   * reuse of them (dq_full) */
  __atomic_store_n(&v->head, *h + 1, __ATOMIC_RELEASE);
  return true;
}
/* Step 3 (after the barrier, step 2): entry h is the thief's, returned with
 * the lock still held and *slot set; or the owner has it (or the deque was
 * empty): head is put back, the lock released, 0 returned. */
static inline uintptr_t dq_steal_check(struct ito_deque *v, uint64_t h, uintptr_t **slot) {
  if (h + 1 > __atomic_load_n(&v->tail, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&v->head, h, __ATOMIC_RELAXED);
    spin_unlock(&v->steal_lock);
    return 0;
  }
  *slot = &v->slots[h & v->mask];
  uintptr_t e = **slot;
  ITO_ASSERT(e != 0); /* invariant 1 */
  return e;
}

/* The youngest entry without taking it, or 0 (racing with thieves: a slot
 * a thief took reads 0). */
static inline uintptr_t dq_peek(const struct ito_deque *d) {
  uint64_t t = dq_tail(d);
  if (__atomic_load_n(&d->head, __ATOMIC_RELAXED) >= t) return 0;
  return __atomic_load_n(&d->slots[(t - 1) & d->mask], __ATOMIC_ACQUIRE);
}
/* Entries thieves may still take: an estimate, without the lock. */
static inline uint64_t dq_size(const struct ito_deque *d) {
  uint64_t t = dq_tail(d), h = __atomic_load_n(&d->head, __ATOMIC_RELAXED);
  return t > h ? t - h : 0;
}

/* ---- anybody --------------------------------------------------------------------------- */

/* Does the deque hold an entry? (The sleeper's scan: acquire loads.) */
static inline bool dq_nonempty(const struct ito_deque *d) {
  return __atomic_load_n(&d->head, __ATOMIC_ACQUIRE) < __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);
}

/* The oldest entry, read without the lock (the monitor's guess of what
 * waits there): 0 when empty or just taken. */
static inline uintptr_t dq_oldest(const struct ito_deque *d) {
  uint64_t h = __atomic_load_n(&d->head, __ATOMIC_ACQUIRE);
  if (h >= __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE)) return 0;
  return __atomic_load_n(&d->slots[h & d->mask], __ATOMIC_RELAXED);
}

/* ---- thieves ----------------------------------------------------------------------------- */

/* Takes the oldest entry of v and returns it with v's steal_lock held and
 * *slot naming its slot; the caller does its accounting (a record is
 * still alive while the lock is held) and then calls dq_steal_done.
 * Returns 0 (no lock held) if there was nothing or the lock was busy. */
HIDDEN uintptr_t ito__deque_steal(struct ito_deque *v, uintptr_t **slot);
/* The thief cannot use what it took (no stack to run a continuation on):
 * the entry goes back to the owner, untouched. */
static inline void dq_steal_undo(struct ito_deque *v) {
  ITO_ASSERT(spin_held(&v->steal_lock));
  __atomic_store_n(&v->head, __atomic_load_n(&v->head, __ATOMIC_RELAXED) - 1, __ATOMIC_RELAXED);
  spin_unlock(&v->steal_lock);
}
static inline void dq_steal_done(struct ito_deque *v, uintptr_t *slot, uintptr_t e) {
  ITO_ASSERT(spin_held(&v->steal_lock) && *slot == e); /* taken once: by us */
  (void)e;
  __atomic_store_n(slot, 0, __ATOMIC_RELEASE); /* invariant 2 */
  spin_unlock(&v->steal_lock);
}

#endif
