/* Thread handles: an index into a table of every descriptor ever made, and
 * that slot's generation. A handle is checked against the table before
 * any descriptor is read, so a stale handle (its thread joined, its
 * descriptor reused) and a forged one (never returned by the runtime) both
 * fail instead of reading memory that may not be a descriptor. Bit 63 is
 * set: glibc's pthread_t values have it clear, so the pthread library
 * tells the two apart. Design: docs/scheduler.md, "Threads". */
#define _GNU_SOURCE
#include "handle.h"

#include "os.h"

#include <errno.h>
#include <sys/mman.h>

#define HANDLE_MARK (1ULL << 63)
#define GEN_BITS 31
#define GEN_MASK ((1u << GEN_BITS) - 1)
#define CHUNK_LOG2 16
#define CHUNK (1u << CHUNK_LOG2)
#define NCHUNKS (1u << 16) /* 2^32 slots */

struct slot {
  ithread *t;
  uint32_t gen;   /* the generation handles of this slot carry now */
  uint32_t next;  /* free list of slots whose descriptor went away (+1; 0 ends it) */
};

static struct slot *chunks[NCHUNKS];
static uint32_t nslots = 1; /* slot 0 is never used: a handle is never just the mark */
static uint32_t free_slots;
static int table_lock;

static struct slot *slot_at(uint32_t i) {
  struct slot *c = __atomic_load_n(&chunks[i >> CHUNK_LOG2], __ATOMIC_ACQUIRE);
  return c ? &c[i & (CHUNK - 1)] : NULL;
}

int ito__handle_register(ithread *t) {
  spin_lock(&table_lock);
  uint32_t i;
  if (free_slots) {
    i = free_slots - 1;
    free_slots = slot_at(i)->next;
  } else {
    if (nslots == 0 || nslots >> CHUNK_LOG2 >= NCHUNKS) {
      spin_unlock(&table_lock);
      return EAGAIN;
    }
    i = nslots;
    if (!chunks[i >> CHUNK_LOG2]) {
      void *m = mmap(NULL, CHUNK * sizeof(struct slot), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) {
        spin_unlock(&table_lock);
        return EAGAIN;
      }
      __atomic_store_n(&chunks[i >> CHUNK_LOG2], (struct slot *)m, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&nslots, nslots + 1, __ATOMIC_RELEASE);
  }
  struct slot *s = slot_at(i);
  s->next = 0;
  __atomic_store_n(&s->t, t, __ATOMIC_RELEASE);
  spin_unlock(&table_lock);
  t->idx = i;
  return 0;
}

void ito__handle_unregister(ithread *t) {
  ito__handle_retire(t);
  spin_lock(&table_lock);
  struct slot *s = slot_at(t->idx);
  ITO_ASSERT(s && s->t == t);
  __atomic_store_n(&s->t, NULL, __ATOMIC_RELEASE);
  s->next = free_slots;
  free_slots = t->idx + 1;
  spin_unlock(&table_lock);
}

void ito__handle_retire(ithread *t) {
  struct slot *s = slot_at(t->idx);
  ITO_ASSERT(s && s->t == t);
  __atomic_store_n(&s->gen, (s->gen + 1) & GEN_MASK, __ATOMIC_RELEASE);
}

ito_thread_t ito__handle(ithread *t) {
  struct slot *s = slot_at(t->idx);
  ITO_ASSERT(s && s->t == t);
  return HANDLE_MARK | (uint64_t)__atomic_load_n(&s->gen, __ATOMIC_RELAXED) << 32 | t->idx;
}

static uint32_t gen_of(ito_thread_t h) { return (uint32_t)(h >> 32) & GEN_MASK; }

ithread *ito__thread_of(ito_thread_t h) {
  if (!(h & HANDLE_MARK)) return NULL;
  uint32_t i = (uint32_t)h;
  if (!i || i >= __atomic_load_n(&nslots, __ATOMIC_ACQUIRE)) return NULL;
  struct slot *s = slot_at(i);
  if (!s || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != gen_of(h)) return NULL;
  return __atomic_load_n(&s->t, __ATOMIC_ACQUIRE);
}

bool ito__still_current(ithread *t, ito_thread_t h) {
  struct slot *s = slot_at(t->idx);
  return s && __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen_of(h);
}
