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
 * 21 bits of its generation, so a handle to an ended and reused descriptor
 * is told apart from the live thread, and has bit 63 set: glibc's pthread_t
 * values have it clear, so the pthread library tells the two apart
 * (docs/dropin.md section 4). */
#define GEN_MASK 0x1FFFFFu
#define HANDLE_MARK (1ULL << 63)

ito_thread_t ito__handle(ithread *t) {
  uint64_t p = (uint64_t)(uintptr_t)t;
  uint64_t g = t->gen & GEN_MASK;
  return HANDLE_MARK | p | (g & 63) | ((g >> 6) << 48);
}

static ithread *desc_of(ito_thread_t h) { return (ithread *)(uintptr_t)(h & 0x0000FFFFFFFFFFC0ULL); }
static uint32_t gen_of(ito_thread_t h) { return (uint32_t)((h & 63) | (((h >> 48) & 0x7FFF) << 6)); }

ithread *ito__thread_of(ito_thread_t h) {
  if (!(h & HANDLE_MARK)) return NULL;
  ithread *t = desc_of(h);
  if (!t || (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) & GEN_MASK) != gen_of(h)) return NULL;
  return t;
}

/* After reading t's flags or sync through handle h: does h still name t?
 * (It does not if the thread ended detached and t was released meanwhile.) */
static int still_current(ithread *t, ito_thread_t h) {
  return (__atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) & GEN_MASK) == gen_of(h);
}

ithread *ito__thread_init(fiber *f) {
  ithread *t = &f->th;
  t->flags = 0;
  t->sync = TS_RUNNING;
  t->joiner = NULL;
  t->result = NULL;
  t->keys = NULL;
  f->thread = t;
  return t;
}

static fiber *fiber_of(ithread *t) { return (fiber *)((char *)t - offsetof(fiber, th)); }

/* The thread is over and nobody will look at it again: bump the generation
 * (stale handles now fail) and give the fiber back. */
static inline void thread_release(ithread *t) {
  if (t->keys) {
    free(t->keys);
    t->keys = NULL;
  }
  /* left as a fresh descriptor (keys and joiner NULL, flags 0, RUNNING) so
   * that the lazy ito_create need not initialise it. The generation moves
   * first: a join or detach holding a stale handle that reads the reset
   * flags or sync (release stores) then sees the new generation
   * (still_current) and returns EINVAL instead of using the descriptor. */
  __atomic_store_n(&t->gen, (t->gen + 1) & GEN_MASK, __ATOMIC_RELEASE);
  __atomic_store_n(&t->flags, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&t->sync, TS_RUNNING, __ATOMIC_RELEASE);
  fiber_put(cur_worker(), fiber_of(t));
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

void *ito_getspecific(ito_key_t key) {
  if (key >= ITO_KEYS_MAX) return NULL;
  void **k = *key_slots();
  return k ? k[key] : NULL;
}

void *ito_key_getspecific(ito_key_t key) { return ito_getspecific(key); }

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

int ito_key_setspecific(ito_key_t key, const void *value) { return ito_setspecific(key, value); }

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

/* ---- the end of a thread and its join ---------------------------------------
 * sync goes RUNNING -> EXITING -> DONE (by the ending thread) -> CLAIMED (by
 * the joiner, who then frees the fiber). A joiner that finds the thread
 * running parks a waiter in t->joiner (ito_detach parks JOINER_DETACHED).
 * The two sides pair up like the deque (docs/scheduler.md): the ending side
 * stores EXITING and then loads joiner with only a compiler barrier; the
 * parking side stores joiner, runs the heavy barrier, then loads sync. So at
 * least one sees the other, and a compare-and-swap on joiner settles who
 * wakes (or frees) whom when both do. The common case (the thread ended
 * before the join) has no atomic read-modify-write at all. The parking side
 * is never the last to touch t (waiter.parking, detach_refs; see
 * docs/scheduler.md). As with
 * pthread_join, two simultaneous joins of one thread are undefined. */

/* A thread detached while running has two references, the detacher's and
 * its own end's; one created detached has only the latter. The last frees. */
static inline void drop_detach_ref(ithread *t) {
  if (__atomic_sub_fetch(&t->detach_refs, 1, __ATOMIC_ACQ_REL) == 0) thread_release(t);
}

/* Runs once the ended thread's fiber is left (a post-switch action or the
 * scheduler's), so that whoever sees DONE may free the fiber at once. */
static inline void thread_done(ithread *t) {
  /* TH_ANON is set at birth and never changes, but ito_detach may store to
   * the flags of a handle's thread as it ends: read them atomically */
  if (__atomic_load_n(&t->flags, __ATOMIC_RELAXED) & TH_ANON) { /* nobody to tell */
    thread_release(t);
    return;
  }
  __atomic_store_n(&t->sync, TS_EXITING, __ATOMIC_RELAXED);
  owner_barrier();
  waiter *j = __atomic_load_n(&t->joiner, __ATOMIC_ACQUIRE);
  if (j && __atomic_compare_exchange_n(&t->joiner, &j, NULL, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED)) {
    if (j == JOINER_DETACHED) {
      drop_detach_ref(t);
      return;
    }
    __atomic_store_n(&t->sync, TS_DONE, __ATOMIC_RELEASE);
    ito__make_ready(j);
    return;
  }
  __atomic_store_n(&t->sync, TS_DONE, __ATOMIC_RELEASE);
}
void ito__thread_done(ithread *t) { thread_done(t); }

/* The parking side: returns 1 if j is parked and the ending thread will
 * take it, 0 if the thread is already ending (j was taken back). */
static int park(ithread *t, waiter *j) {
  /* release: the ending thread that takes j reads what the joiner wrote in it */
  __atomic_store_n(&t->joiner, j, __ATOMIC_RELEASE);
  ito__heavy_barrier();
  if (__atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) == TS_RUNNING) return 1;
  waiter *expect = j;
  return !__atomic_compare_exchange_n(&t->joiner, &expect, NULL, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_RELAXED);
}

static void wait_done(ithread *t) {
  while (__atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) != TS_DONE) cpu_relax();
}

static void thread_done_post(void *t) { ito__thread_done(t); }
HIDDEN int ito__fork_conflict(worker *w, uint64_t t);

static inline int reclaim_creator(worker *w, fiber *f);

/* A thread started by ito_create ends away from its first frame (ito_exit):
 * if its creator's record is still ours, continue the creator right here
 * (its stack is untouched); otherwise return and let the caller go to the
 * scheduler. */
static void resume_creator(worker *w, fiber *f) {
  if (!reclaim_creator(w, f)) return;
  fiber *parent = f->start.fiber;
  w->cur = parent;
  w->post_fn = thread_done_post;
  w->post_arg = f->thread;
  san_enter(parent);
  ito__resume(&f->start, (void *)(uintptr_t)f->start.regs[REC_SP]);
}

/* The thread's function returned (or it called ito_exit); returns the worker
 * it now runs on (destructors may have moved it). */
static inline worker *thread_end(ithread *t, void *result) {
  if (t->keys) run_key_destructors(t);
  t->result = result;
  worker *w = cur_worker();
  live_add(w, -1);
  return w;
}

/* Ends the running thread from anywhere on its stack (ito_exit, and threads
 * not started by the lazy ito_create). */
static void thread_finish(void *result) __attribute__((noreturn));
static void thread_finish(void *result) {
  worker *w = cur_worker();
  ithread *t = w->cur->thread;
  w = thread_end(t, result);
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

/* Starts fn(arg) as a thread on the fresh fiber f: at once (work-first) on
 * an ito thread, or queued (queue, or the caller is not an ito thread). */
static int create_on(fiber *f, void *(*fn)(void *), void *arg, ithread **out, int detached,
                     ito_thread_t *hout, int queue) {
  worker *w = cur_worker();
  ithread *t = ito__thread_init(f);
  t->fn = fn;
  t->arg = arg;
  if (detached) {
    t->joiner = JOINER_DETACHED;
    t->detach_refs = 1;
    t->flags = TH_DETACHED;
  }
  ito__ctx_make(f, ito__thread_entry);
  live_add(w, 1);
  *out = t;
  if (hout) *hout = ito__handle(t); /* before the child runs: it may read it */
  if (queue || !w || !w->cur || w->cur->home) { /* a creator with a home must not move */
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

int ito__create_internal(void *(*fn)(void *), void *arg, ithread **out, int detached,
                         ito_thread_t *hout) {
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  fiber *f = ito__fiber_alloc(cur_worker());
  if (!f) return EAGAIN;
  return create_on(f, fn, arg, out, detached, hout, 0);
}

/* Takes the creator's record back if it is still at the tail of this
 * worker's deque (nobody took it). */
static inline int reclaim_creator(worker *w, fiber *f) {
  uint64_t t = f->create_idx;
  if (f->create_worker != w || atomic_load_explicit(&w->tail, memory_order_relaxed) != t + 1 ||
      __atomic_load_n(&w->slots[t & w->mask], __ATOMIC_ACQUIRE) != ((uintptr_t)&f->start | ENT_CREATE))
    return 0;
  atomic_store_explicit(&w->tail, t, memory_order_relaxed);
  deque_owner_barrier(w);
  return atomic_load_explicit(&w->head, memory_order_relaxed) <= t || ito__fork_conflict(w, t);
}

/* First frame of a thread started by ito_create, on its own stack: publish
 * the creator's continuation, run the thread, and return to ito__spawn_on
 * (which goes back to the creator) if the continuation is still ours. */
static void create_body(void *p, void *fnp, void *arg) {
  fiber *f = p;
  void *(*fn)(void *) = (void *(*)(void *))fnp;
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  worker *w = cur_worker();
  f->start.fiber = w->cur;
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  w->slots[t & w->mask] = (uintptr_t)&f->start | ENT_CREATE;
  f->create_worker = w;
  f->create_idx = t;
  w->cur = f;
  atomic_store_explicit(&w->tail, t + 1, memory_order_release);
  publish_check(w, 0);
  ithread *th = f->thread;
  w = thread_end(th, fn(arg)); /* fn and arg came in registers, not through th */
  if (reclaim_creator(w, f)) {
    fiber *parent = f->start.fiber;
    w->cur = parent;
    san_enter(parent); /* the return below switches back to the creator's stack */
    return;
  }
  ito__switch_to_sched(w, ACT_EXIT, NULL);
}

/* Back on the creator's stack after create_body returned: the thread's
 * fiber is no longer in use. */
HIDDEN void ito__spawn_done(struct ito_rec *rec);
void ito__spawn_done(struct ito_rec *rec) {
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  fiber *f = (fiber *)((char *)rec - offsetof(fiber, start));
  thread_done(f->thread);
}

/* Work-first creation without a context switch: the creator's registers go
 * into a record in the child's fiber, the child starts with a plain call on
 * its own stack, and the creator is resumed from the record when the child
 * ends, blocks or a thief takes the record (docs/scheduler.md). */
int ito_create(void *(*fn)(void *), void *arg, ito_thread_t *out) {
  if (!fn) return EINVAL;
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  worker *w = cur_worker();
  if (UNLIKELY(!w || !w->cur || w->cur->home)) {
    ithread *t;
    return ito__create_internal(fn, arg, &t, 0, out);
  }
  /* capacity: checked when the tail is a multiple of DEQUE_MARGIN, as the
   * assembly fork does (docs/scheduler.md) */
  uint64_t tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
  if (UNLIKELY((tail & (DEQUE_MARGIN - 1)) == 0 && deque_full(w, tail))) {
    ithread *t;
    return ito__create_internal(fn, arg, &t, 0, out);
  }
  fiber *f = fiber_get(w);
  if (!f) return EAGAIN;
  ithread *t = &f->th; /* fresh: see thread_release */
  f->thread = t;
  live_add(w, 1);
  if (out) *out = ito__handle(t); /* before the child runs: it may read it */
  san_enter(f);
  ito__spawn_on(&f->start, (void *)((uintptr_t)f->hi & ~(uintptr_t)15), create_body, f,
                (void *)fn, arg);
  return 0;
}

/* Runs on the scheduler once the joiner's context is saved. */
static void join_post(void *p) {
  ithread *t = p;
  fiber *me = cur_worker()->sched_from;
  int parked = park(t, &me->w);
  /* from here on this side touches neither t nor me: the joiner, resumed by
   * the ending thread, may free t once it sees this */
  __atomic_store_n(&me->w.parking, 0, __ATOMIC_RELEASE);
  if (!parked) ito__ready(me);
}

/* The joined thread is still running: wait for it. Returns 0 or an error. */
static __attribute__((noinline)) int join_wait(ithread *t) {
  if (__atomic_load_n(&t->joiner, __ATOMIC_RELAXED)) return EINVAL; /* detached or joined */
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread == t) return EDEADLK;
  if (parkable(w)) {
    fiber *me = w->cur;
    me->w.fiber = me;
    me->w.parking = 1;
    ito__suspend(ACT_BLOCK, NULL, join_post, t);
    /* the ending thread may resume us while join_post still reads t */
    while (__atomic_load_n(&me->w.parking, __ATOMIC_ACQUIRE)) cpu_relax();
  } else {
    waiter wt;
    memset(&wt, 0, sizeof wt);
    if (park(t, &wt)) ito__block_os(&wt, CLOCK_MONOTONIC, NULL);
  }
  wait_done(t);
  return 0;
}

int ito_join(ito_thread_t h, void **result) {
  ithread *t = ito__thread_of(h);
  if (UNLIKELY(!t)) return h ? EINVAL : ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  if (UNLIKELY(s != TS_DONE)) { /* (neither the root nor a detached thread is ever done) */
    int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
    if (s == TS_CLAIMED || (fl & (TH_ROOT | TH_DETACHED)) || !still_current(t, h)) return EINVAL;
    if (s == TS_RUNNING) {
      int rc = join_wait(t);
      if (rc) return rc;
    } else {
      wait_done(t);
    }
  }
  t->sync = TS_CLAIMED;
  if (result) *result = t->result;
  thread_release(t);
  return 0;
}

int ito_detach(ito_thread_t h) {
  ithread *t = ito__thread_of(h);
  if (!t) return h ? EINVAL : ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
  if (s == TS_CLAIMED || (fl & (TH_ROOT | TH_DETACHED)) || !still_current(t, h)) return EINVAL;
  if (s == TS_RUNNING) {
    if (__atomic_load_n(&t->joiner, __ATOMIC_RELAXED)) return EINVAL;
    /* Once DETACHED is visible the ending thread may take it at any time,
     * while park() still reads t: whichever of the two is last frees t. */
    t->detach_refs = 2;
    __atomic_store_n(&t->flags, fl | TH_DETACHED, __ATOMIC_RELAXED); /* park publishes it */
    if (park(t, JOINER_DETACHED)) {
      drop_detach_ref(t);
      return 0;
    }
  }
  wait_done(t);
  t->sync = TS_CLAIMED;
  thread_release(t);
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
#if ITO_TSAN
  w->cur->tsan_dirty = 1; /* the frames above this call never return */
#endif
  thread_finish(result);
}

int ito_yield(void) {
  worker *w = cur_worker();
  if (!parkable(w)) {
    ito__os.sched_yield();
    return 0;
  }
  ito__suspend(ACT_YIELD, NULL, NULL, NULL);
  return 0;
}

/* ---- the pthread library's entry points (src/dropin/ito_dropin.h) -------------------------- */

static unsigned long pt_created;

int ito__dropin_check(ito_thread_t h) {
  ithread *t = ito__thread_of(h);
  if (!t) return ESRCH;
  int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
  if (!still_current(t, h) || __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) == TS_CLAIMED)
    return ESRCH;
  return (fl & TH_ROOT) ? EINVAL : 0;
}

int ito__dropin_tryjoin(ito_thread_t h, void **result) {
  ithread *t = ito__thread_of(h);
  if (!t) return ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
  if (s == TS_CLAIMED || (fl & (TH_ROOT | TH_DETACHED)) || !still_current(t, h)) return EINVAL;
  if (__atomic_load_n(&t->joiner, __ATOMIC_RELAXED)) return EINVAL;
  if (s != TS_DONE) return EBUSY;
  return ito_join(h, result);
}

int ito__dropin_is_root(void) {
  worker *w = cur_worker();
  return w && w->cur && w->cur->thread && (w->cur->thread->flags & TH_ROOT);
}

int ito__dropin_stack(void **lo, size_t *size) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread) return ESRCH;
  fiber *f = fiber_of(w->cur->thread); /* the fiber the thread started on */
  *lo = f->lo;
  *size = (size_t)(f->hi - f->lo);
  return 0;
}

long ito__dropin_live(void) { return ito__live_threads(); }
unsigned long ito__dropin_created(void) { return __atomic_load_n(&pt_created, __ATOMIC_RELAXED); }

void ito__dropin_pin(void) {
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread) w->cur->thread->pin++;
}
void ito__dropin_unpin(void) {
  worker *w = cur_worker();
  if (w && w->cur && w->cur->thread && w->cur->thread->pin > 0) w->cur->thread->pin--;
}
int ito__dropin_can_park(void) { return parkable(cur_worker()) != NULL; }

int ito__dropin_create(ito_thread_t *out, const struct ito_dropin_attr *a, void *(*fn)(void *),
                   void *arg) {
  if (!fn) return EINVAL;
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  struct ito__switch_save save; /* the child starts with no caught exceptions */
  ito__save_thread_state(&save);
  int rc;
  worker *w = cur_worker();
  int pinned = w && w->cur && (!parkable(w) || w->cur->home); /* must not move: queue the child */
  if (!pinned && (!a || (!a->stackaddr && !a->detached && a->stacksize <= ito__rt.stack_size))) {
    rc = ito_create(fn, arg, out);
  } else {
    fiber *f;
    if (a && a->stackaddr)
      f = ito__user_fiber(a->stackaddr, a->stacksize);
    else if (a && a->stacksize > ito__rt.stack_size)
      f = ito__own_fiber(a->stacksize);
    else
      f = ito__fiber_alloc(w);
    if (!f) {
      rc = (a && a->stackaddr) ? EINVAL : EAGAIN;
    } else {
      ithread *t;
      rc = create_on(f, fn, arg, &t, a && a->detached, out, pinned);
    }
  }
  if (!rc) __atomic_fetch_add(&pt_created, 1, __ATOMIC_RELAXED);
  ito__restore_thread_state(&save);
  return rc;
}

/* ---- detached spawns for libito-omp.so ------------------------------------------
 * A task runs fn on a copy of its argument. On the fast path (an ito thread
 * with room in its deque) the copy sits at the top of the child's own stack,
 * below it a small closure for spawn_entry, and the child starts work-first
 * like ito_create's; otherwise the copy is on the heap and the child queued. */
struct spawn_closure {
  void (*fn)(void *);
  void *data;
  void *heap; /* freed after fn returns (the slow path's copy) */
};

static void *spawn_entry(void *p) {
  struct spawn_closure *c = p;
  void (*fn)(void *) = c->fn;
  void *heap = c->heap;
  fn(c->data);
  free(heap);
  return NULL;
}

static void copy_arg(void *dst, const void *arg, size_t size, void (*cpy)(void *, void *)) {
  if (cpy)
    cpy(dst, (void *)arg);
  else if (size)
    memcpy(dst, arg, size);
}

static inline void mark_anon(ithread *t) {
  t->joiner = JOINER_DETACHED;
  t->detach_refs = 1;
  t->flags = TH_DETACHED | TH_ANON;
}

static inline int spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                        void (*cpy)(void *, void *), void *ctx, int home) {
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  if (align < 16) align = 16;
  worker *w = cur_worker();
  uint64_t tail = w ? atomic_load_explicit(&w->tail, memory_order_relaxed) : 0;
  if (LIKELY(home < 0 && w && w->cur && parkable(w) && !w->cur->home && size <= 4096 &&
             align <= 4096 &&
             ((tail & (DEQUE_MARGIN - 1)) != 0 || !deque_full(w, tail)))) {
    fiber *f = fiber_get(w);
    if (!f) return EAGAIN;
    uintptr_t top = (uintptr_t)f->hi & ~(uintptr_t)15;
    void *data = (void *)((top - size) & ~(uintptr_t)(align - 1));
    struct spawn_closure *c =
        (struct spawn_closure *)(((uintptr_t)data - sizeof *c) & ~(uintptr_t)15);
    copy_arg(data, arg, size, cpy);
    c->fn = fn;
    c->data = data;
    c->heap = NULL;
    ithread *t = &f->th; /* fresh: see thread_release */
    f->thread = t;
    f->ctx = ctx == ITO_DROPIN_CTX_COPY ? data : ctx;
    mark_anon(t);
    live_add(w, 1);
    san_enter(f);
    ito__spawn_on(&f->start, c, create_body, f, (void *)spawn_entry, c);
    return 0;
  }
  /* the closure and the copy on the heap, the child queued (or run by a
   * worker when the caller is not an ito thread) */
  size_t off = (sizeof(struct spawn_closure) + align - 1) & ~(align - 1);
  char *blk = aligned_alloc(align, (off + size + align - 1) & ~(align - 1));
  if (!blk) return EAGAIN;
  struct spawn_closure *c = (struct spawn_closure *)blk;
  copy_arg(blk + off, arg, size, cpy);
  c->fn = fn;
  c->data = blk + off;
  c->heap = blk;
  fiber *f = ito__fiber_alloc(w);
  if (!f) {
    free(blk);
    return EAGAIN;
  }
  f->ctx = ctx == ITO_DROPIN_CTX_COPY ? c->data : ctx;
  if (home >= 0) {
    f->home = ito__rt.workers[home];
    __atomic_store_n(&ito__rt.homes, 1, __ATOMIC_RELAXED);
  }
  ithread *t;
  int pinned = w && w->cur && !parkable(w);
  return create_on(f, spawn_entry, c, &t, 1, NULL,
                   pinned || home >= 0 || size > 4096 || align > 4096);
}

int ito__dropin_spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                  void (*cpy)(void *, void *), void *ctx) {
  return spawn(fn, arg, size, align, cpy, ctx, -1);
}

int ito__dropin_spawn_home(int home, void (*fn)(void *), const void *arg, size_t size, size_t align,
                       void (*cpy)(void *, void *), void *ctx) {
  if (UNLIKELY(__atomic_load_n(&ito__rt.state, __ATOMIC_ACQUIRE) != 2)) ito__ensure();
  if (home < 0 || home >= ito__rt.nworkers) return EINVAL;
  return spawn(fn, arg, size, align, cpy, ctx, home);
}

int ito__dropin_home(int home) {
  worker *w = cur_worker();
  if (!w || !w->cur) return ESRCH;
  if (home >= ito__rt.nworkers) return EINVAL;
  if (home < 0) {
    w->cur->home = NULL;
    return 0;
  }
  worker *to = ito__rt.workers[home];
  w->cur->home = to;
  __atomic_store_n(&ito__rt.homes, 1, __ATOMIC_RELAXED);
  if (to != w) ito__suspend(ACT_MIGRATE, to, NULL, NULL);
  return 0;
}

void **ito__dropin_ctx(void) {
  worker *w = cur_worker();
  return w && w->cur ? &w->cur->ctx : NULL;
}

int ito__dropin_stealable(void) {
  worker *w = cur_worker();
  if (!w || !w->cur) return 0;
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  uint64_t h = atomic_load_explicit(&w->head, memory_order_relaxed);
  return t > h ? (int)(t - h < 1000000 ? t - h : 1000000) : 0;
}
