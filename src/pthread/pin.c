/* Calls during which a lightweight thread must stay on its OS thread
 * (docs/dropin.md section 5): libc's stream locks and the dynamic loader's
 * lock record the owning OS thread, so a thread that parked while holding
 * one and moved, or let another thread on its worker in, would break them.
 * The thread is pinned from taking such a lock to releasing it: its waits
 * then block the worker instead of parking. */
#include "shim.h"

#include <dlfcn.h>

static int pin_if_ito(void) {
  if (!ito_self()) return 0;
  ito__dropin_pin();
  return 1;
}

ITO_PT_EXPORT void flockfile(FILE *f) {
  ITO_PT_ENTER_VOID(flockfile, f);
  pin_if_ito(); /* held until funlockfile */
  ito__pt_real.flockfile(f);
}

ITO_PT_EXPORT int ftrylockfile(FILE *f) {
  ITO_PT_ENTER(ftrylockfile, f);
  int pinned = pin_if_ito();
  int rc = ito__pt_real.ftrylockfile(f);
  if (rc != 0 && pinned) ito__dropin_unpin();
  return rc;
}

ITO_PT_EXPORT void funlockfile(FILE *f) {
  ITO_PT_ENTER_VOID(funlockfile, f);
  ito__pt_real.funlockfile(f);
  if (ito_self()) ito__dropin_unpin();
}

/* A library's constructors run under the loader's lock; they may create
 * threads and wait for them. */
ITO_PT_EXPORT void *dlopen(const char *file, int mode) {
  ITO_PT_ENTER(dlopen, file, mode);
  int pinned = pin_if_ito();
  void *h = ito__pt_real.dlopen(file, mode);
  if (pinned) ito__dropin_unpin();
  /* the C++ runtime may have come with it: its exception globals follow
   * lightweight threads from now on */
  if (h) {
    void *g = dlsym(RTLD_DEFAULT, "__cxa_get_globals");
    if (g) ito__dropin_set_eh((void *(*)(void))g);
    /* a module with static TLS: glibc initialises it only in the threads
     * it knows, not in the lightweight threads' own blocks */
    ito__dropin_modules_changed();
  }
  return h;
}

ITO_PT_EXPORT int dlclose(void *h) {
  ITO_PT_ENTER(dlclose, h);
  int pinned = pin_if_ito();
  int rc = ito__pt_real.dlclose(h);
  if (pinned) ito__dropin_unpin();
  if (rc == 0) ito__dropin_modules_changed(); /* (a module's static TLS may be gone) */
  return rc;
}

ITO_PT_EXPORT int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg) {
  ITO_PT_ENTER(dl_iterate_phdr, cb, arg);
  int pinned = pin_if_ito();
  int rc = ito__pt_real.dl_iterate_phdr(cb, arg);
  if (pinned) ito__dropin_unpin();
  return rc;
}
