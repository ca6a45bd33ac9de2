/* libito-omp.so: memory allocators (omp_init_allocator, omp_alloc and the
 * rest, GOMP_alloc), with gcc 12's libgomp's traits, pools, fallbacks and
 * block header. docs/openmp.md, "Memory allocators". */
#include "omp_int.h"

#include <stdlib.h>
#include <string.h>

/* omp.h's values (gcc 12): predefined memory spaces and allocators, trait
 * keys and trait values. */
enum {
  MS_DEFAULT = 0,
  MS_LARGE_CAP = 1,
  MS_CONST = 2,
  MS_HIGH_BW = 3,
  MS_LOW_LAT = 4,
};
enum {
  ATK_SYNC_HINT = 1,
  ATK_ALIGNMENT,
  ATK_ACCESS,
  ATK_POOL_SIZE,
  ATK_FALLBACK,
  ATK_FB_DATA,
  ATK_PINNED,
  ATK_PARTITION
};
#define ATV_DEFAULT ((uintptr_t)-1)
enum {
  ATV_FALSE = 0,
  ATV_TRUE = 1,
  ATV_CONTENDED = 3,
  ATV_UNCONTENDED = 4,
  ATV_SERIALIZED = 5,
  ATV_PRIVATE = 6,
  ATV_ALL = 7,
  ATV_THREAD = 8,
  ATV_PTEAM = 9,
  ATV_CGROUP = 10,
  ATV_DEFAULT_MEM_FB = 11,
  ATV_NULL_FB = 12,
  ATV_ABORT_FB = 13,
  ATV_ALLOCATOR_FB = 14,
  ATV_ENVIRONMENT = 15,
  ATV_NEAREST = 16,
  ATV_BLOCKED = 17,
  ATV_INTERLEAVED = 18,
};

struct trait {
  int key;
  uintptr_t value;
};

/* A user-made allocator: its handle is the address of this record. Every
 * handle above ALLOC_MAX_PREDEFINED is one. */
struct allocator {
  uintptr_t memspace;
  uintptr_t alignment; /* at least sizeof(void *) */
  uintptr_t pool_size; /* (uintptr_t)-1: no pool */
  uintptr_t used;      /* bytes taken from the pool, headers and padding included */
  uintptr_t fb_data;   /* the allocator_fb fallback's allocator */
  unsigned char sync_hint, access, fallback, pinned, partition;
};

#define NO_POOL ((uintptr_t)-1)

/* Before every block: what omp_free needs, whatever allocator it is
 * given (as libgomp's header, so the block's layout is the same). */
struct header {
  void *base;          /* what malloc returned */
  size_t size;         /* bytes taken from malloc (and from the pool) */
  uintptr_t allocator; /* the allocator that made it, resolved */
  void *pad;
};

static inline struct allocator *user_allocator(uintptr_t a) {
  return a > ALLOC_MAX_PREDEFINED ? (struct allocator *)a : NULL;
}

OMP_API uintptr_t omp_init_allocator(uintptr_t memspace, int ntraits, const struct trait *traits) {
  struct allocator d = {.memspace = memspace,
                        .alignment = 1,
                        .pool_size = NO_POOL,
                        .sync_hint = ATV_CONTENDED,
                        .access = ATV_ALL,
                        .fallback = ATV_DEFAULT_MEM_FB,
                        .pinned = ATV_FALSE,
                        .partition = ATV_ENVIRONMENT};
  if (memspace > MS_LOW_LAT) return ALLOC_NULL;
  for (int i = 0; i < ntraits; i++) {
    uintptr_t v = traits[i].value;
    switch (traits[i].key) {
      case ATK_SYNC_HINT:
        if (v == ATV_DEFAULT)
          d.sync_hint = ATV_CONTENDED;
        else if (v >= ATV_CONTENDED && v <= ATV_PRIVATE)
          d.sync_hint = (unsigned char)v;
        else
          return ALLOC_NULL;
        break;
      case ATK_ALIGNMENT:
        if (v == ATV_DEFAULT) {
          d.alignment = 1;
          break;
        }
        if (!v || (v & (v - 1))) return ALLOC_NULL; /* a power of two */
        d.alignment = v;
        break;
      case ATK_ACCESS:
        if (v == ATV_DEFAULT)
          d.access = ATV_ALL;
        else if (v >= ATV_ALL && v <= ATV_CGROUP)
          d.access = (unsigned char)v;
        else
          return ALLOC_NULL;
        break;
      case ATK_POOL_SIZE:
        d.pool_size = v == ATV_DEFAULT ? NO_POOL : v;
        break;
      case ATK_FALLBACK:
        if (v == ATV_DEFAULT)
          d.fallback = ATV_DEFAULT_MEM_FB;
        else if (v >= ATV_DEFAULT_MEM_FB && v <= ATV_ALLOCATOR_FB)
          d.fallback = (unsigned char)v;
        else
          return ALLOC_NULL;
        break;
      case ATK_FB_DATA:
        d.fb_data = v;
        break;
      case ATK_PINNED:
        if (v == ATV_DEFAULT || v == ATV_FALSE)
          d.pinned = ATV_FALSE;
        else if (v == ATV_TRUE)
          d.pinned = ATV_TRUE;
        else
          return ALLOC_NULL;
        break;
      case ATK_PARTITION:
        if (v == ATV_DEFAULT)
          d.partition = ATV_ENVIRONMENT;
        else if (v >= ATV_ENVIRONMENT && v <= ATV_INTERLEAVED)
          d.partition = (unsigned char)v;
        else
          return ALLOC_NULL;
        break;
      default:
        return ALLOC_NULL;
    }
  }
  if (d.alignment < sizeof(void *)) d.alignment = sizeof(void *);
  /* as gcc 12's runtime: no pinned memory and no high-bandwidth space */
  if (d.pinned || d.memspace == MS_HIGH_BW) return ALLOC_NULL;
  struct allocator *a = malloc(sizeof *a);
  if (!a) ito__omp_fatal("omp_init_allocator: out of memory");
  *a = d;
  return (uintptr_t)a;
}

OMP_API void omp_destroy_allocator(uintptr_t a) {
  if (a != ALLOC_NULL) free((void *)a);
}

/* ---- the default allocator: def-allocator-var, a task's ICV ---------------------------- */
OMP_API void omp_set_default_allocator(uintptr_t a) {
  ito__omp_cur()->icv.def_allocator = a == ALLOC_NULL ? ALLOC_DEFAULT : a;
}
OMP_API uintptr_t omp_get_default_allocator(void) { return ito__omp_cur()->icv.def_allocator; }

/* ---- allocation -------------------------------------------------------------------------- */

/* Takes n bytes from a's pool; false when they do not fit. */
static bool pool_take(struct allocator *a, size_t n) {
  if (n > a->pool_size) return false;
  uintptr_t used = __atomic_load_n(&a->used, __ATOMIC_RELAXED);
  do {
    uintptr_t want;
    if (__builtin_add_overflow(used, n, &want) || want > a->pool_size) return false;
    if (__atomic_compare_exchange_n(&a->used, &used, want, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
      return true;
  } while (1);
}
static inline void pool_give(struct allocator *a, size_t n) {
  __atomic_fetch_sub(&a->used, n, __ATOMIC_RELAXED);
}

/* The block's user pointer in base, at an address that is a multiple of
 * align with room for the header before it, and the header filled in. */
static void *place(void *base, size_t align, size_t size, uintptr_t allocator) {
  uintptr_t p = (uintptr_t)base + sizeof(struct header);
  if (align > sizeof(void *)) p = (p + align - sizeof(void *)) & ~(uintptr_t)(align - 1);
  struct header *h = (struct header *)p - 1;
  h->base = base;
  h->size = size;
  h->allocator = allocator;
  return (void *)p;
}

/* What a failed allocation does next, by the allocator's fallback: the
 * allocator to retry with, or ALLOC_NULL to return NULL. Predefined
 * allocators return NULL. abort_fb stops the program (what), as gcc's
 * runtime does. */
static uintptr_t fallback(struct allocator *a, bool retry_default, unsigned long what) {
  if (!a) return ALLOC_NULL;
  switch (a->fallback) {
    case ATV_DEFAULT_MEM_FB:
      /* default memory, unless this was already an allocation like its one */
      return retry_default ? ALLOC_DEFAULT : ALLOC_NULL;
    case ATV_NULL_FB:
      return ALLOC_NULL;
    case ATV_ALLOCATOR_FB:
      return a->fb_data;
    default:
      ito__omp_fatal("Out of memory allocating %lu bytes", what);
  }
}

/* An allocation of size bytes (zeroed if zero) by allocator, aligned to
 * the larger of align and the allocator's alignment; NULL on failure after
 * the fallbacks. */
static void *allocate(size_t align, size_t size, uintptr_t allocator, bool zero,
                      unsigned long what) {
  for (;;) {
    if (allocator == ALLOC_NULL) allocator = ito__omp_cur()->icv.def_allocator;
    struct allocator *a = user_allocator(allocator);
    size_t al = align;
    if (a && al < a->alignment) al = a->alignment;
    if (al < sizeof(void *)) al = sizeof(void *);
    size_t n = sizeof(struct header) + (al > sizeof(void *) ? al - sizeof(void *) : 0);
    bool pooled = a && a->pool_size != NO_POOL;
    void *base = NULL;
    if (!__builtin_add_overflow(size, n, &n)) {
      if (!pooled || pool_take(a, n)) {
        base = zero ? calloc(1, n) : malloc(n);
        if (!base && pooled) pool_give(a, n);
      }
    }
    if (base) return place(base, al, n, allocator);
    allocator = fallback(a, (al > sizeof(void *) && al > align) || pooled, what);
    if (allocator == ALLOC_NULL) return NULL;
  }
}

OMP_API void *omp_aligned_alloc(size_t align, size_t size, uintptr_t allocator) {
  if (UNLIKELY(!size)) return NULL;
  return allocate(align, size, allocator, false, size);
}
OMP_API void *omp_alloc(size_t size, uintptr_t allocator) {
  return omp_aligned_alloc(1, size, allocator);
}
OMP_API void *omp_aligned_calloc(size_t align, size_t n, size_t size, uintptr_t allocator) {
  if (UNLIKELY(!size || !n)) return NULL;
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    /* no allocation can hold it: straight to the fallback */
    struct allocator *a =
        user_allocator(allocator == ALLOC_NULL ? ito__omp_cur()->icv.def_allocator : allocator);
    uintptr_t fb = fallback(a, false, (unsigned long)(n * size));
    return fb == ALLOC_NULL ? NULL : omp_aligned_calloc(align, n, size, fb);
  }
  return allocate(align, total, allocator, true, total);
}
OMP_API void *omp_calloc(size_t n, size_t size, uintptr_t allocator) {
  return omp_aligned_calloc(1, n, size, allocator);
}

OMP_API void omp_free(void *p, uintptr_t allocator) {
  (void)allocator; /* the block's header knows its allocator */
  if (!p) return;
  struct header *h = (struct header *)p - 1;
  struct allocator *a = user_allocator(h->allocator);
  if (a && a->pool_size != NO_POOL) pool_give(a, h->size);
  free(h->base);
}

/* omp_realloc: size bytes by allocator (omp_null_allocator: the block's
 * own), the old contents kept up to the smaller size, the old block freed
 * (it belongs to the allocator in its header, whatever free_allocator
 * says). A block whose alignment needs no padding, kept in the same
 * allocator, grows with realloc. On failure the old block stays. */
OMP_API void *omp_realloc(void *p, size_t size, uintptr_t allocator, uintptr_t free_allocator) {
  if (UNLIKELY(!p)) return omp_aligned_alloc(1, size, allocator);
  if (UNLIKELY(!size)) {
    omp_free(p, free_allocator);
    return NULL;
  }
  struct header *h = (struct header *)p - 1;
  uintptr_t old_allocator = h->allocator;
  struct allocator *fa = user_allocator(old_allocator);
  size_t old_size = h->size, old_off = (uintptr_t)p - (uintptr_t)h->base;
  for (;;) {
    if (allocator == ALLOC_NULL) allocator = old_allocator;
    struct allocator *a = user_allocator(allocator);
    size_t al = a ? a->alignment : sizeof(void *);
    size_t n = sizeof(struct header) + (al > sizeof(void *) ? al - sizeof(void *) : 0);
    bool pooled = a && a->pool_size != NO_POOL;
    bool plain = al == sizeof(void *) && old_off == sizeof(struct header);
    void *base = NULL;
    if (!__builtin_add_overflow(size, n, &n)) {
      /* in place (realloc) when the pool, if any, is the block's own */
      bool in_place = plain && (pooled ? fa == a : !(fa && fa->pool_size != NO_POOL));
      size_t prev = in_place && pooled ? old_size : 0;
      bool ok = true;
      if (pooled) {
        if (n > prev)
          ok = pool_take(a, n - prev);
        else
          pool_give(a, prev - n);
      }
      if (ok) {
        base = in_place ? realloc(h->base, n) : malloc(n);
        if (!base && pooled) /* back to what it was (n - prev wraps when shrinking) */
          __atomic_fetch_sub(&a->used, (uintptr_t)n - prev, __ATOMIC_RELAXED);
        if (base && in_place) return place(base, al, n, allocator);
      }
    }
    if (base) {
      void *q = place(base, al, n, allocator);
      size_t keep = old_size - old_off;
      memcpy(q, p, keep < size ? keep : size);
      if (fa && fa->pool_size != NO_POOL) pool_give(fa, old_size);
      free(h->base);
      return q;
    }
    allocator = fallback(a, al > sizeof(void *) || pooled, size);
    if (allocator == ALLOC_NULL) return NULL;
  }
}

/* ---- what gcc emits for allocate directives and clauses -------------------------------- */
OMP_API void *GOMP_alloc(size_t align, size_t size, uintptr_t allocator) {
  void *p = omp_aligned_alloc(align, size, allocator);
  if (UNLIKELY(!p && size))
    ito__omp_fatal("Out of memory allocating %lu bytes", (unsigned long)size);
  return p;
}
OMP_API void GOMP_free(void *p, uintptr_t allocator) { omp_free(p, allocator); }
