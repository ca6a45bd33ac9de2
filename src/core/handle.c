/* Thread handles: an index into a table of every descriptor ever made, and
 * that slot's generation. A handle is checked against the table before
 * any descriptor is read, so a stale handle (its thread joined, its
 * descriptor reused) and a forged one (never returned by the runtime) both
 * fail instead of reading memory that may not be a descriptor. Bit 63 is
 * set: glibc's pthread_t values have it clear, so the pthread library
 * tells the two apart. Design: docs/scheduler.md, "Threads". */
#define _GNU_SOURCE
#include "handle.h"

#include "forkpart.h"
#include "os.h"

#include <errno.h>
#include <sys/mman.h>

struct handle_slot *ito__handle_chunks[HANDLE_NCHUNKS];
uint32_t ito__handle_nslots = 1; /* slot 0 is never used: a handle is never just the mark */
static uint32_t free_slots;
static int table_lock;

#define slot_at handle_slot_at
#define chunks ito__handle_chunks
#define nslots ito__handle_nslots
#define CHUNK_LOG2 HANDLE_CHUNK_LOG2
#define NCHUNKS HANDLE_NCHUNKS
#define CHUNK (1u << HANDLE_CHUNK_LOG2)

int ito__handle_register(ithread *t) {
  spin_lock(&table_lock, LR_HANDLES);
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
      void *m = mmap(NULL, CHUNK * sizeof(struct handle_slot), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) {
        spin_unlock(&table_lock);
        return EAGAIN;
      }
      __atomic_store_n(&chunks[i >> CHUNK_LOG2], (struct handle_slot *)m, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&nslots, nslots + 1, __ATOMIC_RELEASE);
  }
  struct handle_slot *s = slot_at(i);
  s->next = 0;
  __atomic_store_n(&s->t, t, __ATOMIC_RELEASE);
  spin_unlock(&table_lock);
  t->idx = i;
  return 0;
}

void ito__handle_unregister(ithread *t) {
  ito__handle_retire(t);
  spin_lock(&table_lock, LR_HANDLES);
  struct handle_slot *s = slot_at(t->idx);
  ITO_ASSERT(s && s->t == t);
  __atomic_store_n(&s->t, NULL, __ATOMIC_RELEASE);
  s->next = free_slots;
  free_slots = t->idx + 1;
  spin_unlock(&table_lock);
}

static void handles_fork_lock(int take) {
  if (take)
    spin_lock(&table_lock, LR_HANDLES);
  else
    spin_unlock(&table_lock);
}
ITO_FORK_PART(handles_fork, .lock_rank = 19, .lock = handles_fork_lock);
