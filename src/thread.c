/* Lightweight threads: creation runs the child at once (work-first) and
 * leaves the parent's context in the deque for thieves; join, detach, exit,
 * yield and thread-specific data. Design: docs/scheduler.md. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

HIDDEN void ito__exit_fiber(worker *w, fiber *f) __attribute__((noreturn));

/* ---- descriptors and handles ------------------------------------------------
 * A handle packs the descriptor address (64-byte aligned, below 2^48) with
 * 22 bits of its generation, so a handle to an ended and reused descriptor
 * is told apart from the live thread. */
#define GEN_MASK 0x3FFFFFu

ito_thread_t ito__handle(ithread *t) {
  uint64_t p = (uint64_t)(uintptr_t)t;
  uint64_t g = t->gen & GEN_MASK;
  return p | (g & 63) | ((g >> 6) << 48);
}

static ithread *desc_of(ito_thread_t h) { return (ithread *)(uintptr_t)(h & 0x0000FFFFFFFFFFC0ULL); }
static uint32_t gen_of(ito_thread_t h) { return (uint32_t)((h & 63) | ((h >> 48) << 6)); }

ithread *ito__thread_of(ito_thread_t h) {
  ithread *t = desc_of(h);
  if (!t || (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) & GEN_MASK) != gen_of(h)) return NULL;
  return t;
}

static ithread *map_threads(void) {
  size_t sz = 1UL << 20;
  char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  size_t each = (sizeof(ithread) + 63) & ~63UL;
  ithread *first = NULL;
  for (size_t off = sz - each;; off -= each) {
    ithread *t = (ithread *)(m + off);
    t->next_free = first;
    first = t;
    if (off < each) break;
  }
  return first;
}

ithread *ito__thread_alloc(worker *w) {
  ithread *t = w ? w->free_threads : NULL;
  if (t) {
    w->free_threads = t->next_free;
    w->nfree_threads--;
  } else {
    spin_lock(&ito__rt.pool_lock);
    t = ito__rt.pool_threads;
    if (!t) t = map_threads();
    if (t) ito__rt.pool_threads = t->next_free;
    spin_unlock(&ito__rt.pool_lock);
    if (!t) return NULL;
  }
  t->flags = 0;
  t->sync = TS_RUNNING;
  t->result = NULL;
  t->keys = NULL;
  return t;
}

static void thread_free(ithread *t) {
  if (t->keys) {
    free(t->keys);
    t->keys = NULL;
  }
  __atomic_store_n(&t->gen, (t->gen + 1) & GEN_MASK, __ATOMIC_RELEASE);
  worker *w = cur_worker();
  if (w && w->nfree_threads < 256) {
    t->next_free = w->free_threads;
    w->free_threads = t;
    w->nfree_threads++;
    return;
  }
  spin_lock(&ito__rt.pool_lock);
  t->next_free = ito__rt.pool_threads;
  ito__rt.pool_threads = t;
  spin_unlock(&ito__rt.pool_lock);
}

static void live_add(worker *w, long d) {
  if (w)
    STORE_RLX(&w->live, w->live + d);
  else
    atomic_fetch_add_explicit(&ito__rt.live_outside, d, memory_order_relaxed);
}

HIDDEN long ito__live_threads(void);
long ito__live_threads(void) {
  long n = atomic_load_explicit(&ito__rt.live_outside, memory_order_acquire);
  for (int i = 0; i < ito__rt.nworkers; i++) n += LOAD_RLX(&ito__rt.workers[i]->live);
  atomic_thread_fence(memory_order_acquire);
  return n;
}

/* ---- keys ---------------------------------------------------------------------- */

static int key_lock;
static struct {
  int used;
  unsigned seq;
  void (*dtor)(void *);
} keys[ITO_KEYS_MAX];

int ito_key_create(ito_key_t *key, void (*destructor)(void *)) {
  if (!key) return EINVAL;
  spin_lock(&key_lock);
  for (unsigned i = 0; i < ITO_KEYS_MAX; i++) {
    if (!keys[i].used) {
      keys[i].used = 1;
      keys[i].seq++;
      keys[i].dtor = destructor;
      spin_unlock(&key_lock);
      *key = i;
      return 0;
    }
  }
  spin_unlock(&key_lock);
  return EAGAIN;
}

int ito_key_delete(ito_key_t key) {
  if (key >= ITO_KEYS_MAX) return EINVAL;
  spin_lock(&key_lock);
  int ok = keys[key].used;
  keys[key].used = 0;
  keys[key].dtor = NULL;
  spin_unlock(&key_lock);
  return ok ? 0 : EINVAL;
}

/* Values live per thread; an OS thread that is not an ito thread has its own. */
static __thread void **os_keys;

static void ***key_slots(void) {
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread) return (void ***)&w->cur->thread->keys;
  return &os_keys;
}

void *ito_getspecific(ito_key_t key) {
  if (key >= ITO_KEYS_MAX) return NULL;
  void **k = *key_slots();
  return k ? k[key] : NULL;
}

int ito_setspecific(ito_key_t key, const void *value) {
  if (key >= ITO_KEYS_MAX || !LOAD_RLX(&keys[key].used)) return EINVAL;
  void ***slots = key_slots();
  if (!*slots) {
    *slots = calloc(ITO_KEYS_MAX, sizeof(void *));
    if (!*slots) return ENOMEM;
  }
  (*slots)[key] = (void *)value;
  return 0;
}

/* Destructors run until no value is left, at most 4 rounds (as POSIX does). */
static void run_key_destructors(ithread *t) {
  for (int round = 0; round < 4 && t->keys; round++) {
    int any = 0;
    for (unsigned i = 0; i < ITO_KEYS_MAX; i++) {
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

/* ---- life of a thread ----------------------------------------------------------- */

static void thread_finish(void *result) __attribute__((noreturn));
static void thread_finish(void *result) {
  worker *w = cur_worker();
  ithread *t = w->cur->thread;
  run_key_destructors(t);
  t->result = result;
  uintptr_t old = __atomic_exchange_n(&t->sync, TS_DONE, __ATOMIC_ACQ_REL);
  w = cur_worker();
  live_add(w, -1);
  if (old == TS_DETACHED)
    thread_free(t);
  else if (old > TS_CLAIMED)
    ito__make_ready((waiter *)old);
  ito__exit_fiber(w, w->cur);
}

void ito__thread_entry(void *arg) {
  (void)arg;
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  worker *w = cur_worker();
  ito__run_post(w);
  ithread *t = w->cur->thread;
  thread_finish(t->fn(t->arg));
}

static void push_parent_post(void *parent) { ito__push_fiber(cur_worker(), parent); }

int ito__create_internal(void *(*fn)(void *), void *arg, ithread **out, int detached,
                         ito_thread_t *hout) {
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  worker *w = cur_worker();
  ithread *t = ito__thread_alloc(w);
  if (!t) return EAGAIN;
  fiber *f = ito__fiber_alloc(w);
  if (!f) {
    thread_free(t);
    return EAGAIN;
  }
  t->fn = fn;
  t->arg = arg;
  t->sync = detached ? TS_DETACHED : TS_RUNNING;
  f->thread = t;
  ito__ctx_make(f, ito__thread_entry);
  live_add(w, 1);
  *out = t;
  if (hout) *hout = ito__handle(t); /* before the child runs: it may read it */
  if (!w || !w->cur) {
    ito__ready(f);
    return 0;
  }
  /* work-first: the child runs now; the parent is published once its
   * context is saved (by push_parent_post, on the child's stack) */
  fiber *me = w->cur;
  w->post_fn = push_parent_post;
  w->post_arg = me;
  ito__switch(w, me, f, 0);
  return 0;
}

int ito_create(void *(*fn)(void *), void *arg, ito_thread_t *out) {
  if (!fn) return EINVAL;
  ithread *t;
  return ito__create_internal(fn, arg, &t, 0, out);
}

/* Runs on the scheduler once the joiner's context is saved: register it, or
 * resume it at once if the thread ended meanwhile. */
static void join_post(void *p) {
  ithread *t = p;
  worker *w = cur_worker();
  fiber *me = w->sched_from;
  uintptr_t expect = TS_RUNNING;
  if (!__atomic_compare_exchange_n(&t->sync, &expect, (uintptr_t)&me->w, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    if (expect != TS_DONE) me->w.result = EINVAL; /* another joiner, or detached */
    ito__ready(me);
  }
}

int ito_join(ito_thread_t h, void **result) {
  ithread *t = ito__thread_of(h);
  if (!t) return h ? EINVAL : ESRCH;
  if (t->flags & TH_ROOT) return EINVAL;
  uintptr_t s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  if (s != TS_DONE) {
    if (s != TS_RUNNING) return EINVAL; /* detached, joined, or joined right now */
    worker *w = cur_worker();
    if (w && w->cur) {
      fiber *me = w->cur;
      if (me->thread == t) return EDEADLK;
      me->w.fiber = me;
      me->w.result = 0;
      ito__suspend(ACT_BLOCK, NULL, join_post, t);
      if (me->w.result) return me->w.result;
    } else {
      waiter wt;
      memset(&wt, 0, sizeof wt);
      uintptr_t expect = TS_RUNNING;
      if (__atomic_compare_exchange_n(&t->sync, &expect, (uintptr_t)&wt, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        ito__block_os(&wt, NULL);
      else if (expect != TS_DONE)
        return EINVAL;
    }
  }
  /* ended: claim it (a second, concurrent joiner loses here) and free it */
  uintptr_t expect = TS_DONE;
  if (!__atomic_compare_exchange_n(&t->sync, &expect, TS_CLAIMED, 0, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED))
    return EINVAL;
  if (result) *result = t->result;
  thread_free(t);
  return 0;
}

int ito_detach(ito_thread_t h) {
  ithread *t = ito__thread_of(h);
  if (!t) return h ? EINVAL : ESRCH;
  if (t->flags & TH_ROOT) return EINVAL;
  uintptr_t s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  for (;;) {
    if (s == TS_RUNNING) {
      if (__atomic_compare_exchange_n(&t->sync, &s, TS_DETACHED, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return 0;
    } else if (s == TS_DONE) {
      if (__atomic_compare_exchange_n(&t->sync, &s, TS_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        thread_free(t);
        return 0;
      }
    } else {
      return EINVAL;
    }
  }
}

ito_thread_t ito_self(void) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread) return 0;
  return ito__handle(w->cur->thread);
}

void ito_exit(void *result) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread)
    ito__fatal("ito_exit called from a thread that is not an ito thread");
  if (w->cur->thread->flags & TH_ROOT)
    ito__fatal("ito_exit called from the program's main thread; return from main instead");
  thread_finish(result);
}

int ito_yield(void) {
  worker *w = cur_worker();
  if (!w || !w->cur) {
    sched_yield();
    return 0;
  }
  ito__suspend(ACT_YIELD, NULL, NULL, NULL);
  return 0;
}
