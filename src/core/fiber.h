/* Fibers: a stack mapping [guard page][stack ...][fiber header] with the
 * header holding the saved context, the descriptor of the thread that
 * started on it and that thread's creator record. Per-worker free lists
 * over a global pool, and guard pages while the kernel's mapping limit
 * allows (overflow.c reports what hits them). Design: docs/fibers.md.
 *
 * Invariants:
 *  1. A fiber is in at most one of: running on a worker (worker.cur), a
 *     ready queue or mail list (next), a deque entry (ENT_FIBER), a free
 *     list (next), or parked (its waiter queued, or referenced by a join).
 *  2. kind never changes; pool fibers (FIBER_POOL) are never unmapped, so a
 *     stale handle still reads a descriptor; FIBER_USER memory is the
 *     caller's and is never touched once released.
 *  3. A free pool fiber's descriptor is fresh (flags 0, RUNNING, no keys,
 *     no joiner): creation sets only what differs.
 *  4. create_worker is non-NULL exactly while the creator record in start
 *     may still be read by someone other than the thread: set when the
 *     record is published, cleared (release) by whoever takes it once it
 *     is copied, or by the thread that takes it back. The fiber is not
 *     freed while it is set (thread_release waits, acquire): a thread
 *     detached or joined by another may end before the worker that took
 *     its creator's record has finished copying it. */
#ifndef ITO_CORE_FIBER_H
#define ITO_CORE_FIBER_H

#include "base.h"
#include "record.h"
#include "san.h"
#include "thread.h"
#include "waitq.h"

/* ITO_STACK_GUARD's values, and the bounds and defaults of the stack rows
 * (runtime.c) */
enum { GUARD_AUTO = 0, GUARD_ALWAYS, GUARD_NEVER };
#define ITO_MIN_STACK (16UL << 10)
#define ITO_MAX_STACK (1UL << 30)
#define ITO_DEFAULT_STACK (128UL << 10)
#define ITO_DEFAULT_STACK_CACHE (40UL << 20) /* glibc's cache of thread stacks */

struct worker;

/* FIBER_POOL: a pool stack; FIBER_NATIVE: an OS thread's own stack (the
 * root); FIBER_OWN: a larger stack mapped for one thread, kept on a free
 * list of its size class once released; FIBER_USER: the caller's memory. */
enum { FIBER_POOL = 0, FIBER_NATIVE = 1, FIBER_OWN = 2, FIBER_USER = 3 };

typedef struct __attribute__((aligned(64))) fiber {
  ithread th;    /* the thread started on this fiber, if any */
  void *sp;      /* saved stack pointer while not running */
  char *lo, *hi; /* usable stack [lo, hi) */
  char *map;     /* start of the mapping (FIBER_USER: of the caller's region) */
  size_t maplen;
  ithread *thread;     /* the lightweight thread this fiber runs for */
  void *ctx;           /* a layer's word for the code on this stack (libito-omp.so keeps
                          its current task here); NULL on a fresh stack */
  struct worker *home; /* non-NULL: runs only on this worker (placement) */
  struct fiber *next;  /* ready queue, mail or free list (invariant 1) */
  waiter w;            /* used while parked */
  void *asan_fake;
  void *tls;          /* the TLS block in force while this fiber runs (tls.h); NULL:
                         the worker's own */
  void *tls_block;    /* the block this fiber's threads use, made on first need and
                         kept with the fiber (ITO_TLS=thread) */
  void *parked_on;    /* while parked (ito__suspend, ACT_BLOCK): what it waits on, the
                         wait queue's lock word where there is one; NULL otherwise.
                         For debuggers only (debug.c) */
  uint32_t vg_stack;  /* its id with Valgrind (san.h) */
  uint32_t guarded;   /* a guard page sits below lo */
  uint32_t kind;      /* FIBER_* (invariant 2) */
  uint32_t own_class; /* FIBER_OWN: log2 of the mapping's size, rounded down */
  uint32_t dirty;     /* free, on a shared list: its touched pages, counted in the
                         bound on free stacks' resident memory (0: none counted) */
  /* inside a kernel signal frame of ito's (tramp) on this stack: never
   * preempted there (preempt.h, invariant 3). The fiber's, as callout
   * is (below); a jump out of a handler clears it (ito__dropin_jumped), and so
   * does the fiber's return to a free list. A depth. */
  uint8_t in_handler;
  /* A fiber made by taking a fork record starts by resuming that record.
   * A fiber started by ito_create keeps here its creator's continuation
   * (a create record), published at create_idx of create_worker's deque. */
  struct ito_rec start;
  struct worker *create_worker;
  uint64_t create_idx;
  /* The profiler's (profile.c), while it records: the span of the code that
   * runs on this fiber when it next runs (for an ended thread, its span at
   * its end), when it was last made ready, and flags; and, written once
   * before its create record is published, for whoever takes that record,
   * the creator's span and the time of the creation. */
  uint64_t prof_span, prof_ready;
  uint64_t prof_s0, prof_ct;
  uint32_t prof_flags;
  /* Placement by data (nodeq.h, invariants 3 and 4): 1 + the node this
   * fiber's work belongs on (0: none, work-first as without NUMA), and
   * whether it was started with data and not yet counted (PLACED_*). */
  uint16_t node1;
  uint8_t placed;
  /* inside a call the runtime made to another object's code while holding
   * its own state (a lock, a waiter's place in a queue): never preempted
   * there (preempt.h, invariant 6). The fiber's, not its thread's: the
   * continuation of a task group's function, stolen, runs for the same
   * thread on another fiber at once (lazy.c), and the two would share one
   * count. A depth: a few at most. */
  uint8_t callout;
#if ITO_TSAN
  void *tsan;     /* ThreadSanitizer's context for this stack (docs/fibers.md) */
  int tsan_dirty; /* frames were abandoned on it (ito_exit): renew tsan before reuse */
#endif
} fiber;

/* The fiber a thread started on (its descriptor is in that header). */
static inline fiber *fiber_of_thread(ithread *t) {
  return (fiber *)((char *)t - offsetof(fiber, th));
}

/* The runtime calls another object's code (the C++ runtime's, an
 * allocator's) in a state it must not be preempted in (a lock of its own
 * held, the caller published as a waiter): f's thread is not preempted
 * until the matching end (preempt.h, invariant 6). The handler runs on the
 * same OS thread: signal fences order the count with the call. */
static inline void ito__callout_begin(fiber *f) {
  if (f) f->callout++;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
static inline void ito__callout_end(fiber *f) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (f) {
    ITO_ASSERT(f->callout > 0);
    f->callout--;
  }
}

/* Stack settings, at each start of the runtime. */
HIDDEN void ito__fiber_setup(size_t stack_size, int guard_mode, size_t cache_bytes);
HIDDEN size_t ito__stack_size(void);

/* A worker's free fibers, kept before they go back to the global pool. */
#define FIBER_CACHE 64
struct fiber_cache {
  fiber *free;
  int n;
};

/* A fresh pool fiber (c: the caller's worker cache, or NULL); NULL when out
 * of memory. */
HIDDEN fiber *ito__fiber_alloc(struct fiber_cache *c);
/* Gives f back (canary check, own-stack list, or nothing for FIBER_USER
 * and FIBER_NATIVE). */
HIDDEN void ito__fiber_free(struct fiber_cache *c, fiber *f);
/* Gives the pages of free stacks back to the system (their headers stay):
 * those of the global pool and the own-stack lists, and those of cache c
 * (the calling worker's, or NULL), which move to the pool. Other workers'
 * caches are theirs alone and are left. Returns the bytes released. */
HIDDEN size_t ito__fibers_release(struct fiber_cache *c);
/* A stack larger than the pool's, for one thread (NULL: out of memory). */
HIDDEN fiber *ito__own_fiber(size_t stack_bytes);
/* The caller's memory [addr, addr + size) (NULL: too small). */
HIDDEN fiber *ito__user_fiber(void *addr, size_t size);

/* The common cases of alloc and free, inline: a pop or push on the
 * worker's own list. */
static inline fiber *fiber_get(struct fiber_cache *c) {
#if !ITO_ASAN && !ITO_TSAN
  fiber *f = c ? c->free : NULL;
  if (LIKELY(f) && !ASAN_ON) { /* (a program with AddressSanitizer: reset, below) */
    c->free = f->next;
    c->n--;
    f->create_worker = NULL;
    f->ctx = NULL;
    f->home = NULL;
    return f;
  }
#endif
  return ito__fiber_alloc(c);
}
/* Appends f to the list (*first .. *last), which ends in NULL. */
static inline void fiber_append(fiber **first, fiber **last, fiber *f) {
  ITO_ASSERT(!f->w.queued && f != *last); /* invariant 1: not parked, not twice */
  f->next = NULL;
  if (*last)
    (*last)->next = f;
  else
    *first = f;
  *last = f;
}

static inline void fiber_put(struct fiber_cache *c, fiber *f) {
  ITO_ASSERT(!f->w.queued && (!c || f != c->free)); /* invariant 1 */
  if (LIKELY(c && f->kind == FIBER_POOL && f->guarded && c->n < FIBER_CACHE)) {
    f->next = c->free;
    c->free = f;
    c->n++;
    return;
  }
  ito__fiber_free(c, f);
}

#endif
