/* What the drop-in's synchronisation files (sync.c, rwlock.c) share:
 * the lock word's CAS, the pin of a glibc object's holder, the
 * announcement of a wait of glibc's in the kernel, and the caller's id. */
#ifndef ITO_PTHREAD_SYNC_INT_H
#define ITO_PTHREAD_SYNC_INT_H

#include "shim.h"

/* The lock word's CAS, acquiring. */
static inline int cas(int *p, int expect, int v) {
  return __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The holder of a glibc object stays on its OS thread (sync.c's head). */
static inline int held(int rc) {
  if (rc == 0) ito__dropin_pin();
  return rc;
}
static inline int let_go(int rc) {
  if (rc == 0) ito__dropin_unpin();
  return rc;
}

/* A wait of glibc's on a process-shared object blocks the worker in the
 * kernel: announced, so that extra workers start for it at once and past
 * ITO_EXTRA_WORKERS; wake ends it for a cancellation (docs/monitor.md). */
#define KWAIT_AROUND(begin, call) \
  ({                              \
    begin;                        \
    int kw_rc_ = (call);          \
    ito__dropin_kwait_end();      \
    kw_rc_;                       \
  })
#define KWAIT(wake, obj, call) KWAIT_AROUND(ito__dropin_kwait_begin(wake, obj), call)
/* A lock or barrier wait: an asynchronous cancellation acts inside it. */
#define KWAIT_LOCK(call) KWAIT_AROUND(ito__dropin_kwait_begin_lock(), call)
/* A try first: only a wait that may block is announced. */
#define KWAIT_TRY(try_call, call)                \
  ({                                             \
    int kt_rc_ = (try_call);                     \
    kt_rc_ == EBUSY ? KWAIT_LOCK(call) : kt_rc_; \
  })

/* The caller's id, as mutex and rwlock owners record it. */
static inline uint64_t self_id(void) { return (uint64_t)ito__pt_self(); }

/* glibc's old name for a call (binaries linked long ago). */
#define ITO_PT_ALIAS(old, name) \
  ITO_PT_EXPORT __typeof__(name) old __attribute__((alias(#name), copy(name)));

#endif
