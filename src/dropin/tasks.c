/* Tasks for the OpenMP library: detached spawns, home workers, the context
 * word of a stack, the deque's depth (src/core/thread.h, sched.h). */
#define _GNU_SOURCE
#include "ito_dropin.h"

#include "../core/hooks.h"
#include "../core/runtime.h"
#include "../core/sched.h"
#include "../core/thread.h"

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

int ito__dropin_spawn_home(int home, void (*fn)(void *), const void *arg, size_t size,
                           size_t align, void (*cpy)(void *, void *), void *ctx) {
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
  uint64_t n = dq_size(&w->dq);
  return n < 1000000 ? (int)n : 1000000;
}
