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
  uint32_t gen = t->gen;
  memset(t, 0, sizeof *t);
  t->gen = gen;
  return t;
}

static void thread_free(ithread *t) {
  free(t->keys);
  t->keys = NULL;
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
  spin_lock(&t->lock);
  t->result = result;
  __atomic_store_n(&t->state, TH_DONE, __ATOMIC_RELEASE);
  waiter *j = t->joiner;
  t->joiner = NULL;
  int detached = t->flags & TH_DETACHED;
  spin_unlock(&t->lock);
  atomic_fetch_sub_explicit(&ito__rt.live_threads, 1, memory_order_release);
  if (detached) thread_free(t);
  if (j) ito__make_ready(j);
  w = cur_worker();
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
  int rc = ito__ensure();
  if (rc) return rc;
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
  t->flags = detached ? TH_DETACHED : 0;
  f->thread = t;
  ito__ctx_make(f, ito__thread_entry);
  atomic_fetch_add_explicit(&ito__rt.live_threads, 1, memory_order_relaxed);
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

int ito_join(ito_thread_t h, void **result) {
  ithread *t = ito__thread_of(h);
  if (!t) return h ? EINVAL : ESRCH;
  worker *w = cur_worker();
  spin_lock(&t->lock);
  if ((t->flags & (TH_DETACHED | TH_JOINED | TH_ROOT)) || t->joiner) {
    spin_unlock(&t->lock);
    return EINVAL;
  }
  if (w && w->cur && w->cur->thread == t) {
    spin_unlock(&t->lock);
    return EDEADLK;
  }
  t->flags |= TH_JOINED;
  if (t->state != TH_DONE) {
    if (w && w->cur) {
      fiber *me = w->cur;
      me->w.fiber = me;
      t->joiner = &me->w;
      ito__suspend(ACT_BLOCK, NULL, ito__unlock_post, &t->lock);
    } else {
      waiter wt;
      memset(&wt, 0, sizeof wt);
      t->joiner = &wt;
      spin_unlock(&t->lock);
      ito__block_os(&wt, NULL);
    }
  } else {
    spin_unlock(&t->lock);
  }
  /* the ending thread stored its result before it released t->lock */
  spin_lock(&t->lock);
  void *r = t->result;
  spin_unlock(&t->lock);
  if (result) *result = r;
  thread_free(t);
  return 0;
}

int ito_detach(ito_thread_t h) {
  ithread *t = ito__thread_of(h);
  if (!t) return h ? EINVAL : ESRCH;
  spin_lock(&t->lock);
  if (t->flags & (TH_DETACHED | TH_JOINED | TH_ROOT)) {
    spin_unlock(&t->lock);
    return EINVAL;
  }
  t->flags |= TH_DETACHED;
  int done = t->state == TH_DONE;
  spin_unlock(&t->lock);
  if (done) thread_free(t);
  return 0;
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
