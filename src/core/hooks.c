/* Event hooks (invariants at the top of hooks.h; design in
 * docs/hooks.md). */
#define _GNU_SOURCE
#include "hooks.h"

#include <errno.h>

int ito__hooks_on;
static void (*recorder)(const struct ito_event *e, void *arg);
static void *recorder_arg;
static int attach_lock;

int ito__hooks_attach(void (*fn)(const struct ito_event *e, void *arg), void *arg) {
  if (!fn) return EINVAL;
  spin_lock(&attach_lock, LR_LEAF);
  int rc = 0;
  if (recorder)
    rc = EINVAL;
  else {
    recorder = fn;
    recorder_arg = arg;
    __atomic_store_n(&ito__hooks_on, 1, __ATOMIC_RELEASE);
  }
  spin_unlock(&attach_lock);
  return rc;
}

void ito__hook_emit(int kind, int worker, const void *obj, long peer) {
  struct ito_event e = {kind, worker, obj, peer, NULL, 0};
  recorder(&e, recorder_arg);
}

void ito__hook_emit_rec(int kind, int worker, const void *obj, long peer, const void *rec,
                        unsigned long aux) {
  struct ito_event e = {kind, worker, obj, peer, rec, aux};
  recorder(&e, recorder_arg);
}
