/* libito-omp.so: dlopen and dlclose keep the calling lightweight thread on
 * its OS thread. The loader runs a library's constructors and destructors
 * under its lock, which records the owning OS thread; a constructor that
 * runs a parallel region (or any OpenMP wait) would park the caller, which
 * could resume on another worker and release the lock from there: glibc
 * refuses, and the lock stays held (the next dlopen from another thread
 * hangs). The thread is pinned for the whole call, as libito-pthread.so's
 * own dlopen does (docs/dropin.md section 5): its waits block its worker,
 * and the region's members run on the others (or on an extra worker the
 * monitor starts). Other callers go straight to the next definition (libc's,
 * or libito-pthread.so's when that comes after this library).
 * docs/openmp.md, "Set-up and constructors". */
#include "omp_int.h"

#include <dlfcn.h>

/* Resolved at the first call, without dlsym (which may allocate): the
 * runtime itself may load a library (hwloc) through this definition. */
static void *(*next_dlopen)(const char *, int);
static int (*next_dlclose)(void *);

static void *next_of(const char *name) {
  void *p = ito__dropin_sym((const void *)&next_of, name, NULL);
  if (!p) ito__omp_fatal("cannot find libc's %s (is libito-omp.so loaded before libc?)", name);
  return p;
}

/* After a load or an unload: a module's static TLS and code that is not
 * the program's (preemption), and the C++ runtime it may have brought. */
static void modules_changed(void) {
  void *g = ito__dropin_sym(NULL, "__cxa_get_globals", NULL);
  if (g) ito__dropin_set_eh((void *(*)(void))g);
  ito__dropin_modules_changed();
}

OMP_API void *dlopen(const char *file, int mode) {
  void *(*next)(const char *, int) = __atomic_load_n(&next_dlopen, __ATOMIC_ACQUIRE);
  if (UNLIKELY(!next)) {
    next = (void *(*)(const char *, int))next_of("dlopen");
    __atomic_store_n(&next_dlopen, next, __ATOMIC_RELEASE);
  }
  int pinned = ito_self() != 0;
  if (pinned) ito__dropin_pin();
  void *h = next(file, mode);
  if (pinned) ito__dropin_unpin();
  if (h) modules_changed();
  return h;
}

OMP_API int dlclose(void *h) {
  int (*next)(void *) = __atomic_load_n(&next_dlclose, __ATOMIC_ACQUIRE);
  if (UNLIKELY(!next)) {
    next = (int (*)(void *))next_of("dlclose");
    __atomic_store_n(&next_dlclose, next, __ATOMIC_RELEASE);
  }
  int pinned = ito_self() != 0;
  if (pinned) ito__dropin_pin();
  int rc = next(h);
  if (pinned) ito__dropin_unpin();
  if (rc == 0) modules_changed();
  return rc;
}
