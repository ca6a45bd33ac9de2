/* Fiber stacks: per-worker free lists over a global pool, guard pages while
 * the kernel's mapping limit allows, and stack-overflow reports.
 * Invariants at the top of fiber.h; design in docs/fibers.md. */
#define _GNU_SOURCE
#include "fiber.h"

#include "forkpart.h"
#include "config.h"
#include "handle.h"
#include "os.h"
#include "san.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAGE 4096UL

_Static_assert(sizeof(fiber) % 64 == 0 && _Alignof(fiber) == 64, "fiber header layout");

/* The top HEADER_ROOM bytes of a stack's mapping hold its header (at the
 * very top); the stack starts below them, so where the stack's first
 * frames fall within a page does not move when the header grows. It
 * matters: with the top at page offset 0xe40 (a 448-byte header right
 * above it), fib(35) on one worker ran 1.25x slower than at 0xe00 or
 * 0xe80, with the same instructions (AMD EPYC; docs/fibers.md, "Where the
 * stack starts"). A header that outgrows the room takes a larger room,
 * measured again. */
#define HEADER_ROOM ((sizeof(fiber) + 511) & ~(size_t)511)
#if defined(__x86_64__) && !ITO_TSAN
/* where it was measured (the AArch64 header, with its larger records, takes
 * 1024; ThreadSanitizer's fiber context, more) */
_Static_assert(HEADER_ROOM == 512, "fiber header outgrew 512 bytes: measure the stack's top again");
#endif

/* Linux 6.13's guard regions: a guard page inside a mapping, without
 * splitting it (Debian 12's headers lack the constant). */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

static struct {
  size_t stack_size; /* usable bytes per pool stack */
  int guard_mode;    /* GUARD_* */
  int guard_region;  /* the kernel installs guard pages without splitting mappings */
  long guard_budget; /* guarded stacks we may still create by splitting (GUARD_AUTO) */
  int pool_lock;
  fiber *pool; /* free pool fibers beyond the workers' caches */
} fs;

/* Free stacks outside the workers' caches that may hold touched pages,
 * in bytes, and the bound beyond which a freed stack's pages go back to
 * the system (ITO_STACK_CACHE). */
static size_t dirty_bytes, dirty_bound;

/* Does madvise(MADV_GUARD_INSTALL) work here? An emulator may accept
 * the advice and do nothing, so the probe checks its effect: the kernel
 * refuses to read a guard page (EFAULT) when it copies from it. */
static int probe_guard_region(void) {
  char *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 0;
  int ok = 0, fds[2];
  if (madvise(m, PAGE, MADV_GUARD_INSTALL) == 0 &&
      ito__os.syscall(SYS_pipe2, fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    long r = ito__os.syscall(SYS_write, fds[1], m, 1);
    ok = r < 0 && errno == EFAULT && ito__os.syscall(SYS_write, fds[1], m + PAGE, 1) == 1;
    ito__os.syscall(SYS_close, fds[0]);
    ito__os.syscall(SYS_close, fds[1]);
  }
  munmap(m, 2 * PAGE);
  return ok;
}

/* A guard page at p: a guard region where the kernel has them, else a
 * PROT_NONE page, which splits the mapping. 0 or -1 with errno. */
static int guard_page(char *p) {
  if (fs.guard_region) return madvise(p, PAGE, MADV_GUARD_INSTALL);
  return mprotect(p, PAGE, PROT_NONE);
}

void ito__fiber_setup(size_t stack_size, int guard_mode, size_t cache_bytes) {
  int region = guard_mode != GUARD_NEVER && probe_guard_region();
  spin_lock(&fs.pool_lock, LR_POOL);
  if (fs.stack_size != stack_size) fs.pool = NULL; /* (old stacks stay mapped: invariant 2) */
  fs.stack_size = stack_size;
  fs.guard_mode = guard_mode;
  fs.guard_region = region;
  STORE_RLX(&dirty_bound, cache_bytes);
  /* Each guarded stack costs two memory mappings; keep most of the
   * kernel's limit for the program itself. */
  long maxmap = 65530;
  FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
  if (f) {
    if (fscanf(f, "%ld", &maxmap) != 1) maxmap = 65530;
    fclose(f);
  }
  fs.guard_budget = maxmap > 8192 ? (maxmap - 8192) / 2 : 0;
  spin_unlock(&fs.pool_lock);
}

size_t ito__stack_size(void) { return fs.stack_size; }

static size_t slot_size(void) {
  return PAGE + ((fs.stack_size + HEADER_ROOM + PAGE - 1) & ~(PAGE - 1));
}

/* Whether the next pool stack gets a guard page (GUARD_AUTO: while the
 * budget lasts). */
static bool want_guard(void) {
  switch (fs.guard_mode) {
    case GUARD_ALWAYS:
      return true;
    case GUARD_NEVER:
      return false;
    default:
      return fs.guard_region || __atomic_sub_fetch(&fs.guard_budget, 1, __ATOMIC_RELAXED) >= 0;
  }
}

/* A fresh header at the top of [base, base + len) (len a multiple of
 * pages); NULL if it could not get a handle slot. */
static fiber *header_in(char *base, size_t len, uint32_t kind) {
  fiber *f = (fiber *)(base + len - sizeof(fiber));
  memset(f, 0, sizeof *f);
  if (ito__handle_register(&f->th)) return NULL;
  f->map = base;
  f->maplen = len;
  f->lo = base;
  f->hi = base + len - HEADER_ROOM;
  f->kind = kind;
  f->vg_stack = ito__vg_stack_register(base, f->hi); /* for ever: fibers are never unmapped */
  ito__lsan_root(f->hi, HEADER_ROOM);                /* (the same) */
  return f;
}

/* Carves a new mapping into fibers; returns them as a list (pool_lock
 * held). */
static fiber *map_fibers(void) {
  size_t ss = slot_size();
  size_t n = ss >= (8UL << 20) ? 1 : (8UL << 20) / ss;
  if (n > 64) n = 64;
  char *m = mmap(NULL, n * ss, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return NULL;
  fiber *first = NULL;
  for (size_t i = n; i-- > 0;) {
    char *base = m + i * ss;
    fiber *f = header_in(base, ss, FIBER_POOL);
    if (!f) continue; /* no handle slot: this stack stays unused */
    bool guard = want_guard();
    if (guard && guard_page(base) != 0) {
      if (fs.guard_mode == GUARD_ALWAYS)
        ito__fatal(
            "cannot add a guard page to a thread stack (%s); the kernel's limit on memory "
            "mappings (vm.max_map_count) is reached. Unset ITO_STACK_GUARD=always or "
            "raise the limit.",
            strerror(errno));
      guard = false;
    }
    f->guarded = guard;
    f->lo = guard ? base + PAGE : base;
    f->next = first;
    first = f;
  }
  return first;
}

/* A stack taken from a free list starts clean. */
static void fiber_reset(fiber *f) {
  ito__asan_unpoison(f->lo, (size_t)(f->hi - f->lo));
#if ITO_TSAN
  ito__tsan_renew(&f->tsan, &f->tsan_dirty);
#endif
  f->next = NULL;
  f->sp = NULL;
  f->thread = NULL;
  f->ctx = NULL;
  f->home = NULL;
  f->asan_fake = NULL;
  f->tls = NULL;
  f->create_worker = NULL;
  f->in_handler = 0;
}

/* Stacks of a size the program asked for (smaller or larger than the
 * pool's): one mapping each, a guard page below the size asked for
 * rounded up to pages, the header at its top, as glibc puts its
 * descriptor inside the size; kept once released on a free list per
 * power of two of the mapping's size (never unmapped: stale handles,
 * invariant 2), from which a request takes one of exactly its size, so
 * that an overflow past the size faults on the guard as it does
 * natively. */
#define OWN_CLASSES 48
static int own_lock;
static fiber *own_free[OWN_CLASSES];

static int own_class(size_t len) {
  int k = 0;
  while (k < OWN_CLASSES - 1 && ((size_t)1 << (k + 1)) <= len) k++;
  return k; /* 2^k <= len < 2^(k+1) */
}

/* The lowest page a stack has touched: a stack grows down from its
 * header, so its touched pages run down from there; mincore(2) finds the
 * end of that run, 8 pages first, then 64 at a time. (A frame that skipped whole pages
 * without touching them leaves pages below a gap uncounted: the bound is
 * then exceeded by them; -fstack-clash-protection touches every page.) */
static uintptr_t touched_from(uintptr_t lo, uintptr_t hi) {
  unsigned char v[64];
  uintptr_t at = hi;
  size_t step = 8; /* most stacks touched a few pages */
  while (at > lo) {
    uintptr_t from = at - lo > step * PAGE ? at - step * PAGE : lo;
    step = sizeof v;
    size_t n = (at - from) / PAGE;
    if (mincore((void *)from, at - from, v) != 0) return lo; /* count it all */
    for (size_t i = n; i-- > 0;)
      if (!(v[i] & 1)) return from + (i + 1) * PAGE;
    at = from;
  }
  return lo;
}

/* A free stack on a shared list counts its touched pages (f->dirty of them)
 * in the bound on the resident memory of free stacks. */
static void dirty_take(fiber *f) {
  if (f->dirty) {
    __atomic_fetch_sub(&dirty_bytes, (size_t)f->dirty * PAGE, __ATOMIC_RELAXED);
    f->dirty = 0;
  }
}

/* A stack goes to a shared free list: beyond the bound, its touched pages
 * go back to the system, all but the one that holds the header (the
 * descriptor stays: invariant 3). Counting touched pages rather than the
 * stack's size keeps many large stacks (libgomp's 8 MiB) that were hardly
 * used from being given back, and faulted in again, at every free. */
static void dirty_give(fiber *f) {
  uintptr_t lo = ((uintptr_t)f->lo + PAGE - 1) & ~(PAGE - 1);
  uintptr_t hi = (uintptr_t)f & ~(PAGE - 1);
  if (hi <= lo) return;
  uintptr_t from = touched_from(lo, hi);
  size_t n = hi - from;
  if (!n) return; /* nothing below the header's page was touched */
  if (__atomic_add_fetch(&dirty_bytes, n, __ATOMIC_RELAXED) <= LOAD_RLX(&dirty_bound)) {
    f->dirty = (uint32_t)(n / PAGE);
    return;
  }
  __atomic_fetch_sub(&dirty_bytes, n, __ATOMIC_RELAXED);
  madvise((void *)from, n, MADV_DONTNEED);
  f->dirty = 0;
}

fiber *ito__own_fiber(size_t want) {
  if (want < 2 * HEADER_ROOM) want = 2 * HEADER_ROOM;
  size_t len = PAGE + ((want + PAGE - 1) & ~(PAGE - 1)); /* guard; stack and header */
  int k = own_class(len);
  fiber *f = NULL;
  spin_lock(&own_lock, LR_OWN);
  for (fiber **pp = &own_free[k]; *pp; pp = &(*pp)->next) {
    if ((*pp)->maplen == len) {
      f = *pp;
      *pp = f->next;
      break;
    }
  }
  spin_unlock(&own_lock);
  if (f) {
    dirty_take(f);
  } else {
    char *m =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return NULL;
    f = header_in(m, len, FIBER_OWN);
    if (!f) {
      munmap(m, len);
      return NULL;
    }
    bool guard = fs.guard_mode != GUARD_NEVER && guard_page(m) == 0;
    f->lo = guard ? m + PAGE : m;
    f->guarded = guard;
    f->own_class = (uint32_t)k;
  }
  fiber_reset(f);
  return f;
}

static void own_fiber_free(fiber *f) {
  dirty_give(f);
  spin_lock(&own_lock, LR_OWN);
  f->next = own_free[f->own_class];
  own_free[f->own_class] = f;
  spin_unlock(&own_lock);
}

/* The caller's memory: the header at its top, no guard page. Its handle
 * slot is given back when the thread is released (thread.c). */
fiber *ito__user_fiber(void *addr, size_t size) {
  uintptr_t hi = ((uintptr_t)addr + size) & ~(uintptr_t)63;
  /* the platform's PTHREAD_STACK_MIN is enough; the header takes its top */
  if (size < ITO_MIN_STACK || hi - HEADER_ROOM < (uintptr_t)addr) return NULL;
  fiber *f = (fiber *)(hi - sizeof(fiber));
  memset(f, 0, sizeof *f);
  if (ito__handle_register(&f->th)) return NULL;
  f->lo = addr;
  f->hi = (char *)(hi - HEADER_ROOM);
  f->map = addr; /* the caller's region, as given (what pthread_getattr_np reports) */
  f->maplen = size;
  f->kind = FIBER_USER;
  f->vg_stack = ito__vg_stack_register(addr, f->hi); /* until released (thread.c) */
  return f;
}

fiber *ito__fiber_alloc(struct fiber_cache *c) {
  fiber *f = c ? c->free : NULL;
  if (f) {
    c->free = f->next;
    c->n--;
  } else {
    spin_lock(&fs.pool_lock, LR_POOL);
    f = fs.pool;
    if (!f) {
      f = map_fibers();
      if (!f) {
        spin_unlock(&fs.pool_lock);
        return NULL;
      }
    }
    dirty_take(f);
    /* move up to half a cache's worth to this worker */
    fiber *rest = f->next;
    int moved = 0;
    while (c && rest && moved < FIBER_CACHE / 2) {
      fiber *n = rest->next;
      dirty_take(rest);
      rest->next = c->free;
      c->free = rest;
      c->n++;
      moved++;
      rest = n;
    }
    fs.pool = rest;
    spin_unlock(&fs.pool_lock);
  }
  ITO_ASSERT(f->kind == FIBER_POOL);
  fiber_reset(f);
  return f;
}

/* An unguarded stack's lowest word is never written by a stack that fits,
 * and it starts as zero. A bottom page that was never touched cannot hold
 * an overflow, and reading it would fault in a page (seen to count as
 * resident memory here), so ask mincore(2) first. */
static void check_canary(fiber *f) {
  if (f->guarded) return;
  unsigned char resident = 0;
  char *page = (char *)((uintptr_t)f->lo & ~(PAGE - 1));
  if (mincore(page, PAGE, &resident) == 0 && !(resident & 1)) return;
  if (*(volatile uint64_t *)f->lo != 0)
    ito__fatal(
        "stack overflow in a lightweight thread (stack of %zu bytes; this stack had no "
        "guard page, so memory next to it may be corrupted); raise ITO_STACK_SIZE",
        (size_t)(f->hi - f->lo));
}

void ito__fiber_free(struct fiber_cache *c, fiber *f) {
  if (f->kind == FIBER_OWN) {
    own_fiber_free(f);
    return;
  }
  if (f->kind != FIBER_POOL) return; /* the caller's memory, or an OS thread's stack */
  check_canary(f);
  if (c && c->n < FIBER_CACHE) {
    f->next = c->free;
    c->free = f;
    c->n++;
    return;
  }
  dirty_give(f);
  spin_lock(&fs.pool_lock, LR_POOL);
  f->next = fs.pool;
  fs.pool = f;
  spin_unlock(&fs.pool_lock);
}

/* (ranks 17 and 18: pool_lock, then own_lock) */
static void fibers_fork_lock(int take) {
  if (take) {
    spin_lock(&fs.pool_lock, LR_POOL);
    spin_lock(&own_lock, LR_OWN);
  } else {
    spin_unlock(&own_lock);
    spin_unlock(&fs.pool_lock);
  }
}
ITO_FORK_PART(fibers_fork, .lock_rank = 17, .lock = fibers_fork_lock);

/* A free stack's pages go back to the system now (all but its header's). */
static size_t release_pages(fiber *f) {
  uintptr_t lo = ((uintptr_t)f->lo + PAGE - 1) & ~(PAGE - 1);
  uintptr_t hi = (uintptr_t)f & ~(PAGE - 1);
  if (hi <= lo) return 0;
  madvise((void *)lo, hi - lo, MADV_DONTNEED);
  return hi - lo;
}

size_t ito__fibers_release(struct fiber_cache *c) {
  size_t bytes = 0;
  /* the caller's worker's own free stacks go to the pool, released */
  fiber *mine = c ? c->free : NULL;
  if (c) {
    c->free = NULL;
    c->n = 0;
  }
  spin_lock(&fs.pool_lock, LR_POOL);
  while (mine) {
    fiber *next = mine->next;
    bytes += release_pages(mine);
    mine->next = fs.pool;
    fs.pool = mine;
    mine = next;
  }
  for (fiber *f = fs.pool; f; f = f->next) {
    if (!f->dirty) continue;
    dirty_take(f);
    bytes += release_pages(f);
  }
  spin_unlock(&fs.pool_lock);
  spin_lock(&own_lock, LR_OWN);
  for (int k = 0; k < OWN_CLASSES; k++) {
    for (fiber *f = own_free[k]; f; f = f->next) {
      if (!f->dirty) continue;
      dirty_take(f);
      bytes += release_pages(f);
    }
  }
  spin_unlock(&own_lock);
  return bytes;
}
