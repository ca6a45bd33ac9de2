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
    ito__os.syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  else
    full_fence();
}

/* The owner's fenced window ran out: back to fence-free pops, unless a
 * thief holds the steal lock (it may be relying on the fence; try again at
 * the next pop). Without membarrier every pop fences, always. */
void ito__fence_expire(worker *w) {
  int n = 1; /* a thief holds the lock: one more fenced pop, then try again */
  if (!ito__rt_asym_fence) {
    n = 1 << 30;
  } else if (spin_trylock(&w->steal_lock)) {
    __atomic_store_n(&w->fence_pops, 0, __ATOMIC_RELAXED);
    spin_unlock(&w->steal_lock);
    return;
  }
  __atomic_store_n(&w->fence_pops, n, __ATOMIC_RELAXED);
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
  publish_check(w, 0);
}

/* Owner: takes the youngest entry, or 0. */
static uintptr_t pop_tail(worker *w) {
  uint64_t t = atomic_load_explicit(&w->tail, memory_order_relaxed);
  if (atomic_load_explicit(&w->head, memory_order_relaxed) >= t) return 0;
  t--;
  atomic_store_explicit(&w->tail, t, memory_order_relaxed);
  deque_owner_barrier(w);
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

/* A fiber with a home goes to the home's mail, which only the home runs. */
static void mail_to(worker *to, fiber *f) {
  spin_lock(&to->mail_lock);
  f->next = to->mail;
  STORE_RLX(&to->mail, f); /* read without the lock (run_local, scan_all) */
  spin_unlock(&to->mail_lock);
  ito__wake_worker(to);
}

void ito__ready_list(fiber *first, fiber *last, int n) {
  if (UNLIKELY(LOAD_RLX(&ito__rt.homes))) {
    /* take the fibers with a home out of the list */
    fiber *keep = NULL, *keep_last = NULL, *f = first;
    int kept = 0;
    while (f) {
      fiber *next = f == last ? NULL : f->next;
      if (f->home) {
        mail_to(f->home, f);
      } else {
        if (keep_last)
          keep_last->next = f;
        else
          keep = f;
        keep_last = f;
        kept++;
      }
      f = next;
    }
    if (!kept) return;
    first = keep;
    last = keep_last;
    n = kept;
  }
  worker *t = target_worker();
  rq_push(t, first, last, n);
  publish_check(t, 1);
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
void ito__block_os(waiter *wt, clockid_t clock, const struct timespec *abstime) {
  while (!__atomic_load_n(&wt->futex, __ATOMIC_ACQUIRE)) {
    struct timespec rel, *relp = NULL;
    if (abstime) {
      struct timespec now;
      clock_gettime(clock, &now);
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
  TSAN_TO(to);
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
  TSAN_TO_CTX(w->sched_tsan);
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
void *(*ito__eh_get)(void);

/* Not inlined: errno's address must be computed afresh on the OS thread
 * the caller now runs on (__errno_location is a const function, so a
 * compiler may reuse the address across a switch). */
__attribute__((noinline)) void ito__save_thread_state(struct ito__switch_save *s) {
  s->err = errno;
  s->eh_caught = NULL;
  s->eh_uncaught = 0;
  void *(*get)(void) = LOAD_RLX(&ito__eh_get);
  if (get) {
    /* __cxa_eh_globals: the caught exceptions (a list through the
     * exceptions themselves) and the count of uncaught ones */
    char *g = get();
    memcpy(&s->eh_caught, g, sizeof(void *));
    memcpy(&s->eh_uncaught, g + sizeof(void *), sizeof(unsigned));
    memset(g, 0, sizeof(void *) + sizeof(unsigned));
  }
}

__attribute__((noinline)) void ito__restore_thread_state(const struct ito__switch_save *s) {
  void *(*get)(void) = LOAD_RLX(&ito__eh_get);
  if (get) {
    char *g = get();
    memcpy(g, &s->eh_caught, sizeof(void *));
    memcpy(g + sizeof(void *), &s->eh_uncaught, sizeof(unsigned));
  }
  errno = s->err;
}

void ito__dropin_set_eh(void *(*get_globals)(void)) { STORE_RLX(&ito__eh_get, get_globals); }

void ito__suspend(int action, void *arg, void (*post)(void *), void *post_arg) {
  struct ito__switch_save save;
  ito__save_thread_state(&save);
  worker *w = cur_worker();
  fiber *f = w->cur;
  w->post_fn = post;
  w->post_arg = post_arg;
  enter_sched(w, f, action, arg, 1);
  ito__run_post(cur_worker());
  ito__restore_thread_state(&save);
}

static void run_fiber(worker *w, fiber *f) __attribute__((noreturn));
static void run_fiber(worker *w, fiber *f) {
  w->cur = f;
  san_enter(f);
  if (!f->sp) /* a continuation taken from a fork record, not started */
    ito__resume(&f->start, f->hi);
  void *dummy;
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
      if (UNLIKELY(from->home)) {
        mail_to(from->home, from);
        break;
      }
      rq_push(w, from, from, 1);
      publish_check(w, 1);
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
    case ACT_MIGRATE:
      ito__take_records_of(w, from);
      mail_to(a, from);
      break;
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
  if (__atomic_load_n(&v->fence_pops, __ATOMIC_ACQUIRE))
    full_fence(); /* the owner fences its pops now */
  else
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

/* ---- idle workers: spinning, sleeping, waking (docs/idle.md) ---------------- */

static inline uint32_t idle_S(uint64_t x) { return (uint32_t)(x >> 32); }
static inline uint32_t idle_Z(uint64_t x) { return (uint32_t)(x & (IDLE_SYM - 1)); }

/* Takes v off the sleeper list and makes it a spinner; sleep_lock held. */
/* Takes v off the sleeper list (sleep_lock held). Returns 1 if v is the
 * poll sleeper: its waker must then write the eventfd (kick), not wake the
 * futex. */
static int unsleep_locked(worker *v, int hint) {
  worker **pp = &ito__rt.sleep_top;
  while (*pp != v) pp = &(*pp)->sleep_next;
  *pp = v->sleep_next;
  v->on_list = 0;
  int poller = ito__rt.io_poller == v; /* v gives the role up itself (idle_sleep) */
  __atomic_fetch_add(&ito__rt_idle.v, IDLE_SPIN_ONE - 1, __ATOMIC_SEQ_CST);
  v->ws_hint = hint;
  __atomic_store_n(&v->wake_word, 1, __ATOMIC_RELEASE);
  return poller;
}

static void kick(worker *v, int poller) {
  if (poller)
    ito__io_kick();
  else
    ito__futex_wake(&v->wake_word, 1);
}

/* wake_one of docs/idle.md: if nobody spins and somebody sleeps, the sleeper
 * on top of the list becomes a spinner and tries hint's work first. */
void ito__wake_one(worker *hint) {
  spin_lock(&ito__rt.sleep_lock);
  uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED);
  worker *v = ito__rt.sleep_top;
  if (idle_S(x) != 0 || idle_Z(x) == 0 || !v) {
    spin_unlock(&ito__rt.sleep_lock);
    return;
  }
  /* a futex sleeper rather than the poll sleeper, which keeps watching I/O */
  if (v == ito__rt.io_poller && v->sleep_next) v = v->sleep_next;
  int poller = unsleep_locked(v, hint ? hint->id : -1);
  spin_unlock(&ito__rt.sleep_lock);
  /* v will most likely steal from us */
  if (hint) open_fence_window(hint);
  kick(v, poller);
}

/* v has mail (work only v may run): wake v if it sleeps. The lock orders the
 * mail before v's scan, whichever of the two takes sleep_lock first. */
void ito__wake_worker(worker *v) {
  spin_lock(&ito__rt.sleep_lock);
  int was = v->on_list, poller = 0;
  if (was) poller = unsleep_locked(v, -1);
  spin_unlock(&ito__rt.sleep_lock);
  if (was) kick(v, poller);
}

/* Shutdown: every sleeper is woken (it then sees the stop flag). */
void ito__wake_all(void) {
  spin_lock(&ito__rt.sleep_lock);
  worker *l = NULL;
  int poller = 0;
  while (ito__rt.sleep_top) {
    worker *v = ito__rt.sleep_top;
    poller |= unsleep_locked(v, -1);
    v->sleep_next = l;
    l = v;
  }
  spin_unlock(&ito__rt.sleep_lock);
  if (poller) ito__io_kick();
  for (; l; l = l->sleep_next) ito__futex_wake(&l->wake_word, 1);
}

/* A spinner found work. The last spinner to do so wakes a replacement while
 * anybody sleeps, so that work keeps spreading. */
void ito__stop_spinning(worker *w) {
  w->spinning = 0;
  uint64_t x = __atomic_fetch_sub(&ito__rt_idle.v, IDLE_SPIN_ONE, __ATOMIC_SEQ_CST);
  if (idle_S(x) == 1 && idle_Z(x) > 0) ito__wake_one(w);
}

/* May w become a spinner? Yes if fewer than MIN_SPINNERS spin, or if fewer
 * than half of the busy workers do; always with the active policy (nobody
 * sleeps there, but spinners are still counted, so that the workers they
 * will steal from open fenced pop windows and their steals need no
 * membarrier). Two, not one: when the only spinner takes work, the
 * replacement it wakes arrives a futex wake-up later (50-100 us here), and
 * work handed from one worker to the next waits that long (docs/idle.md). */
#define MIN_SPINNERS 2
static int start_spinning(worker *w) {
  uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED);
  for (;;) {
    long s = idle_S(x), busy = (long)ito__rt.nworkers - s - (long)idle_Z(x) - 1;
    if (!ito__rt.wait_active && s >= MIN_SPINNERS && 2 * s >= busy) return 0;
    if (__atomic_compare_exchange_n(&ito__rt_idle.v, &x, x + IDLE_SPIN_ONE, 1, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
      w->spinning = 1;
      return 1;
    }
  }
}

/* G3: is there anything w could run? Returns 1 + the id of a worker with
 * work, or -1 for something else (stop, mail, a timer due), or 0. */
static int scan_all(worker *w) {
  if (LOAD_RLX(&w->mail) || atomic_load_explicit(&ito__rt.stop, memory_order_relaxed)) return -1;
  int n = ito__rt.nworkers;
  for (int k = 1; k <= n; k++) {
    worker *v = ito__rt.workers[(w->id + k) % n];
    if (atomic_load_explicit(&v->head, memory_order_acquire) <
            atomic_load_explicit(&v->tail, memory_order_acquire) ||
        LOAD_RLX(&v->rq_len))
      return v->id + 1;
  }
  if (timers_armed() && ito__timers_next_ns() == 0) return -1;
  return 0;
}

/* Sleep (G1-G5 of docs/idle.md). Returns with w a spinner again: woken, or
 * because the scan found work (w->ws_hint then names where). */
static void idle_sleep(worker *w) {
  spin_lock(&ito__rt.sleep_lock);
  w->sleep_next = ito__rt.sleep_top;
  ito__rt.sleep_top = w;
  w->on_list = 1;
  __atomic_store_n(&w->wake_word, 0, __ATOMIC_RELAXED);
  __atomic_fetch_add(&ito__rt_idle.v, 1 - (w->spinning ? IDLE_SPIN_ONE : 0), __ATOMIC_SEQ_CST);
  w->spinning = 0;
  /* G1 for I/O: with threads parked on readiness and nobody in epoll_wait,
   * this sleeper waits there (docs/io.md, docs/idle.md). io_waiters is read
   * after Z's increment: a parker adds to io_waiters, then reads Z, so one
   * of the two sees the other (the model rejects the other order). */
  int poller = 0;
  if (__atomic_load_n(&ito__io_waiters, __ATOMIC_SEQ_CST) && !ito__rt.io_poller) {
    STORE_RLX(&ito__rt.io_poller, w);
    poller = 1;
  }
  spin_unlock(&ito__rt.sleep_lock);

  /* G2: the fork path publishes without a fence; this makes its stores
   * visible before the scan, or makes it see our Z (docs/idle.md). */
  ito__heavy_barrier();

  int found = scan_all(w);
  long long t_sleep = found ? 0 : clock_ns(CLOCK_MONOTONIC);
  while (!found && !__atomic_load_n(&w->wake_word, __ATOMIC_ACQUIRE)) {
    /* asleep until woken, or until the next timer is due */
    long ns = ito__timers_next_ns();
    if (ns >= 0 && ns < 1000) ns = 1000;
    if (poller) {
      /* the eventfd is sticky: a kick before epoll_wait still ends it */
      if (ito__io_sleep(ns) > 0) found = -1; /* threads made ready, on our queue */
      else found = scan_all(w);
    } else {
      struct timespec rel = {ns / 1000000000L, ns % 1000000000L};
      long r = ito__futex_wait(&w->wake_word, 0, ns >= 0 ? &rel : NULL);
      if (r != 0 && errno == ETIMEDOUT) found = scan_all(w); /* -1 if a timer is due */
    }
    if (atomic_load_explicit(&ito__rt.stop, memory_order_relaxed)) found = -1;
  }
  if (found || poller) { /* G4: leave the list unless a waker already took us off */
    spin_lock(&ito__rt.sleep_lock);
    if (found && w->on_list) unsleep_locked(w, found > 0 ? found - 1 : -1);
    /* the poll role is given up only here, by its holder, once it will not
     * call epoll_wait again: a waker that cleared it could let a second
     * worker take the role and both wait on one eventfd count, one of them
     * for ever (found by the model, verify/idle.pml BROKEN=6) */
    if (ito__rt.io_poller == w) STORE_RLX(&ito__rt.io_poller, NULL);
    spin_unlock(&ito__rt.sleep_lock);
  }
  w->spinning = 1; /* counted in S by whoever took us off the list */
  if (t_sleep) { /* adapt the spin to how long this sleep was (docs/idle.md) */
    long long slept = clock_ns(CLOCK_MONOTONIC) - t_sleep;
    if (slept < ito__rt.spin_max_ns)
      w->spin_ns = w->spin_ns * 2 < ito__rt.spin_max_ns ? w->spin_ns * 2 : ito__rt.spin_max_ns;
    else
      w->spin_ns = w->spin_ns / 2 > ito__rt.spin_ns ? w->spin_ns / 2 : ito__rt.spin_ns;
  }
}

HIDDEN void ito__worker_stop(worker *w) __attribute__((noreturn));

/* w's own work, then its mail: runs it (no return) if there is any. */
static void run_local(worker *w) {
  if (LOAD_RLX(&w->mail)) {
    spin_lock(&w->mail_lock);
    fiber *m = w->mail;
    if (m) STORE_RLX(&w->mail, m->next);
    spin_unlock(&w->mail_lock);
    if (m) {
      found_work(w);
      run_fiber(w, m);
    }
  }
}

/* Tries v's deque head, then v's ready queue; runs what it takes. */
static void try_victim(worker *w, worker *v) {
  if (steal_deque(w, v)) return; /* a cancelled record: nothing ran */
  fiber *f;
  if (LOAD_RLX(&v->rq_len) && (f = rq_pop(v))) {
    found_work(w);
    run_fiber(w, f);
  }
}

void ito__sched_loop(worker *w) {
  long long spin_t0 = 0;
  for (unsigned round = 0;; round++) {
    /* readiness is seen within 61 scheduling passes even under load */
    if (UNLIKELY(LOAD_RLX(&ito__io_waiters)) && ++w->io_pass >= 61) {
      w->io_pass = 0;
      ito__io_poll();
    }
    run_local(w);
    uintptr_t e = pop_tail(w);
    if (e) {
      found_work(w);
      spin_lock(&w->steal_lock); /* run_entry releases the victim's lock */
      ito__run_entry(w, e, w, NULL);
      continue; /* the entry was a cancelled record */
    }
    /* timers before the ready queue: a thread that yields in a loop goes
     * back to the ready queue and would otherwise starve a sleeper on a
     * worker with nothing else to do */
    if (timers_armed()) ito__timers_run();
    fiber *f = rq_pop(w);
    if (f) {
      found_work(w);
      run_fiber(w, f);
    }
    if (UNLIKELY(LOAD_RLX(&ito__io_waiters)) && ito__io_poll()) continue; /* made threads ready */
    if (atomic_load_explicit(&ito__rt.stop, memory_order_acquire) && w->native_sp)
      ito__worker_stop(w);
    int n = ito__rt.nworkers;
    if (!w->spinning) {
      if (!start_spinning(w)) idle_sleep(w); /* (start_spinning succeeds when active) */
      spin_t0 = clock_ns(CLOCK_MONOTONIC);
      round = 0;
    }
    if (w->ws_hint >= 0) { /* woken for, or found by the scan at, this worker */
      worker *v = ito__rt.workers[w->ws_hint];
      w->ws_hint = -1;
      if (v != w) try_victim(w, v);
    }
    for (int k = 0; n > 1 && k < 4; k++) {
      worker *v = ito__rt.workers[next_rand(w) % (uint64_t)n];
      if (v != w) try_victim(w, v);
    }
    cpu_relax();
    if ((round & 127) == 127) ito__os.sched_yield(); /* give way to oversubscribed workers */
    if (!ito__rt.wait_active && (round & 15) == 15 &&
        clock_ns(CLOCK_MONOTONIC) - spin_t0 >= w->spin_ns) {
      idle_sleep(w);
      spin_t0 = clock_ns(CLOCK_MONOTONIC);
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
