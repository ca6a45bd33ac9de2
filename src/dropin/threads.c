/* Threads for the pthread library: creation with attributes, handle
 * checks, the calling thread's stack, counts and pinning
 * (src/core/thread.h). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/fiber.h"
#include "../core/handle.h"
#include "../core/runtime.h"
#include "../core/sched.h"
#include "../core/switch.h"
#include "../core/thread.h"

#include <errno.h>

static unsigned long created;

/* The calling thread's policy and priority: a lightweight thread's as the
 * program set them (the root's start as its OS thread's), an outside
 * thread's the kernel's. */
static void creator_sched(worker *w, int out[2]) {
  if (w && w->cur && w->cur->thread) {
    out[0] = LOAD_RLX(&w->cur->thread->policy);
    out[1] = LOAD_RLX(&w->cur->thread->prio);
    return;
  }
  ito__os_sched(out);
}

int ito__dropin_create(ito_thread_t *out, const struct ito_dropin_attr *a, void *(*fn)(void *),
                       void *arg) {
  if (!fn) return EINVAL;
  int rc = ito__ensure();
  if (rc) return rc;
  struct ito__switch_save save; /* the child starts with no caught exceptions */
  ito__save_thread_state(&save);
  worker *w = cur_worker();
  int pinned = w && w->cur && (!parkable(w) || w->cur->home); /* must not move: queue the child */
  /* PTHREAD_INHERIT_SCHED (glibc's default): the creator's policy and
   * priority; a fresh descriptor holds SCHED_OTHER and 0 */
  int sched[2] = {0, 0};
  if (!a || !a->explicit_sched) creator_sched(w, sched);
  if (!pinned && !sched[0] && !sched[1] &&
      (!a ||
       (!a->stackaddr && !a->detached && !a->explicit_sched && !a->has_sigmask && !a->stacksize))) {
    rc = ito_create(fn, arg, out);
  } else {
    fiber *f;
    if (a && a->stackaddr)
      f = ito__user_fiber(a->stackaddr, a->stacksize);
    else if (a && a->stacksize) /* a size the program asked for: that size, its own */
      f = ito__own_fiber(a->stacksize);
    else
      f = ito__fiber_alloc(w ? &w->fibers : NULL);
    if (!f) {
      rc = (a && a->stackaddr) ? EINVAL : EAGAIN;
    } else {
      ithread *t;
      struct thread_opts o = {.detached = a && a->detached, .queue = pinned};
      if (a && a->explicit_sched) {
        o.explicit_sched = 1;
        o.policy = a->policy;
        o.prio = a->prio;
      } else {
        o.policy = sched[0];
        o.prio = sched[1];
      }
      if (a && a->has_sigmask) {
        o.has_sigmask = 1;
        o.sigmask = a->sigmask;
      }
      rc = ito__thread_start(f, fn, arg, &o, &t, out);
    }
  }
  if (!rc) __atomic_fetch_add(&created, 1, __ATOMIC_RELAXED);
  ito__restore_thread_state(&save);
  return rc;
}

int ito__dropin_check(ito_thread_t h) {
  ithread *t = ito__thread_of(h);
  if (!t) return ESRCH;
  int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
  if (!ito__still_current(t, h) || __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) == TS_CLAIMED)
    return ESRCH;
  return (fl & TH_ROOT) ? EINVAL : 0;
}

int ito__dropin_check_join(ito_thread_t h) {
  int rc = ito__dropin_check(h);
  return rc == ESRCH && ito__handle_ended_detached(h) ? EINVAL : rc;
}

int ito__dropin_tryjoin(ito_thread_t h, void **result) {
  ithread *t = ito__thread_of(h);
  if (!t) return ESRCH;
  int s = __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE);
  int fl = __atomic_load_n(&t->flags, __ATOMIC_ACQUIRE);
  if (s == TS_CLAIMED || (fl & (TH_ROOT | TH_DETACHED)) || !ito__still_current(t, h)) return EINVAL;
  if (__atomic_load_n(&t->joiner, __ATOMIC_RELAXED)) return EINVAL;
  if (s != TS_DONE) return EBUSY;
  return ito_join(h, result);
}

int ito__dropin_join(ito_thread_t h, void **result) { return ito__join(h, result, true); }

int ito__dropin_is_root(void) { return ito__is_root(); }

/* The stack a thread started on, as pthread_getattr_np reports it: the
 * caller's memory as it gave it; main's own stack; else from above the
 * guard page to the top of the mapping, the fiber's header included, as
 * glibc counts its descriptor in (a 16 KiB stack asked for reads back as
 * 16 KiB). Pool and own stacks are never unmapped, so a stale handle
 * reads memory that is still a header. */
static void fiber_stack(fiber *f, void **lo, size_t *size) {
  if (f->kind == FIBER_USER) {
    *lo = f->map;
    *size = f->maplen;
  } else if (f->kind == FIBER_NATIVE) {
    *lo = f->lo;
    *size = (size_t)(f->hi - f->lo);
  } else {
    *lo = f->lo;
    *size = (size_t)(f->map + f->maplen - f->lo);
  }
}

/* The fields are the program's to read back; a stale handle answers
 * ESRCH (checked again after the reads, as ito__dropin_check does). */
int ito__dropin_tattr_get(ito_thread_t h, struct ito_dropin_tattr *out) {
  ithread *t = h ? ito__thread_of(h) : ito__root_thread();
  if (!t) return ESRCH;
  for (int i = 0; i < 16; i++) out->name[i] = LOAD_RLX(&t->name[i]);
  out->name[15] = 0;
  out->policy = LOAD_RLX(&t->policy);
  out->prio = LOAD_RLX(&t->prio);
  out->explicit_sched = LOAD_RLX(&t->explicit_sched);
  out->detached = (LOAD_RLX(&t->flags) & TH_DETACHED) != 0;
  fiber_stack(fiber_of_thread(t), &out->stack_lo, &out->stack_size);
  if (!h) return 0;
  return ito__still_current(t, h) && LOAD_ACQ(&t->sync) != TS_CLAIMED ? 0 : ESRCH;
}

int ito__dropin_tattr_set(ito_thread_t h, const char *name, const int *policy_prio) {
  ithread *t = h ? ito__thread_of(h) : ito__root_thread();
  if (!t || (h && !ito__still_current(t, h))) return ESRCH;
  if (name) {
    size_t i = 0;
    for (; i < 15 && name[i]; i++) STORE_RLX(&t->name[i], name[i]);
    STORE_RLX(&t->name[i], 0);
  }
  if (policy_prio) {
    STORE_RLX(&t->policy, policy_prio[0]);
    STORE_RLX(&t->prio, policy_prio[1]);
  }
  return 0;
}

int ito__dropin_stack(void **lo, size_t *size) {
  worker *w = cur_worker();
  if (!w || !w->cur || !w->cur->thread) return ESRCH;
  fiber_stack(fiber_of_thread(w->cur->thread), lo, size); /* the fiber the thread started on */
  return 0;
}

long ito__dropin_live(void) { return ito__live_threads(); }
unsigned long ito__dropin_created(void) { return __atomic_load_n(&created, __ATOMIC_RELAXED); }

void ito__dropin_pin(void) { ito__thread_pin(); }
void ito__dropin_unpin(void) { ito__thread_unpin_move(); }
int ito__dropin_can_park(void) { return parkable(cur_worker()) != NULL; }
