/* The scheduler: deque operations, the scheduler context, suspension, ready
 * queues and random work stealing. Design: docs/scheduler.md. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* Thieves order their head store before their tail load with this barrier.
 * With membarrier(2) the owner's side needs only a compiler barrier: the
 * kernel makes every running thread of the process execute a full fence, so
 * either the owner's tail store is visible to the thief's load, or the
 * owner's head load sees the thief's store (see docs/scheduler.md). */
void ito__heavy_barrier(void) {
  if (LIKELY(ito__rt_asym_fence))
    syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  else
    atomic_thread_fence(memory_order_seq_cst);
}

/* ---- deque --------------------------------------------------------------- */

void ito__push_fiber(worker *w, fiber *f) {
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  if (UNLIKELY(deque_full(w, t))) {
    ito__ready(f); /* deque full: the ready queue keeps it runnable */
    return;
  }
  w->slots[t & w->mask] = (uintptr_t)f | ENT_FIBER;
  atomic_store_explicit(&w->tail, t + 1, memory_order_release);
}

/* Owner: takes the youngest entry, or 0. */
static uintptr_t pop_tail(worker *w) {
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  if (atomic_load_explicit(&w->head, memory_order_relaxed) >= t) return 0;
  t--;
  atomic_store_explicit(&w->tail, t, memory_order_relaxed);
  owner_barrier();
  uintptr_t *slot = &w->slots[t & w->mask], e = 0;
  if (LIKELY(atomic_load_explicit(&w->head, memory_order_relaxed) <= t)) {
    e = *slot;
  } else {
    spin_lock(&w->steal_lock);
    if (atomic_load_explicit(&w->head, memory_order_relaxed) <= t)
      e = *slot;
    else
      atomic_store_explicit(&w->tail, t + 1, memory_order_relaxed);
    spin_unlock(&w->steal_lock);
  }
  /* a taken entry's slot is cleared: the fork's return relies on it */
  if (e) __atomic_store_n(slot, 0, __ATOMIC_RELEASE);
  return e;
}

/* Owner: the youngest entry if it is a suspended fiber, else 0 (nothing taken). */
static fiber *pop_tail_fiber(worker *w) {
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  if (atomic_load_explicit(&w->head, memory_order_relaxed) >= t) return NULL;
  /* a peek, racing with thieves (a taken slot reads 0, not a fiber) */
  if (!(__atomic_load_n(&w->slots[(t - 1) & w->mask], __ATOMIC_ACQUIRE) & ENT_FIBER)) return NULL;
  uintptr_t e = pop_tail(w);
  return e ? (fiber *)(e & ~(uintptr_t)ENT_TAGS) : NULL;
}

/* ---- ready queues ---------------------------------------------------------- */

static void rq_push(worker *w, fiber *first, fiber *last, int n) {
  last->next = NULL;
  spin_lock(&w->rq_lock);
  if (w->rq_tail)
    w->rq_tail->next = first;
  else
    w->rq_head = first;
  w->rq_tail = last;
  STORE_RLX(&w->rq_len, w->rq_len + n);
  spin_unlock(&w->rq_lock);
}

static fiber *rq_pop(worker *w) {
  if (!LOAD_RLX(&w->rq_len)) return NULL;
  spin_lock(&w->rq_lock);
  fiber *f = w->rq_head;
  if (f) {
    w->rq_head = f->next;
    if (!w->rq_head) w->rq_tail = NULL;
    STORE_RLX(&w->rq_len, w->rq_len - 1);
  }
  spin_unlock(&w->rq_lock);
  return f;
}

static worker *target_worker(void) {
  worker *w = cur_worker();
  if (w) return w;
  unsigned i = atomic_fetch_add_explicit(&ito__rt.rr, 1, memory_order_relaxed);
  return ito__rt.workers[i % (unsigned)ito__rt.nworkers];
}

void ito__ready_list(fiber *first, fiber *last, int n) {
  rq_push(target_worker(), first, last, n);
  ito__wake_idle(n);
}

void ito__ready(fiber *f) { ito__ready_list(f, f, 1); }

void ito__make_ready(waiter *wt) {
  if (wt->fiber) {
    ito__ready(wt->fiber);
  } else {
    __atomic_store_n(&wt->futex, 1, __ATOMIC_RELEASE);
    ito__futex_wake(&wt->futex, 1);
  }
}

/* A plain OS thread waits for make_ready; returns ETIMEDOUT if abstime (on
 * CLOCK_REALTIME) passed first. The caller resolves the race with a waker. */
void ito__block_os(waiter *wt, const struct timespec *abstime) {
  while (!__atomic_load_n(&wt->futex, __ATOMIC_ACQUIRE)) {
    struct timespec rel, *relp = NULL;
    if (abstime) {
      struct timespec now;
      clock_gettime(CLOCK_REALTIME, &now);
      long long ns = (long long)(abstime->tv_sec - now.tv_sec) * 1000000000LL +
                     (abstime->tv_nsec - now.tv_nsec);
      if (ns <= 0) {
        wt->result = ETIMEDOUT;
        return;
      }
      rel.tv_sec = ns / 1000000000LL;
      rel.tv_nsec = ns % 1000000000LL;
      relp = &rel;
    }
    ito__futex_wait(&wt->futex, 0, relp);
  }
}

/* ---- switching ----------------------------------------------------------- */

void ito__run_post(worker *w) {
  void (*fn)(void *) = w->post_fn;
  if (fn) {
    w->post_fn = NULL;
    fn(w->post_arg);
  }
}

/* Landing of ito__resume (assembly) on the new stack. */
void ito__arrive(void) {
  worker *w = cur_worker();
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  ito__run_post(w);
}

#if ITO_ASAN
static size_t fiber_size(const fiber *f) { return (size_t)(f->hi - f->lo); }
#endif

/* Direct switch between fibers on worker w; from may be NULL (its context is
 * not kept). Returns when from is resumed. */
void ito__switch(worker *w, fiber *from, fiber *to, int from_dying) {
  w->cur = to;
  void *dummy;
#if ITO_ASAN
  ito__asan_start(from_dying ? NULL : &from->asan_fake, to->lo, fiber_size(to));
#endif
  (void)from_dying;
  ito__ctx_jump(from ? &from->sp : &dummy, to->sp, to);
#if ITO_ASAN
  ito__asan_finish(from->asan_fake);
#endif
  ito__run_post(cur_worker());
}

static void sched_entry(void *arg);

/* Starts a fresh scheduler context on w's scheduler stack; the caller's
 * context is saved in from->sp unless action says it is gone. */
static void enter_sched(worker *w, fiber *from, int action, void *arg, int keep) {
  w->sched_action = action;
  w->sched_arg = arg;
  w->sched_from = from;
  void **top = (void **)((uintptr_t)w->sched_hi & ~(uintptr_t)15);
  fiber tmp; /* only to reuse ito__ctx_make's layout */
  tmp.hi = (char *)top;
  ito__ctx_make(&tmp, sched_entry);
  void *dummy;
#if ITO_ASAN
  /* each entry starts afresh at the top; the frames of the last one never
   * returned, so their redzones are still poisoned */
  ASAN_UNPOISON_MEMORY_REGION(w->sched_lo, (size_t)(w->sched_hi - w->sched_lo));
  ito__asan_start(keep ? &from->asan_fake : NULL, w->sched_lo, (size_t)(w->sched_hi - w->sched_lo));
#endif
  ito__ctx_jump(keep ? &from->sp : &dummy, tmp.sp, w);
#if ITO_ASAN
  ito__asan_finish(from->asan_fake);
#endif
}

void ito__switch_to_sched(worker *w, int action, void *arg) {
  enter_sched(w, w->cur, action, arg, 0);
  __builtin_unreachable();
}

/* The running fiber stops: action tells the scheduler what to do with it;
 * post(post_arg) runs on the scheduler after the fiber's context is saved
 * and its fork records are taken (typically: release a queue lock). */
void ito__suspend(int action, void *arg, void (*post)(void *), void *post_arg) {
  worker *w = cur_worker();
  fiber *f = w->cur;
  w->post_fn = post;
  w->post_arg = post_arg;
  enter_sched(w, f, action, arg, 1);
  ito__run_post(cur_worker());
}

static void run_fiber(worker *w, fiber *f) __attribute__((noreturn));
static void run_fiber(worker *w, fiber *f) {
  w->cur = f;
  if (!f->sp) { /* a continuation taken from a fork record, not started */
#if ITO_ASAN
    ito__asan_start(NULL, f->lo, fiber_size(f));
#endif
    ito__resume(&f->start, f->hi);
  }
  void *dummy;
#if ITO_ASAN
  ito__asan_start(NULL, f->lo, fiber_size(f));
#endif
  ito__ctx_jump(&dummy, f->sp, f);
  __builtin_unreachable();
}

static void thread_done_post(void *t) { ito__thread_done(t); }

static void sched_entry(void *arg) {
  worker *w = arg;
#if ITO_ASAN
  ito__asan_finish(NULL);
#endif
  fiber *from = w->sched_from;
  void *a = w->sched_arg;
  w->cur = NULL;
  switch (w->sched_action) {
    case ACT_BLOCK:
      ito__take_records_of(w, from);
      ito__run_post(w);
      break;
    case ACT_YIELD:
      ito__take_records_of(w, from);
      rq_push(w, from, from, 1);
      break;
    case ACT_JOIN_WAIT: {
      ito_tg_t *tg = a;
      ito__take_records_of(w, from);
      from->w.fiber = from;
      tg->waiter = &from->w;
      if (__atomic_sub_fetch(&tg->pending, 1, __ATOMIC_ACQ_REL) == 0) run_fiber(w, from);
      break;
    }
    case ACT_ABANDON: {
      ito_tg_t *tg = a;
      if (from != tg->home_fiber) ito__fiber_free(w, from);
      ito__tg_child_done(tg);
      break;
    }
    case ACT_EXIT:
      ito__thread_done(from->thread);
      break;
    case ACT_MIGRATE: {
      worker *to = a;
      ito__take_records_of(w, from);
      spin_lock(&to->mail_lock);
      from->next = to->mail;
      to->mail = from;
      spin_unlock(&to->mail_lock);
      atomic_fetch_add(&ito__rt.idle_seq, 1);
      ito__futex_wake((int *)&ito__rt.idle_seq, ito__rt.nworkers);
      break;
    }
    default:
      break;
  }
  ito__sched_loop(w);
}

/* ---- finding work ---------------------------------------------------------- */

static uint64_t next_rand(worker *w) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return w->rng = x;
}

/* Takes the oldest entry of v's deque and runs it; returns 0 if none. */
static int steal_deque(worker *w, worker *v) {
  uint64_t h = atomic_load_explicit(&v->head, memory_order_relaxed);
  if (h >= atomic_load_explicit(&v->tail, memory_order_acquire)) return 0;
  if (!spin_trylock(&v->steal_lock)) return 0;
  h = atomic_load_explicit(&v->head, memory_order_relaxed);
  atomic_store_explicit(&v->head, h + 1, memory_order_relaxed);
  ito__heavy_barrier();
  if (h + 1 > atomic_load_explicit(&v->tail, memory_order_acquire)) {
    atomic_store_explicit(&v->head, h, memory_order_relaxed);
    spin_unlock(&v->steal_lock);
    return 0;
  }
  uintptr_t *slot = &v->slots[h & v->mask];
  w->steals++;
  return ito__run_entry(w, *slot, v, slot); /* clears the slot, releases v->steal_lock */
}

static void idle_sleep(worker *w, int round) {
  (void)w;
  long ns = 50000L << (round < 5 ? round : 5); /* 50 us .. 1.6 ms */
  long tn = ito__timers_next_ns();
  if (tn >= 0 && tn < ns) ns = tn > 1000 ? tn : 1000;
  int seq = atomic_load_explicit(&ito__rt.idle_seq, memory_order_acquire);
  atomic_fetch_add_explicit(&ito__rt.sleepers, 1, memory_order_seq_cst);
  /* re-check the ready queues after announcing ourselves (pushers bump
   * idle_seq when they see sleepers) */
  int any = 0;
  for (int i = 0; i < ito__rt.nworkers; i++)
    if (LOAD_RLX(&ito__rt.workers[i]->rq_len)) any = 1;
  if (!any && !atomic_load(&ito__rt.stop)) {
    struct timespec rel = {0, ns};
    ito__futex_wait((int *)&ito__rt.idle_seq, seq, &rel);
  }
  atomic_fetch_sub_explicit(&ito__rt.sleepers, 1, memory_order_relaxed);
}

HIDDEN void ito__worker_stop(worker *w) __attribute__((noreturn));

void ito__sched_loop(worker *w) {
  int fails = 0;
  for (;;) {
    if (LOAD_RLX(&w->mail)) {
      spin_lock(&w->mail_lock);
      fiber *m = w->mail;
      if (m) w->mail = m->next;
      spin_unlock(&w->mail_lock);
      if (m) run_fiber(w, m);
    }
    uintptr_t e = pop_tail(w);
    if (e) {
      fails = 0;
      spin_lock(&w->steal_lock); /* run_entry releases the victim's lock */
      ito__run_entry(w, e, w, NULL);
      continue; /* the entry was a cancelled record */
    }
    fiber *f = rq_pop(w);
    if (f) run_fiber(w, f);
    if (ito__rt.timers) ito__timers_run();
    if (atomic_load_explicit(&ito__rt.stop, memory_order_acquire) && w->native_sp)
      ito__worker_stop(w);
    int n = ito__rt.nworkers;
    if (n > 1) {
      for (int k = 0; k < 4; k++) {
        worker *v = ito__rt.workers[next_rand(w) % (uint64_t)n];
        if (v == w) continue;
        if (steal_deque(w, v)) {
          fails = 0;
          break;
        }
        if (LOAD_RLX(&v->rq_len) && (f = rq_pop(v))) run_fiber(w, f);
      }
    }
    fails++;
    if (fails < 64) {
      cpu_relax();
    } else if (fails < 128) {
      sched_yield();
    } else {
      idle_sleep(w, (fails - 128) / 8);
    }
  }
}

/* Helpers for thread.c: after a thread ends, run its parent if it is the
 * youngest entry, else go to the scheduler. */
HIDDEN void ito__exit_fiber(worker *w, fiber *f) __attribute__((noreturn));
void ito__exit_fiber(worker *w, fiber *f) {
  fiber *p = pop_tail_fiber(w);
  if (p) {
    w->post_fn = thread_done_post;
    w->post_arg = f->thread;
    ito__switch(w, f, p, 1);
    __builtin_unreachable();
  }
  ito__switch_to_sched(w, ACT_EXIT, NULL);
}

/* For lazy.c: owner-side deque access. */
HIDDEN uintptr_t ito__pop_tail(worker *w) { return pop_tail(w); }
HIDDEN void ito__run_fiber(worker *w, fiber *f) { run_fiber(w, f); }
HIDDEN void ito__rq_push_front(worker *w, fiber *f) {
  spin_lock(&w->rq_lock);
  f->next = w->rq_head;
  w->rq_head = f;
  if (!w->rq_tail) w->rq_tail = f;
  STORE_RLX(&w->rq_len, w->rq_len + 1);
  spin_unlock(&w->rq_lock);
}
