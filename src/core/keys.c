/* Thread-specific data, per lightweight thread: a table of keys with their
 * destructors, and per thread an array of values taken at its first set
 * from memory of the runtime's own. An OS thread that is not an ito thread has values of its own.
 * Design: docs/api.md, "Thread-specific data".
 *
 * Invariants:
 *  1. A key's `used` and `dtor` change only under key_lock; a slot is
 *     handed out by ito_key_create only while unused.
 *  2. A thread's values belong to the thread, not to the fiber or worker
 *     it runs on: they move with it when it migrates (key_slots reads them
 *     through the current fiber's thread), and only its own code sets them.
 *  3. Program keys (ito_key_create) are [0, ITO_KEYS_MAX), as many as
 *     glibc gives; keys of the drop-in libraries (ito__key_create_reserved)
 *     are the KEYS_RESERVED slots after them, which the public calls
 *     neither hand out nor read.
 *  4. A value is cleared before its destructor runs, so a destructor that
 *     sets a value again is run again, up to 4 rounds (POSIX's
 *     PTHREAD_DESTRUCTOR_ITERATIONS); a deleted key's destructor is never
 *     run. */
#define _GNU_SOURCE
#include "thread.h"

#include "forkpart.h"
#include "worker.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define KEYS_ALL (ITO_KEYS_MAX + KEYS_RESERVED)

static int key_lock;
static struct {
  int used;
  void (*dtor)(void *);
} keys[KEYS_ALL];

/* A free key of [lo, hi) for destructor, or EAGAIN. */
static int key_take(unsigned lo, unsigned hi, ito_key_t *key, void (*destructor)(void *)) {
  if (!key) return EINVAL;
  spin_lock(&key_lock, LR_KEYS);
  for (unsigned i = lo; i < hi; i++) {
    if (!keys[i].used) {
      keys[i].used = 1;
      keys[i].dtor = destructor;
      spin_unlock(&key_lock);
      *key = i;
      return 0;
    }
  }
  spin_unlock(&key_lock);
  return EAGAIN;
}

int ito_key_create(ito_key_t *key, void (*destructor)(void *)) {
  return key_take(0, ITO_KEYS_MAX, key, destructor);
}

int ito__key_create_reserved(ito_key_t *key, void (*destructor)(void *)) {
  return key_take(ITO_KEYS_MAX, KEYS_ALL, key, destructor);
}

int ito_key_delete(ito_key_t key) {
  if (key >= ITO_KEYS_MAX) return EINVAL;
  spin_lock(&key_lock, LR_KEYS);
  int ok = keys[key].used;
  keys[key].used = 0;
  keys[key].dtor = NULL;
  spin_unlock(&key_lock);
  return ok ? 0 : EINVAL;
}

/* Value arrays (KEYS_ALL slots) come from mappings of the runtime's
 * own, never from the program's allocator: an allocator that keeps its
 * per-thread state under a key (jemalloc) calls pthread_setspecific while
 * it sets itself up, where glibc needs no memory for the first keys; a
 * calloc there re-entered the allocator's half-made set-up, and jemalloc
 * registered its fork handlers twice (the second prepare then waited for
 * ever on the locks the first one took). An array given back is zeroed and
 * kept for the next thread, on a list through its first slot (under
 * key_lock). */
#define SLOTS_BYTES (KEYS_ALL * sizeof(void *))
#define SLAB_ARRAYS 32
static void **spare;
static char *slab_next, *slab_end;

static void **slots_new(void) {
  spin_lock(&key_lock, LR_KEYS);
  void **a = spare;
  if (a) {
    spare = a[0];
    a[0] = NULL;
  } else {
    if (slab_next == slab_end) {
      char *m = mmap(NULL, SLOTS_BYTES * SLAB_ARRAYS, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) slab_next = m, slab_end = m + SLOTS_BYTES * SLAB_ARRAYS;
    }
    if (slab_next != slab_end) {
      a = (void **)slab_next;
      slab_next += SLOTS_BYTES;
    }
  }
  spin_unlock(&key_lock);
  return a;
}

void ito__keys_free(void **a) {
  if (!a) return;
  memset(a, 0, SLOTS_BYTES);
  spin_lock(&key_lock, LR_KEYS);
  a[0] = spare;
  spare = a;
  spin_unlock(&key_lock);
}

/* Values of an OS thread that is not an ito thread. */
static __thread void **os_keys;

void **ito__take_os_keys(void) {
  void **k = os_keys;
  os_keys = NULL;
  return k;
}

static void ***key_slots(void) {
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread) return (void ***)&w->cur->thread->keys;
  return &os_keys;
}

void *ito__key_get(ito_key_t key) {
  ITO_ASSERT(key < KEYS_ALL);
  void **k = *key_slots();
  return k ? k[key] : NULL;
}

void *ito_getspecific(ito_key_t key) { return key < ITO_KEYS_MAX ? ito__key_get(key) : NULL; }

void *ito_key_getspecific(ito_key_t key) { return ito_getspecific(key); }

int ito__key_set(ito_key_t key, const void *value) {
  if (key >= KEYS_ALL || !LOAD_RLX(&keys[key].used)) return EINVAL;
  void ***slots = key_slots();
  if (!*slots) {
    *slots = slots_new();
    if (!*slots) return ENOMEM;
  }
  (*slots)[key] = (void *)value;
  return 0;
}

int ito_setspecific(ito_key_t key, const void *value) {
  return key < ITO_KEYS_MAX ? ito__key_set(key, value) : EINVAL;
}

int ito_key_setspecific(ito_key_t key, const void *value) { return ito_setspecific(key, value); }

void ito__run_key_destructors(ithread *t) {
  for (int round = 0; round < 4 && t->keys; round++) {
    int any = 0;
    for (unsigned i = 0; i < KEYS_ALL; i++) {
      void *v = t->keys[i];
      if (!v) continue;
      t->keys[i] = NULL;
      void (*d)(void *) = LOAD_RLX(&keys[i].used) ? keys[i].dtor : NULL;
      if (d) {
        d(v);
        any = 1;
      }
    }
    if (!any) break;
  }
}

static void keys_fork_lock(int take) {
  if (take)
    spin_lock(&key_lock, LR_KEYS);
  else
    spin_unlock(&key_lock);
}
ITO_FORK_PART(keys_fork, .lock_rank = 15, .lock = keys_fork_lock);
