/* libito-omp.so: omp_lock_t and omp_nest_lock_t. docs/openmp.md.
 *
 * gcc's omp_lock_t has 4 bytes, too small for a lock with a wait queue, so
 * it holds the index (plus one) of an ito_mutex_t in a table that grows in
 * chunks and never moves; omp_destroy_lock gives the entry back. The nest
 * lock's 16 bytes hold the index, the depth and the owning task. A lock
 * used without omp_init_lock stops the program with a message. */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK 1024
#define MAX_CHUNKS 65536

struct entry {
  ito_mutex_t m;
  unsigned next_free; /* index + 1 of the next free entry */
};

static struct entry *chunks[MAX_CHUNKS];
static unsigned nentries;  /* entries made so far */
static unsigned free_head; /* index + 1 of a free entry, 0: none */
static int table_lock;

static unsigned entry_new(void) {
  struct entry *spare = NULL; /* a chunk made with no lock held (docs/locks.md) */
  ito__dropin_lock(&table_lock, ITO_DROPIN_LR_LEAF);
  while (!free_head && nentries / CHUNK < MAX_CHUNKS && !chunks[nentries / CHUNK] && !spare) {
    ito__dropin_unlock(&table_lock);
    if (!(spare = calloc(CHUNK, sizeof *spare))) ito__omp_fatal("out of memory for an OpenMP lock");
    ito__dropin_lock(&table_lock, ITO_DROPIN_LR_LEAF);
  }
  unsigned idx;
  if (free_head) {
    idx = free_head - 1;
    free_head = chunks[idx / CHUNK][idx % CHUNK].next_free;
  } else {
    idx = nentries;
    if (idx / CHUNK >= MAX_CHUNKS) {
      ito__dropin_unlock(&table_lock);
      ito__omp_fatal("too many OpenMP locks alive at once (%u)", idx);
    }
    if (!chunks[idx / CHUNK]) {
      ITO_OMP_ASSERT(spare);
      __atomic_store_n(&chunks[idx / CHUNK], spare, __ATOMIC_RELEASE);
      spare = NULL;
    }
    __atomic_store_n(&nentries, nentries + 1, __ATOMIC_RELEASE);
  }
  ito_mutex_init(&chunks[idx / CHUNK][idx % CHUNK].m);
  ito__dropin_unlock(&table_lock);
  free(spare); /* (another thread's chunk, or a freed entry, came first) */
  return idx + 1;
}

static void entry_free(unsigned id) {
  ito__dropin_lock(&table_lock, ITO_DROPIN_LR_LEAF);
  unsigned idx = id - 1;
  chunks[idx / CHUNK][idx % CHUNK].next_free = free_head;
  free_head = id;
  ito__dropin_unlock(&table_lock);
}

static ito_mutex_t *mutex_of(unsigned id, const char *fn) {
  if (UNLIKELY(id == 0 || id > __atomic_load_n(&nentries, __ATOMIC_ACQUIRE)))
    ito__omp_fatal("%s on a lock that omp_init_lock did not initialise (or that was destroyed)",
                   fn);
  struct entry *c = __atomic_load_n(&chunks[(id - 1) / CHUNK], __ATOMIC_ACQUIRE);
  return &c[(id - 1) % CHUNK].m;
}

_Static_assert(sizeof(lock_t) <= 4, "omp_lock_t is 4 bytes in gcc's omp.h");
_Static_assert(sizeof(nest_lock_t) <= 16, "omp_nest_lock_t is 16 bytes in gcc's omp.h");

OMP_API void omp_init_lock(lock_t *l) { l->id = entry_new(); }
OMP_API void omp_init_lock_with_hint(lock_t *l, int hint) {
  (void)hint;
  omp_init_lock(l);
}
OMP_API void omp_destroy_lock(lock_t *l) {
  mutex_of(l->id, "omp_destroy_lock");
  entry_free(l->id);
  l->id = 0;
}
OMP_API void omp_set_lock(lock_t *l) { ito_mutex_lock(mutex_of(l->id, "omp_set_lock")); }
OMP_API void omp_unset_lock(lock_t *l) { ito_mutex_unlock(mutex_of(l->id, "omp_unset_lock")); }
OMP_API int omp_test_lock(lock_t *l) {
  return ito_mutex_trylock(mutex_of(l->id, "omp_test_lock")) == 0;
}

/* Nest locks belong to a task (OpenMP 3.0 and later). */
OMP_API void omp_init_nest_lock(nest_lock_t *l) {
  l->id = entry_new();
  l->depth = 0;
  l->owner = NULL;
}
OMP_API void omp_init_nest_lock_with_hint(nest_lock_t *l, int hint) {
  (void)hint;
  omp_init_nest_lock(l);
}
OMP_API void omp_destroy_nest_lock(nest_lock_t *l) {
  mutex_of(l->id, "omp_destroy_nest_lock");
  entry_free(l->id);
  l->id = 0;
}
OMP_API void omp_set_nest_lock(nest_lock_t *l) {
  ito_mutex_t *m = mutex_of(l->id, "omp_set_nest_lock");
  task *me = ito__omp_cur();
  if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
    l->depth++;
    return;
  }
  ito_mutex_lock(m);
  __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
  l->depth = 1;
}
OMP_API void omp_unset_nest_lock(nest_lock_t *l) {
  ito_mutex_t *m = mutex_of(l->id, "omp_unset_nest_lock");
  if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) != ito__omp_cur())
    ito__omp_fatal("omp_unset_nest_lock by a task that does not hold the lock");
  if (--l->depth == 0) {
    __atomic_store_n(&l->owner, NULL, __ATOMIC_RELAXED);
    ito_mutex_unlock(m);
  }
}
OMP_API int omp_test_nest_lock(nest_lock_t *l) {
  ito_mutex_t *m = mutex_of(l->id, "omp_test_nest_lock");
  task *me = ito__omp_cur();
  if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) return ++l->depth;
  if (ito_mutex_trylock(m)) return 0;
  __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
  l->depth = 1;
  return 1;
}
