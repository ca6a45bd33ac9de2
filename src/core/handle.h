/* Thread handles (handle.c): a slot in a table of every descriptor ever
 * made, and the slot's generation. Invariants:
 *  1. A descriptor keeps its slot for as long as its memory is the
 *     runtime's (pool and own stacks: for ever; the caller's stack: until
 *     the thread is released).
 *  2. A slot's generation changes exactly when its thread is released
 *     (ito__handle_retire), so handles of earlier threads fail.
 *  3. A handle is checked against the table before its descriptor is
 *     read.
 *  4. A slot's detached flag says whether the thread released at the
 *     last change of its generation was detached (or released by a
 *     detach); it is written before that change. */
#ifndef ITO_CORE_HANDLE_H
#define ITO_CORE_HANDLE_H

#include <ito/ito.h>

#include "base.h"
#include "thread.h"

/* Gives t a slot (t->idx); 0 or EAGAIN. */
HIDDEN int ito__handle_register(ithread *t);
/* t's memory goes back to its owner: its handles fail, its slot is reused. */
HIDDEN void ito__handle_unregister(ithread *t);

/* ---- the table, read inline on every create, join and check ----------------------------- */
#define HANDLE_MARK (1ULL << 63)
#define HANDLE_GEN_MASK ((1u << 31) - 1)
#define HANDLE_CHUNK_LOG2 16
#define HANDLE_NCHUNKS (1u << 16) /* 2^32 slots */
struct handle_slot {
  ithread *t;
  uint32_t gen;      /* the generation handles of this slot carry now */
  uint32_t next;     /* free list of slots whose descriptor went away (+1; 0 ends it) */
  uint32_t detached; /* invariant 4 */
};
extern struct handle_slot *ito__handle_chunks[HANDLE_NCHUNKS] HIDDEN;
extern uint32_t ito__handle_nslots HIDDEN;

static inline struct handle_slot *handle_slot_at(uint32_t i) {
  struct handle_slot *c =
      __atomic_load_n(&ito__handle_chunks[i >> HANDLE_CHUNK_LOG2], __ATOMIC_ACQUIRE);
  return c ? &c[i & ((1u << HANDLE_CHUNK_LOG2) - 1)] : NULL;
}
static inline uint32_t handle_gen_of(ito_thread_t h) {
  return (uint32_t)(h >> 32) & HANDLE_GEN_MASK;
}

/* t's thread is over: its handles fail from now on (invariant 2). */
static inline void ito__handle_retire(ithread *t) {
  struct handle_slot *s = handle_slot_at(t->idx);
  ITO_ASSERT(s && s->t == t);
  if (!s) __builtin_unreachable(); /* (the slot of a registered descriptor) */
  __atomic_store_n(&s->detached, (uint32_t)((t->flags & TH_DETACHED) != 0), __ATOMIC_RELAXED);
  __atomic_store_n(&s->gen, (s->gen + 1) & HANDLE_GEN_MASK, __ATOMIC_RELEASE);
}
/* Was h, now stale, the handle of a detached thread that has ended and
 * been released (the slot moved on once since, invariant 4)? */
static inline bool ito__handle_ended_detached(ito_thread_t h) {
  if (!(h & HANDLE_MARK)) return false;
  uint32_t i = (uint32_t)h;
  if (!i || i >= __atomic_load_n(&ito__handle_nslots, __ATOMIC_ACQUIRE)) return false;
  struct handle_slot *s = handle_slot_at(i);
  return s &&
         __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == ((handle_gen_of(h) + 1) & HANDLE_GEN_MASK) &&
         __atomic_load_n(&s->detached, __ATOMIC_RELAXED);
}
/* The handle of t's current thread. */
static inline ito_thread_t ito__handle(ithread *t) {
  struct handle_slot *s = handle_slot_at(t->idx);
  ITO_ASSERT(s && s->t == t);
  return HANDLE_MARK | (uint64_t)__atomic_load_n(&s->gen, __ATOMIC_RELAXED) << 32 | t->idx;
}
/* The descriptor a handle names, or NULL (a stale or forged handle). */
static inline ithread *ito__thread_of(ito_thread_t h) {
  if (!(h & HANDLE_MARK)) return NULL;
  uint32_t i = (uint32_t)h;
  if (!i || i >= __atomic_load_n(&ito__handle_nslots, __ATOMIC_ACQUIRE)) return NULL;
  struct handle_slot *s = handle_slot_at(i);
  if (!s || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != handle_gen_of(h)) return NULL;
  return __atomic_load_n(&s->t, __ATOMIC_ACQUIRE);
}
/* After reading t's flags or sync through h: does h still name t? */
static inline bool ito__still_current(ithread *t, ito_thread_t h) {
  struct handle_slot *s = handle_slot_at(t->idx);
  return s && __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == handle_gen_of(h);
}

#endif
