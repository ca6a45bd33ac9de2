/* Tasks for the OpenMP library: detached spawns, home workers, the context
 * word of a stack, the deque's depth (src/core/thread.h, sched.h), and the
 * places workers are on (src/core/places.h). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/fiber.h"
#include "../core/handle.h"
#include "../core/places.h"
#include "../core/hooks.h"
#include "../core/nodeq.h"
#include "../core/runtime.h"
#include "../core/sched.h"
#include "../core/thread.h"
#include "../core/tls.h"

#include <errno.h>

/* A task's spawn is reported here (a fork's spawn of a child thread is
 * reported by the fork). */
static void report_spawn(void) {
  if (UNLIKELY(LOAD_RLX(&ito__hooks_on))) {
    worker *w = cur_worker();
    ito__hook_emit(ITO_EV_SPAWN, w ? w->id : -1, NULL, 0);
  }
}

int ito__dropin_spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                      void (*cpy)(void *, void *), void *ctx) {
  report_spawn();
  return ito__thread_spawn(fn, arg, size, align, cpy,
                           ctx == ITO_DROPIN_CTX_COPY ? THREAD_CTX_COPY : ctx, -1);
}

int ito__dropin_numa_on(void) { return LOAD_RLX(&ito__nodeq_on); }

int ito__dropin_spawn_home(int home, void (*fn)(void *), const void *arg, size_t size, size_t align,
                           void (*cpy)(void *, void *), void *ctx) {
  int rc = ito__ensure();
  if (rc) return rc;
  if (home < 0 || home >= ito__nworkers) return EINVAL;
  report_spawn();
  return ito__thread_spawn(fn, arg, size, align, cpy,
                           ctx == ITO_DROPIN_CTX_COPY ? THREAD_CTX_COPY : ctx, home);
}

int ito__dropin_home(int home) {
  worker *w = cur_worker();
  if (!w || !w->cur) return ESRCH;
  if (home >= ito__nworkers) return EINVAL;
  if (home < 0) {
    w->cur->home = NULL;
    return 0;
  }
  worker *to = ito__workers[home];
  w->cur->home = to;
  ito__set_homes();
  /* A pinned thread holds a lock tied to its OS thread (the loader's in a
   * library's constructor, which may set its affinity: libpsm2's does,
   * in Open MPI's MPI_Init): it moves once unpinned
   * (ito__thread_unpin_move), else the lock would be released from
   * another OS thread, which glibc refuses, and stay held for ever. */
  if (to != w && parkable(w)) ito__suspend(ACT_MIGRATE, to, NULL, NULL);
  return 0;
}

void ito__dropin_run_on_node(int node, int count) {
  if (!LOAD_RLX(&ito__nodeq_on)) return;
  worker *w = cur_worker();
  if (node >= 0 && w && w->cur && !w->cur->home && ito__nodeq_worker_node(w->id) != node &&
      parkable(w)) {
    static unsigned rr; /* spreads the moves over the node's workers */
    worker *to = ito__nodeq_worker_on(node, __atomic_fetch_add(&rr, 1, __ATOMIC_RELAXED));
    if (to && to != w) {
      ito__suspend(ACT_MIGRATE, to, NULL, NULL);
      w = cur_worker();
    }
  }
  if (count) ito__nodeq_count(w, node);
}

void ito__dropin_root_stay(void) { ito__root_stay_ask(); }
int ito__dropin_root_stays(void) { return ito__root_stays(); }

int ito__dropin_preemptible(int on) {
  worker *w = cur_worker();
  ithread *t = running_thread(w);
  if (!t) return 0;
  int was = t->preempt;
  STORE_RLX(&t->preempt, on);
  return was;
}

void **ito__dropin_ctx(void) {
  worker *w = cur_worker();
  return w && w->cur ? &w->cur->ctx : NULL;
}

void ito__dropin_ctx_where(struct ito_dropin_where *out) {
  char *tp;
#if defined(__x86_64__)
  __asm__("movq %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
  __asm__("mrs %0, tpidr_el0" : "=r"(tp));
#else
  tp = NULL;
#endif
  out->tp_off = (long)((char *)&ito__tls_worker - tp);
  out->cur_off = offsetof(worker, cur);
  out->ctx_off = offsetof(fiber, ctx);
}

/* ---- TLS blocks lent to threads (src/core/tls.h, invariant 5) ----------------------------- */

int ito__dropin_tls_program(void) { return ito__tls_program_has(); }

int ito__dropin_tls_on(void) {
  if (ito__ensure()) return 0;
  return LOAD_RLX(&ito__tls_mode) != 0;
}

void *ito__dropin_tls_block(void) { return ito__tls_block_get(); }
void ito__dropin_tls_free(void *block) { ito__tls_block_put(block); }
void *ito__dropin_tls_use(void *block) {
  worker *w = cur_worker();
  if (!w || !w->cur || w->cur->kind == FIBER_NATIVE) return NULL;
  return ito__tls_use(block);
}

/* ---- CPU affinity of a thread: a home worker bound to a CPU of the set -------------------- */

static ithread *thread_named(ito_thread_t h) {
  if (!h) return ito__root_thread();
  ithread *t = ito__thread_of(h);
  if (!t || !ito__still_current(t, h) || __atomic_load_n(&t->sync, __ATOMIC_ACQUIRE) >= TS_DONE)
    return NULL;
  return t;
}

int ito__dropin_affinity_set(ito_thread_t h, size_t size, const cpu_set_t *set) {
  int rc = ito__ensure();
  if (rc) return rc;
  ithread *t = thread_named(h);
  if (!t) return ESRCH;
  if (!set || size == 0) return EINVAL;
  const cpu_set_t *all = ito__process_cpus();
  int wants_all = 1, any = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, all)) continue;
    int in = (size_t)c / 8 < size && CPU_ISSET_S(c, size, set);
    any |= in;
    wants_all &= in;
  }
  if (!any) return EINVAL; /* no CPU of the process, as the kernel says */
  int home = -1;
  if (!wants_all) {
    for (int i = 0; i < ito__nworkers && home < 0; i++) {
      int c = ito__worker_cpu(i);
      if (c >= 0 && (size_t)c / 8 < size && CPU_ISSET_S(c, size, set)) home = i;
    }
    if (home < 0) return ENODEV; /* a CPU of the process, but no worker runs there */
    ito__bind_all();
  }
  fiber *f = fiber_of_thread(t);
  worker *w = cur_worker();
  if (w && w->cur == f) return ito__dropin_home(home); /* moves now */
  /* another thread: it goes to its home when it is next made ready */
  if (home >= 0) ito__set_homes();
  __atomic_store_n(&f->home, home >= 0 ? ito__workers[home] : NULL, __ATOMIC_RELEASE);
  return 0;
}

int ito__dropin_affinity_get(ito_thread_t h, size_t size, cpu_set_t *set) {
  int rc = ito__ensure();
  if (rc) return rc;
  ithread *t = thread_named(h);
  if (!t) return ESRCH;
  if (!set || size == 0) return EINVAL;
  worker *home = __atomic_load_n(&fiber_of_thread(t)->home, __ATOMIC_ACQUIRE);
  CPU_ZERO_S(size, set);
  if (home) {
    int c = ito__worker_cpu(home->id);
    if (c >= 0 && (size_t)c / 8 < size) CPU_SET_S(c, size, set);
  } else {
    const cpu_set_t *all = ito__process_cpus();
    for (int c = 0; c < CPU_SETSIZE && (size_t)c / 8 < size; c++)
      if (CPU_ISSET(c, all)) CPU_SET_S(c, size, set);
  }
  return 0;
}

int ito__dropin_process_cpus(cpu_set_t *out) {
  int rc = ito__ensure();
  if (!rc) *out = *ito__process_cpus();
  return rc;
}

/* ---- idle memory ---------------------------------------------------------------------------- */

size_t ito__dropin_release_stacks(void) {
  worker *w = cur_worker();
  return ito__fibers_release(w && w->cur ? &w->fibers : NULL);
}

/* ---- places (src/core/places.h) ---------------------------------------------------------- */

/* (the places are set up when the runtime starts: these start it) */
int ito__dropin_place_count(void) { return ito__ensure() ? 0 : ito__places_count(); }

int ito__dropin_place_cpus(int place, int *cpus, int max) {
  if (ito__ensure()) return -1;
  const cpu_set_t *p = ito__place_cpus(place);
  if (!p) return -1;
  int n = 0;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, p)) {
      if (n < max && cpus) cpus[n] = c;
      n++;
    }
  return n;
}

int ito__dropin_worker_place(int worker) { return ito__ensure() ? -1 : ito__worker_place(worker); }
