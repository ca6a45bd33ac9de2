/* The scheduler: ready queues and mail, placement, the scheduler context
 * and its actions, running what a worker takes, stealing, and the loop.
 * Invariants at the top of sched.h; design in docs/scheduler.md. */
#define _GNU_SOURCE
#include "sched.h"
#include "forkpart.h"

#include "hooks.h"
#include "lazy.h"
#include "monitor.h"
#include "nodeq.h"
#include "poll.h"
#include "runtime.h"
#include "thread.h"
#include "timer.h"
#include "posix_hooks.h"

worker **ito__workers;
int ito__nworkers;
int ito__stopping;
static unsigned rr; /* round robin for work made ready outside the workers */
/* While threads wait on poll sources, every worker polls once in this many
 * scheduling passes, so readiness is seen within them even under load. */
#define POLL_EVERY 61
static int homes; /* some fiber has had a home: ready lists are split */

/* ---- ready queues and mail ------------------------------------------------------------ */

static void rq_push(worker *w, fiber *first, fiber *last, int n) {
  rqueue_push(&w->rq, first, last, n);
}
static fiber *rq_pop(worker *w) { return rqueue_pop(&w->rq); }

static void rq_push_front(worker *w, fiber *f) {
  spin_lock(&w->rq.lock, LR_READY);
  f->next = w->rq.head;
  w->rq.head = f;
  if (!w->rq.tail) w->rq.tail = f;
  STORE_RLX(&w->rq.len, w->rq.len + 1);
  spin_unlock(&w->rq.lock);
}

/* Preempted threads (preempt.h), one queue for all workers, taken after a
 * worker's own ready queue: threads that compute share every worker in
 * turn, not only the one they were preempted on (as Go's global run queue
 * does for preempted goroutines). */
struct ready_queue ito__preempted __attribute__((aligned(CACHELINE)));

/* A fiber with a home goes to the home's mail, which only the home runs
 * (invariant 2). */
static void mail_to(worker *to, fiber *f) {
  spin_lock(&to->mail_lock, LR_MAIL);
  f->next = to->mail;
  STORE_RLX(&to->mail, f); /* read without the lock (run_mail, scan) */
  spin_unlock(&to->mail_lock);
  ito__idle_wake(&to->idle);
}

/* A fiber that yields to mail goes last, behind what is there; when it
 * yields to its own worker's mail, that worker looks at its deque and
 * ready queue first once (a yield lets other work run first). */
static void mail_last(worker *to, fiber *f, worker *here) {
  f->next = NULL;
  spin_lock(&to->mail_lock, LR_MAIL);
  fiber **p = &to->mail;
  while (*p) p = &(*p)->next;
  if (p == &to->mail)
    STORE_RLX(&to->mail, f);
  else
    *p = f;
  spin_unlock(&to->mail_lock);
  if (to == here)
    here->yielded = 1;
  else
    ito__idle_wake(&to->idle);
}

/* ---- placement ------------------------------------------------------------------------- */

worker *ito__place(const fiber *f, worker *here) {
  if (f && f->home) return f->home;
  if (here) return here;
  unsigned i = __atomic_fetch_add(&rr, 1, __ATOMIC_RELAXED);
  return ito__workers[i % (unsigned)ito__nworkers];
}

worker *ito__worker_running(const ithread *t) {
  const fiber *f = fiber_of_thread((ithread *)t);
  int n = LOAD_ACQ(&ito__nslots);
  for (int i = 0; i < n; i++) {
    worker *w = ito__workers[i];
    if (w && LOAD_RLX(&w->cur) == f && w->os_tid) return w;
  }
  return NULL;
}

void ito__set_homes(void) { __atomic_store_n(&homes, 1, __ATOMIC_RELAXED); }

/* One batch per run of fibers that go to the same queue. */
static void ready_to(worker *t, fiber *first, fiber *last, int n, bool mail) {
  if (mail) {
    for (fiber *f = first, *next; f; f = next) {
      next = f == last ? NULL : f->next;
      mail_to(t, f);
    }
    return;
  }
  rq_push(t, first, last, n);
  publish(t, true);
}

/* After fork, in the child: the threads of the parent other than the one
 * that forked do not exist (atfork.h); a wake of one (from a queue in the
 * program's memory) is dropped. Returns the list left. */
static int drop_ghosts(fiber **first, fiber **last) {
  fiber *h = NULL, *t = NULL;
  int k = 0;
  (*last)->next = NULL;
  for (fiber *f = *first, *next; f; f = next) {
    next = f->next;
    if (f->thread && (LOAD_RLX(&f->thread->flags) & TH_GHOST)) continue;
    fiber_append(&h, &t, f);
    k++;
  }
  *first = h;
  *last = t;
  return k;
}

/* Placement by data (nodeq.h): the fibers of the list that belong on a
 * node go to its queue; returns how many are left in the list. */
static int ready_by_node(fiber **first, fiber **last) {
  fiber *h = NULL, *t = NULL;
  int k = 0;
  (*last)->next = NULL;
  for (fiber *f = *first, *next; f; f = next) {
    next = f->next;
    if (fiber_node(f) >= 0 && !f->home) {
      ito__nodeq_push(f);
      continue;
    }
    fiber_append(&h, &t, f);
    k++;
  }
  *first = h;
  *last = t;
  return k;
}

void ito__ready_list(fiber *first, fiber *last, int n) {
  if (UNLIKELY(LOAD_RLX(&ito__forked)) && !(n = drop_ghosts(&first, &last))) return;
  worker *here = cur_worker();
  if (UNLIKELY(LOAD_RLX(&ito__hooks_on)))
    for (fiber *f = first;; f = f->next) {
      ito__hook_emit(ITO_EV_READY, here ? here->id : -1, f, 0);
      if (f == last) break;
    }
  if (UNLIKELY(LOAD_RLX(&ito__nodeq_on)) && !(n = ready_by_node(&first, &last))) return;
  if (LIKELY(!LOAD_RLX(&homes))) { /* nothing has a home: one queue for all */
    ready_to(ito__place(first, here), first, last, n, false);
    return;
  }
  last->next = NULL;
  fiber *run = NULL, *run_last = NULL;
  worker *run_to = NULL;
  int run_n = 0;
  bool run_mail = false;
  for (fiber *f = first, *next; f; f = next) {
    next = f->next;
    worker *t = ito__place(f, here);
    bool mail = f->home != NULL;
    if (run && (t != run_to || mail != run_mail)) {
      ready_to(run_to, run, run_last, run_n, run_mail);
      run = NULL;
    }
    if (!run) {
      run = f;
      run_to = t;
      run_mail = mail;
      run_n = 0;
    } else {
      run_last->next = f;
    }
    run_last = f;
    run_n++;
  }
  run_last->next = NULL;
  ready_to(run_to, run, run_last, run_n, run_mail);
}

void ito__ready(fiber *f) { ito__ready_list(f, f, 1); }

void ito__push_fiber(worker *w, fiber *f) {
  if (UNLIKELY(!dq_push(&w->dq, (uintptr_t)f | ENT_FIBER))) {
    ito__ready(f); /* deque full: the ready queue keeps it runnable */
    return;
  }
  publish(w, false);
}

void ito__fork_wake(worker *w) {
  if (ito__idle_wake_one(w->id) == IDLE_WOKE) dq_expect_thief(&w->dq);
}

/* A spinning worker found work; if it was the last spinner and woke a
 * replacement, that one will try w first. */
static inline void found_work(worker *w) {
  if (UNLIKELY(w->idle.spinning) && ito__idle_stop_spinning(&w->idle) == IDLE_WOKE)
    dq_expect_thief(&w->dq);
}

/* ---- records of a fiber that stops (invariant 3) ----------------------------------------- */

/* Fiber f stops running on w: the continuations it published on w become
 * fibers of their own, queued first on w (youngest first: the one
 * work-first order runs next). */
static void take_records_of(worker *w, fiber *f) {
  fiber *oldest = NULL; /* popped youngest first, so prepending keeps the oldest first */
  for (;;) {
    /* a peek, racing with thieves: 0 means a thief just took and cleared it */
    uintptr_t top = dq_peek(&w->dq);
    if (!top || (top & ENT_TAGS) || ((const struct ito_rec *)top)->fiber != f) break;
    uintptr_t e = ito__deque_pop(&w->dq);
    if (!e) break; /* a thief took it */
    fiber *nf = fiber_get(&w->fibers);
    if (!nf)
      ito__fatal(
          "out of memory for a stack: a thread that parks leaves continuations that "
          "need stacks of their own (lower ITO_STACK_SIZE or the thread count)");
    ito__claim_record((const struct ito_rec *)e, nf);
    HOOK_REC(ITO_EV_TAKE, w->id, nf, w->id, (const void *)e, dq_tail(&w->dq));
    nf->next = oldest;
    oldest = nf;
  }
  if (!oldest) return;
  /* each to the front, oldest first: the youngest ends up first */
  for (fiber *x = oldest, *next; x; x = next) {
    next = x->next;
    rq_push_front(ito__place(x, w), x);
  }
  publish(w, true);
}

/* ---- running what a worker took ----------------------------------------------------------- */

/* Runs entry e, taken from victim's deque (whose lock the caller holds, at
 * *slot) or popped from w's own (victim NULL). Returns only if a thief
 * could not get a stack for a continuation: the entry is then back with
 * its owner. */
static void run_entry(worker *w, uintptr_t e, worker *victim, uintptr_t *slot, uint64_t idx) {
  int owner = victim ? victim->id : w->id;
  if (e & ENT_FIBER) {
    fiber *f = (fiber *)(e & ~(uintptr_t)ENT_TAGS);
    HOOK_REC(ITO_EV_TAKE, w->id, f, owner, (const void *)e, idx);
    if (victim) dq_steal_done(&victim->dq, slot, e);
    found_work(w);
    ito__run_fiber(w, f);
  }
  if (e & ENT_CREATE) { /* the creator of a running thread: resume it on its own stack */
    const struct ito_rec *rec = (const struct ito_rec *)(e & ~(uintptr_t)ENT_TAGS);
    struct ito_rec copy = *rec;
    /* copied: the child's fiber may be freed from now on (fiber.h, invariant 4) */
    fiber *child = (fiber *)((char *)rec - offsetof(fiber, start));
    HOOK_REC(ITO_EV_TAKE, w->id, child, owner, (const void *)e, idx);
    __atomic_store_n(&child->create_worker, NULL, __ATOMIC_RELEASE);
    if (victim) dq_steal_done(&victim->dq, slot, e);
    found_work(w);
    fiber *parent = copy.fiber;
    HOOK(ITO_EV_RUN, w->id, parent, 1);
    w->cur = parent;
    enter_fiber(parent);
    ito__vg_resume_at(rec_sp(&copy));
    ito__resume(&copy, rec_sp(&copy));
  }
  /* a fork record: its continuation needs a stack of its own */
  fiber *nf = fiber_get(&w->fibers);
  if (UNLIKELY(!nf)) {
    if (victim) { /* the owner keeps it and runs it itself */
      dq_steal_undo(&victim->dq);
      return;
    }
    ito__fatal("out of memory for a stack to run a continuation on");
  }
  ito__claim_record((const struct ito_rec *)e, nf);
  HOOK_REC(ITO_EV_TAKE, w->id, nf, owner, (const void *)e, idx);
  if (victim) dq_steal_done(&victim->dq, slot, e);
  found_work(w);
  worker *t = ito__place(nf, w);
  if (t != w) {
    ito__ready(nf);
    return;
  }
  ito__run_fiber(w, nf);
}

/* Takes the oldest entry of v's deque and runs it. */
static void steal_from(worker *w, worker *v) {
  uintptr_t *slot;
  uintptr_t e = ito__deque_steal(&v->dq, &slot);
  if (!e) {
    HOOK(ITO_EV_STEAL_FAIL, w->id, NULL, v->id);
    return;
  }
  w->steals++;
  HOOK(ITO_EV_STEAL, w->id, (const void *)e, v->id);
  run_entry(w, e, v, slot, (uint64_t)(slot - v->dq.slots));
}

/* Tries v's deque head, then v's ready queue; runs what it takes. */
static void try_victim(worker *w, worker *v) {
  steal_from(w, v);
  fiber *f;
  if (LOAD_RLX(&v->rq.len) && (f = rq_pop(v))) {
    found_work(w);
    HOOK(ITO_EV_RESUME, w->id, f, v->id);
    ito__run_fiber(w, f);
  }
}

/* ---- the scheduler context ------------------------------------------------------------------- */

static void thread_done_post(void *t) { ito__thread_done(t); }

static void sched_entry(void *arg) {
  worker *w = arg;
  if (ASAN_ON) ito__asan_finish(NULL);
  fiber *from = w->sched_from;
  void *a = w->sched_arg;
  w->cur = NULL;
  if (from) HOOK(ITO_EV_LEAVE, w->id, from, w->sched_action);
  switch (w->sched_action) {
    case ACT_BLOCK:
      take_records_of(w, from);
      HOOK(ITO_EV_PARK, w->id, from, 0);
      ito__run_post(w);
      break;
    case ACT_YIELD:
    case ACT_PREEMPT: {
      take_records_of(w, from);
      /* threads on I/O: the next pass polls first */
      if (w->sched_action == ACT_PREEMPT) w->poll_pass = POLL_EVERY - 1;
      worker *t = ito__place(from, w);
      if (from->home)
        mail_last(t, from, w);
      else if (w->sched_action != ACT_PREEMPT)
        ready_to(t, from, from, 1, false);
      else if (!ito__tls_mode)
        mail_last(w, from, w); /* its code may hold an address in this worker's TLS */
      else {
        rqueue_push(&ito__preempted, from, from, 1);
        publish(w, true);
      }
      break;
    }
    case ACT_JOIN_WAIT: {
      ito_tg_t *tg = a;
      take_records_of(w, from);
      HOOK(ITO_EV_PARK, w->id, from, 1);
      if (ito__tg_park(tg, from)) ito__run_fiber(w, from);
      break;
    }
    case ACT_ABANDON: {
      ito_tg_t *tg = a;
      if (from != tg->home_fiber) ito__fiber_free(&w->fibers, from);
      ito__tg_child_done(tg);
      break;
    }
    case ACT_EXIT:
      ito__thread_done(from->thread);
      break;
    case ACT_MIGRATE:
      take_records_of(w, from);
      mail_to(a, from);
      break;
    default:
      ITO_ASSERT(!"a known scheduler action");
      break;
  }
  ito__sched_loop(w);
}

static void *sched_tsan(worker *w) {
#if ITO_TSAN
  return w->sched_tsan;
#else
  (void)w;
  return NULL;
#endif
}

static void enter_sched(worker *w, fiber *from, int action, void *arg, bool keep) {
  posix_enter(w, NULL); /* the scheduler runs on the worker's own block (tls.h, invariant 4) */
  w->sched_action = action;
  w->sched_arg = arg;
  w->sched_from = from;
  ito__enter_fresh(keep ? &from->sp : NULL, keep ? &from->asan_fake : NULL, w->sched_lo,
                   w->sched_hi, sched_entry, w, sched_tsan(w));
}

void ito__switch_to_sched(worker *w, int action, void *arg) {
  enter_sched(w, w->cur, action, arg, false);
  __builtin_unreachable();
}

void ito__suspend(int action, void *arg, void (*post)(void *), void *post_arg) {
  struct ito__switch_save save;
  worker *w = cur_worker();
  fiber *f = w->cur;
  /* the caller may hold a wait queue's lock or be published as a waiter:
   * the C++ runtime's code that the save calls must not yield there */
  ito__callout_begin(f);
  ito__save_thread_state(&save);
  ito__callout_end(f);
  ITO_ASSERT(f && !w->post_fn);
  w->post_fn = post;
  w->post_arg = post_arg;
  if (action == ACT_BLOCK) f->parked_on = post_arg ? post_arg : (void *)f;
  ito__lock_handoff(post != NULL);
  STORE_RLX(&w->switches, w->switches + 1);
  enter_sched(w, f, action, arg, true);
  f->parked_on = NULL;
  ito__run_post(cur_worker());
  ito__restore_thread_state(&save);
  /* signals sent meanwhile (a wait that registered for them delivers
   * them itself, once it is over) */
  if (UNLIKELY(ito__sig_on)) {
    ithread *t = f->thread;
    if (t && !t->intr && !t->sig_self && (LOAD_ACQ(&t->sigpend) & ~t->sigmask)) ito__sig_deliver();
  }
}

void ito__exit_fiber(worker *w, fiber *f) {
  ito__lock_handoff(0);
  STORE_RLX(&w->switches, w->switches + 1);
  if (dq_peek(&w->dq) & ENT_FIBER) { /* the parent, suspended in a create */
    uintptr_t e = ito__deque_pop(&w->dq);
    if (e) {
      ITO_ASSERT(e & ENT_FIBER);
      w->post_fn = thread_done_post;
      w->post_arg = f->thread;
      HOOK(ITO_EV_RUN, w->id, (fiber *)(e & ~(uintptr_t)ENT_TAGS), 0);
      ito__switch(w, f, (fiber *)(e & ~(uintptr_t)ENT_TAGS), 1);
      __builtin_unreachable();
    }
  }
  ito__switch_to_sched(w, ACT_EXIT, NULL);
}

/* ---- finding work ---------------------------------------------------------------------------- */

static uint64_t next_rand(worker *w) {
  uint64_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return w->rng = x;
}

/* G3 of docs/idle.md for worker self: 1 + the id of a worker with work,
 * -1 for something else (stop, mail, a timer due), or 0. */
static int scan(int self) {
  worker *w = ito__workers[self];
  if (LOAD_RLX(&w->mail) || LOAD_RLX(&ito__stopping)) return -1;
  int n = LOAD_ACQ(&ito__nslots);
  for (int k = 1; k <= n; k++) {
    worker *v = ito__workers[(self + k) % n];
    if (dq_nonempty(&v->dq) || LOAD_RLX(&v->rq.len)) return v->id + 1;
  }
  if (LOAD_RLX(&ito__preempted.len)) return -1;
  if (UNLIKELY(LOAD_RLX(&ito__nodeq_on)) && ito__nodeq_any()) return -1;
  if (timers_armed() && ito__timers_next_ns() == 0) return -1;
  return 0;
}

const struct idle_ops ito__sched_idle_ops = {
    .scan = scan,
    .next_timer_ns = ito__timers_next_ns,
    .wait_events = ito__poll_wait,
    .kick = ito__poll_kick,
};

/* w's mail: runs it (no return) if there is any. */
static void run_mail(worker *w) {
  if (!LOAD_RLX(&w->mail)) return;
  spin_lock(&w->mail_lock, LR_MAIL);
  fiber *m = w->mail;
  if (m) STORE_RLX(&w->mail, m->next);
  spin_unlock(&w->mail_lock);
  if (m) {
    found_work(w);
    HOOK(ITO_EV_RESUME, w->id, m, w->id);
    ito__run_fiber(w, m);
  }
}

/* An extra worker with nothing to do retires instead of sleeping when the
 * monitor no longer needs it (monitor.h, invariant 3). */
static void retire(worker *w) {
  if (ito__idle_leave(&w->idle)) { /* work after all */
    ito__monitor_stay(w);
    return;
  }
  ito__monitor_retired(w);
  ito__worker_stop(w);
}

static void idle_sleep(worker *w) {
  if (UNLIKELY(w->extra) && ito__monitor_may_retire(w)) {
    retire(w);
    return;
  }
  HOOK(ITO_EV_SLEEP, w->id, NULL, 0);
  if (UNLIKELY(ito__sig_on)) {
    /* a sleeping worker takes no signal: the monitor does (a forked child
     * starts its own here if no thread creation did) */
    if (UNLIKELY(LOAD_RLX(&ito__forked))) ito__monitor_restart();
    ito__sig_idle(w);
  }
  ito__idle_sleep(&w->idle);
  HOOK(ITO_EV_WAKE, w->id, NULL, w->idle.ws_hint);
}

/* With more than one node in use (nodeq.h): victims of w's own node
 * first, then of the nearest other nodes (docs/numa.md, "Stealing"). */
static void steal_by_node(worker *w) {
  for (int k = 0; k < 4; k++) {
    worker *v = ito__nodeq_victim(w, next_rand(w), true);
    if (!v) break;
    if (v != w) try_victim(w, v);
  }
  for (int k = 0; k < 2; k++) {
    worker *v = ito__nodeq_victim(w, next_rand(w), false);
    if (!v) break;
    try_victim(w, v);
  }
}

void ito__sched_loop(worker *w) {
  long long spin_t0 = 0;
  long long idle_t0 = 0; /* since when this pass looks for work, once a node queue needed it */
  for (unsigned round = 0;; round++) {
    if (UNLIKELY(idle_waiters_any()) && ++w->poll_pass >= POLL_EVERY) {
      w->poll_pass = 0;
      ito__poll_run();
    }
    if (LIKELY(!w->yielded))
      run_mail(w);
    else
      w->yielded = 0;
    uintptr_t e = ito__deque_pop(&w->dq);
    if (e) {
      found_work(w);
      run_entry(w, e, NULL, NULL, dq_tail(&w->dq));
    }
    /* timers before the ready queue: a thread that yields in a loop goes
     * back to the ready queue and would otherwise starve a sleeper on a
     * worker with nothing else to do */
    if (timers_armed()) ito__timers_run();
    /* preempted threads take turns with the ready queue's: every fourth
     * pick at least, so that threads that yield in a loop (and go back to
     * this queue) do not keep a preempted one waiting */
    fiber *f = NULL;
    if (UNLIKELY(LOAD_RLX(&ito__preempted.len)) && (++w->picks & 3) == 0)
      f = rqueue_pop(&ito__preempted);
    if (!f) f = rq_pop(w);
    if (!f && UNLIKELY(LOAD_RLX(&ito__preempted.len))) f = rqueue_pop(&ito__preempted);
    if (!f && UNLIKELY(LOAD_RLX(&ito__nodeq_on)) && (f = ito__nodeq_take(w, &idle_t0)))
      ito__nodeq_count_run(w, f);
    if (f) {
      found_work(w);
      HOOK(ITO_EV_RESUME, w->id, f, w->id);
      ito__run_fiber(w, f);
    }
    if (UNLIKELY(idle_waiters_any()) && ito__poll_run()) continue; /* made threads ready */
    if (__atomic_load_n(&ito__stopping, __ATOMIC_ACQUIRE) && w->native_sp) ito__worker_stop(w);
    int n = LOAD_ACQ(&ito__nslots);
    if (!w->idle.spinning) {
      HOOK(ITO_EV_IDLE, w->id, NULL, 0);
      if (!ito__idle_start_spinning(&w->idle)) idle_sleep(w); /* (always spins when active) */
      spin_t0 = clock_ns(CLOCK_MONOTONIC);
      round = 0;
    }
    if (w->idle.ws_hint >= 0) { /* woken for, or found by the scan at, this worker */
      worker *v = ito__workers[w->idle.ws_hint];
      w->idle.ws_hint = -1;
      if (v != w) try_victim(w, v);
    }
    if (UNLIKELY(LOAD_RLX(&ito__nodeq_on))) {
      steal_by_node(w);
    } else {
      for (int k = 0; n > 1 && k < 4; k++) {
        worker *v = ito__workers[next_rand(w) % (uint64_t)n];
        if (v != w) try_victim(w, v);
      }
    }
    cpu_relax();
    if ((round & 127) == 127) ito__os.sched_yield(); /* give way to oversubscribed workers */
    if ((round & 15) == 15 && ito__idle_spun_out(&w->idle, spin_t0)) {
      idle_sleep(w);
      spin_t0 = clock_ns(CLOCK_MONOTONIC);
    }
  }
}
