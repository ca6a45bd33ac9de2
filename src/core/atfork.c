/* fork() with lightweight threads (invariants at the top of atfork.h). */
#define _GNU_SOURCE
#include "atfork.h"

#include "fiber.h"
#include "forkpart.h"
#include "runtime.h"
#include "sched.h"
#include "thread.h"
#include "tls.h"
#include "worker.h"

#include <stdlib.h>
#include <unistd.h>

static struct {
  worker *w;
  fiber *f;
  int active;
} fk;

void ito__atfork_prepare(void) {
  worker *w = cur_worker();
  fk.active = 0;
  if (!w || !ito__running() || !w->cur || !w->cur->thread) return;
  /* worker 0's glibc descriptor is main's TLS block: while another thread
   * forks on it, main (running elsewhere) would share it. Fork from
   * another worker instead. */
  ithread *root = ito__root_thread();
  if (ito__tls_mode && w->id == 0 && root && root != w->cur->thread && ito__nworkers > 1 &&
      parkable(w)) {
    ito__suspend(ACT_MIGRATE, ito__workers[1], NULL, NULL);
    w = cur_worker();
  }
  ito__thread_pin(); /* invariant 1 */
  fk.w = w;
  fk.f = w->cur;
  fk.active = 1;
  /* glibc's fork acts on THREAD_SELF: the descriptor glibc made for this
   * OS thread (on worker 0, main's); the fork parts' locks are taken and
   * let go on it (so the lock order's record of them, base.h, is that
   * block's in the parent and the child) */
  if (ito__tls_mode) ito__tls_switch(w, w->tls_glibc);
  ito__fork_parts_lock(1);
}

int ito__atfork_active(void) { return fk.active; }

void ito__atfork_parent(void) {
  if (!fk.active) return;
  ITO_ASSERT(fk.w->cur == fk.f); /* invariant 1: pinned */
  fk.active = 0;
  ito__fork_parts_lock(0);
  if (ito__tls_mode) ito__tls_switch(fk.w, fk.f->tls);
  ito__thread_unpin();
}

void ito__atfork_child(void) {
  if (!fk.active) return;
  fk.active = 0;
  worker *w = fk.w;
  fiber *f = fk.f;
  ITO_ASSERT(w->cur == f); /* invariant 1: pinned */
  ito__fork_parts_lock(0);
  STORE_REL(&ito__forked, 1);
  w->os = ito__os.pthread_self();
  w->os_tid = (int)gettid();
  f->create_worker = NULL; /* its creator, if still queued, was another thread */
  f->home = NULL;
  ito__fork_parts_child(w, f->thread);
  ITO_ASSERT(ito__nworkers == 1 && cur_worker() == w && w->id == 0); /* invariant 3 */
  ito__thread_unpin();
}
