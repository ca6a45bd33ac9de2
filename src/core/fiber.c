/* Fiber stacks: per-worker free lists over a global pool, guard pages while
 * the kernel's mapping limit allows, stack-overflow reports, and the
 * sanitizer's fiber-switch hooks. Design: docs/fibers.md. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
void ito__asan_start(void **fake, const void *lo, size_t size) {
  __sanitizer_start_switch_fiber(fake, lo, size);
}
void ito__asan_finish(void *fake) { __sanitizer_finish_switch_fiber(fake, NULL, NULL); }
#else
void ito__asan_start(void **fake, const void *lo, size_t size) {
  (void)fake, (void)lo, (void)size;
}
void ito__asan_finish(void *fake) { (void)fake; }
#endif

#if ITO_TSAN
#include <sanitizer/tsan_interface.h>
/* Contexts are costly to make (hundreds of microseconds) and ThreadSanitizer
 * allows about 8,000 at once, so a stack keeps its context while it sits in
 * a free list; the context is renewed only when a thread left frames on the
 * stack without returning through them (ito_exit), since their entries
 * would stay on the context's shadow call stack. */
void *ito__tsan_new_ctx(void) { return __tsan_create_fiber(0); }
void *ito__tsan_current(void) { return __tsan_get_current_fiber(); }
void ito__tsan_to_ctx(void *ctx) { __tsan_switch_to_fiber(ctx, 0); }
void ito__tsan_to(fiber *f) {
  if (!f->tsan) f->tsan = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(f->tsan, 0);
}
static void tsan_renew(fiber *f) {
  if (f->tsan_dirty) {
    __tsan_destroy_fiber(f->tsan);
    f->tsan = NULL;
    f->tsan_dirty = 0;
  }
}
#endif

#define PAGE 4096UL

_Static_assert(sizeof(fiber) % 64 == 0 && _Alignof(fiber) == 64, "fiber header layout");

static size_t slot_size(void) {
  size_t hdr = sizeof(fiber);
  return PAGE + ((ito__rt.stack_size + hdr + PAGE - 1) & ~(PAGE - 1));
}

/* Carves a new mapping into fibers and puts them on the global pool. */
static fiber *map_fibers(void) {
  size_t ss = slot_size();
  size_t n = ss >= (8UL << 20) ? 1 : (8UL << 20) / ss;
  if (n > 64) n = 64;
  char *m = mmap(NULL, n * ss, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  fiber *first = NULL;
  for (size_t i = n; i-- > 0;) {
    char *base = m + i * ss;
    fiber *f = (fiber *)(base + ss - sizeof(fiber));
    memset(f, 0, sizeof *f);
    f->map = base;
    f->maplen = ss;
    f->lo = base + PAGE;
    f->hi = (char *)((uintptr_t)f & ~(uintptr_t)63);
    int guard = 0;
    if (ito__rt.guard_mode == 1) {
      guard = 1;
    } else if (ito__rt.guard_mode == 0) {
      guard = __atomic_sub_fetch(&ito__rt.guard_budget, 1, __ATOMIC_RELAXED) >= 0;
    }
    if (guard && mprotect(base, PAGE, PROT_NONE) != 0) {
      if (ito__rt.guard_mode == 1)
        ito__fatal("cannot add a guard page to a thread stack (%s); the kernel's limit on memory "
                   "mappings (vm.max_map_count) is reached. Unset ITO_STACK_GUARD=always or "
                   "raise the limit.",
                   strerror(errno));
      guard = 0;
    }
    f->guarded = (uint32_t)guard;
    f->lo = guard ? base + PAGE : base;
    f->kind = FIBER_POOL;
    f->next = first;
    first = f;
  }
  return first;
}

/* A stack taken from a free list starts clean. */
static void fiber_reset(fiber *f) {
#if ITO_ASAN
  ASAN_UNPOISON_MEMORY_REGION(f->lo, (size_t)(f->hi - f->lo));
#endif
#if ITO_TSAN
  tsan_renew(f);
#endif
  f->next = NULL;
  f->sp = NULL;
  f->thread = NULL;
  f->ctx = NULL;
  f->home = NULL;
  f->asan_fake = NULL;
  f->create_worker = NULL;
}

/* Stacks larger than the pool's: one mapping each, with a guard page, kept
 * on a free list per power of two once released (never unmapped, so that a
 * stale handle still reads a descriptor). */
#define OWN_CLASSES 40
static int own_lock;
static fiber *own_free[OWN_CLASSES];

fiber *ito__own_fiber(size_t want) {
  size_t need = want + sizeof(fiber) + 4096;
  int k = 0;
  while (k < OWN_CLASSES - 1 && ((size_t)1 << k) < need) k++;
  spin_lock(&own_lock);
  fiber *f = own_free[k];
  if (f) own_free[k] = f->next;
  spin_unlock(&own_lock);
  if (!f) {
    size_t len = (size_t)1 << k;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return NULL;
    int guard = mprotect(m, 4096, PROT_NONE) == 0;
    f = (fiber *)(m + len - sizeof(fiber));
    memset(f, 0, sizeof *f);
    f->map = m;
    f->maplen = len;
    f->lo = guard ? m + 4096 : m;
    f->hi = (char *)f;
    f->kind = FIBER_OWN;
    f->guarded = guard ? 2 : 0; /* 2: not a pool stack, so fiber_put passes it on */
    f->own_class = (uint32_t)k;
  }
  fiber_reset(f);
  return f;
}

static void own_fiber_free(fiber *f) {
  spin_lock(&own_lock);
  f->next = own_free[f->own_class];
  own_free[f->own_class] = f;
  spin_unlock(&own_lock);
}

/* The caller's memory: the header at its top, no guard page. */
fiber *ito__user_fiber(void *addr, size_t size) {
  uintptr_t hi = ((uintptr_t)addr + size) & ~(uintptr_t)63;
  if (size < (16u << 10) + sizeof(fiber) || hi - sizeof(fiber) < (uintptr_t)addr) return NULL;
  fiber *f = (fiber *)(hi - sizeof(fiber));
  memset(f, 0, sizeof *f);
  f->lo = addr;
  f->hi = (char *)f;
  f->kind = FIBER_USER;
  return f;
}

fiber *ito__fiber_alloc(worker *w) {
  fiber *f = w ? w->free_fibers : NULL;
  if (f) {
    w->free_fibers = f->next;
    w->nfree_fibers--;
  } else {
    spin_lock(&ito__rt.pool_lock);
    f = ito__rt.pool_fibers;
    if (!f) {
      f = map_fibers();
      if (!f) {
        spin_unlock(&ito__rt.pool_lock);
        return NULL;
      }
    }
    /* move up to half a cache's worth to this worker */
    fiber *rest = f->next;
    int moved = 0;
    while (w && rest && moved < FIBER_CACHE / 2) {
      fiber *n = rest->next;
      rest->next = w->free_fibers;
      w->free_fibers = rest;
      w->nfree_fibers++;
      moved++;
      rest = n;
    }
    ito__rt.pool_fibers = rest;
    spin_unlock(&ito__rt.pool_lock);
  }
  fiber_reset(f);
  return f;
}

/* An unguarded stack's lowest word is never written by a stack that fits,
 * and it starts as zero. A bottom page that was never touched cannot hold an
 * overflow, and reading it would fault in a page (seen to count as resident
 * memory here), so ask mincore(2) first. */
static void check_canary(fiber *f) {
  if (f->guarded) return;
  unsigned char resident = 0;
  char *page = (char *)((uintptr_t)f->lo & ~(PAGE - 1));
  if (mincore(page, PAGE, &resident) == 0 && !(resident & 1)) return;
  if (*(volatile uint64_t *)f->lo != 0)
    ito__fatal("stack overflow in a lightweight thread (stack of %zu bytes; this stack had no "
               "guard page, so memory next to it may be corrupted); raise ITO_STACK_SIZE",
               ito__rt.stack_size);
}

void ito__fiber_free(worker *w, fiber *f) {
  if (f->kind == FIBER_OWN) {
    own_fiber_free(f);
    return;
  }
  if (f->kind != FIBER_POOL) return;
  check_canary(f);
  if (w && w->nfree_fibers < FIBER_CACHE) {
    f->next = w->free_fibers;
    w->free_fibers = f;
    w->nfree_fibers++;
    return;
  }
  spin_lock(&ito__rt.pool_lock);
  f->next = ito__rt.pool_fibers;
  ito__rt.pool_fibers = f;
  spin_unlock(&ito__rt.pool_lock);
}

/* A context that starts entry(arg) at the top of f's stack on its first
 * ito__ctx_jump; the layout matches src/arch/ctx_*.S. */
void ito__ctx_make(fiber *f, void (*entry)(void *)) {
  uintptr_t top = (uintptr_t)f->hi & ~(uintptr_t)15;
#if defined(__x86_64__)
  uint64_t *sp = (uint64_t *)(top - 80);
  memset(sp, 0, 80);
  sp[0] = 0x1F80ULL | (0x037FULL << 32); /* default mxcsr and x87 control word */
  sp[4] = (uint64_t)(uintptr_t)entry;    /* r12 */
  sp[7] = (uint64_t)(uintptr_t)ito__ctx_start;
  f->sp = sp;
#elif defined(__aarch64__)
  uint64_t *sp = (uint64_t *)(top - 176);
  memset(sp, 0, 176);
  sp[0] = (uint64_t)(uintptr_t)entry;          /* x19 */
  sp[11] = (uint64_t)(uintptr_t)ito__ctx_start; /* x30 */
  f->sp = sp;
#endif
}

/* ---- stack overflow reports -------------------------------------------------- */

static struct sigaction old_segv, old_bus;

static void write_str(const char *s) {
  ssize_t r = ito__os.write(2, s, strlen(s));
  (void)r;
}

static void segv_handler(int sig, siginfo_t *si, void *uc) {
  worker *w = ito__tls_worker;
  fiber *f = w ? w->cur : NULL;
  char *a = si->si_addr;
  if (f && (f->kind == FIBER_POOL || f->kind == FIBER_OWN) && f->guarded && a >= f->map &&
      a < f->lo + 256) {
    char buf[256];
    if (f->kind == FIBER_OWN)
      snprintf(buf, sizeof buf,
               "ito: stack overflow in a lightweight thread (stack of %zu bytes, asked for when "
               "it was created); ask for a larger stack\n",
               (size_t)(f->hi - f->lo));
    else
      snprintf(buf, sizeof buf,
               "ito: stack overflow in a lightweight thread (stack of %zu bytes); "
               "raise ITO_STACK_SIZE (for example ITO_STACK_SIZE=%zuK)\n",
               ito__rt.stack_size, ito__rt.stack_size * 4 / 1024);
    write_str(buf);
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus;
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction) {
      old->sa_sigaction(sig, si, uc);
      return;
    }
  } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
    old->sa_handler(sig);
    return;
  }
  /* not ours: the default action, taken when the faulting access re-runs */
  signal(sig, SIG_DFL);
}

void ito__install_segv(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ito__os.sigaction(SIGSEGV, &sa, &old_segv);
  ito__os.sigaction(SIGBUS, &sa, &old_bus);
}

void ito__altstack_setup(worker *w) {
  size_t sz = 64 * 1024;
  char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return;
  stack_t ss;
  ss.ss_sp = m;
  ss.ss_size = sz;
  ss.ss_flags = 0;
  if (sigaltstack(&ss, NULL) == 0) w->altstack = m;
}
