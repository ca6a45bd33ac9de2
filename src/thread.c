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

ithread *ito__thread_init(fiber *f) {
  ithread *t = &f->th;
  t->flags = 0;
  t->sync = TS_RUNNING;
  t->result = NULL;
  t->keys = NULL;
  f->thread = t;
  return t;
}

static fiber *fiber_of(ithread *t) { return (fiber *)((char *)t - offsetof(fiber, th)); }

/* The thread is over and nobody will look at it again: bump the generation
 * (stale handles now fail) and give the fiber back. */
static void thread_release(ithread *t) {
  if (t->keys) {
    free(t->keys);
    t->keys = NULL;
  }
  __atomic_store_n(&t->gen, (t->gen + 1) & GEN_MASK, __ATOMIC_RELEASE);
  ito__fiber_free(cur_worker(), fiber_of(t));
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

/* Runs once the ended thread's fiber is left (as a post-switch action or in
 * the scheduler): only then may a joiner free it. */
void ito__thread_done(ithread *t) {
  uintptr_t old = __atomic_exchange_n(&t->sync, TS_DONE, __ATOMIC_ACQ_REL);
  if (old == TS_DETACHED)
    thread_release(t);
  else if (old > TS_CLAIMED)
    ito__make_ready((waiter *)old);
}
static void thread_done_post(void *t) { ito__thread_done(t); }
HIDDEN int ito__fork_conflict(worker *w, uint64_t t);

/* A thread started by the lazy ito_create ends: if its creator's record is
 * still at the tail of this worker's deque, take it back and continue the
 * creator right here (its stack is untouched); otherwise somebody took it
 * and this worker goes to look for work. */
static void resume_creator(worker *w, fiber *f) {
  uint64_t t = f->create_idx;
  if (f->create_worker != w || atomic_load_explicit(&w->tail, memory_order_relaxed) != t + 1 ||
      w->slots[t & w->mask] != ((uintptr_t)&f->start | ENT_CREATE))
    return;
  atomic_store_explicit(&w->tail, t, memory_order_relaxed);
  owner_barrier();
  if (atomic_load_explicit(&w->head, memory_order_relaxed) > t && !ito__fork_conflict(w, t)) return;
  fiber *parent = f->start.fiber;
  w->cur = parent;
  w->post_fn = thread_done_post;
  w->post_arg = f->thread;
#if ITO_ASAN
  ito__asan_start(NULL, parent->lo, (size_t)(parent->hi - parent->lo));
#endif
  ito__resume(&f->start, (void *)(uintptr_t)f->start.regs[REC_SP]);
}

static void thread_finish(void *result) __attribute__((noreturn));
static void thread_finish(void *result) {
  worker *w = cur_worker();
  ithread *t = w->cur->thread;
  run_key_destructors(t);
  t->result = result;
  w = cur_worker();
  live_add(w, -1);
  fiber *f = w->cur;
  if (f->create_worker) resume_creator(w, f);
  ito__exit_fiber(w, f);
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
  fiber *f = ito__fiber_alloc(w);
  if (!f) return EAGAIN;
  ithread *t = ito__thread_init(f);
  t->fn = fn;
  t->arg = arg;
  t->sync = detached ? TS_DETACHED : TS_RUNNING;
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

/* First frame of a thread started by ito_create, on its own stack: publish
 * the creator's continuation, then run the thread. */
static void create_body(void *p) __attribute__((noreturn));
static void create_body(void *p) {
  fiber *f = p;
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  worker *w = cur_worker();
  f->start.fiber = w->cur;
  f->start.tg = NULL;
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  w->slots[t & w->mask] = (uintptr_t)&f->start | ENT_CREATE;
  f->create_worker = w;
  f->create_idx = t;
  w->cur = f;
  atomic_store_explicit(&w->tail, t + 1, memory_order_release);
  ithread *th = f->thread;
  thread_finish(th->fn(th->arg));
}

/* Work-first creation without a context switch: the creator's registers go
 * into a record in the child's fiber, the child starts with a plain call on
 * its own stack, and the creator is resumed from the record when the child
 * ends, blocks or a thief takes the record (docs/scheduler.md). */
int ito_create(void *(*fn)(void *), void *arg, ito_thread_t *out) {
  if (!fn) return EINVAL;
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  worker *w = cur_worker();
  if (UNLIKELY(!w || !w->cur ||
               atomic_load_explicit(&w->tail, memory_order_relaxed) -
                       atomic_load_explicit(&w->head, memory_order_relaxed) >=
                   w->mask)) {
    ithread *t;
    return ito__create_internal(fn, arg, &t, 0, out);
  }
  fiber *f = ito__fiber_alloc(w);
  if (!f) return EAGAIN;
  ithread *t = ito__thread_init(f);
  t->fn = fn;
  t->arg = arg;
  live_add(w, 1);
  if (out) *out = ito__handle(t); /* before the child runs: it may read it */
#if ITO_ASAN
  ito__asan_start(NULL, f->lo, (size_t)(f->hi - f->lo));
#endif
  ito__spawn_on(&f->start, (void *)((uintptr_t)f->hi & ~(uintptr_t)15), create_body, f);
  return 0;
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
  thread_release(t);
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
        thread_release(t);
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
