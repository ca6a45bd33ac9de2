/* Reader/writer locks of the drop-in in the program's own memory, in a
 * layout that keeps glibc's __shared word where its initialisers put it
 * (process-shared ones are glibc's: sync.c's head says how they are told
 * apart). */
#include "sync_int.h"

#include <stddef.h>
#include <string.h>

/* ---- reader/writer locks ----------------------------------------------------------
 * Everything under qlock; a release hands the lock to the waiters it wakes
 * (state is set for them), so a woken thread never competes again. */

struct pt_rwlock {
  int qlock;
  int state; /* readers inside, or -1 for a writer */
  int wwait; /* writers queued */
  int pad0;
  uint64_t owner; /* the writer's id */
  int pad1;
  int shared; /* glibc's __shared: 0 in every rwlock of ours */
  void *head, *tail;
  int kind; /* glibc's __flags: 2 = writers first (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) */
};
_Static_assert(sizeof(struct pt_rwlock) <= sizeof(pthread_rwlock_t), "rwlock layout");
_Static_assert(offsetof(struct pt_rwlock, kind) == 48, "the kind stays at glibc's offset");
_Static_assert(offsetof(struct pt_rwlock, shared) == 28, "glibc's __shared word");
#define PRW(l) ((struct pt_rwlock *)(void *)(l))
/* glibc's process-shared rwlock: its init sets __shared (offset 28, on
 * x86-64 and AArch64) to 1, in any process, with or without this library */
static inline int glibc_rw(const pthread_rwlock_t *l) {
  return __atomic_load_n(&PRW(l)->shared, __ATOMIC_RELAXED) != 0;
}
enum { TAG_READ = 1, TAG_WRITE = 2 };

/* Under qlock: the waiters that may now enter, with state set for them. */
static void *rw_grant(struct pt_rwlock *l) {
  int tag = ito__dropin_wq_head_tag(&l->head);
  if (tag == TAG_WRITE && l->state == 0) {
    l->state = -1;
    l->wwait--;
    return ito__dropin_wq_take(&l->head, &l->tail, 1);
  }
  if (tag == TAG_READ && l->state >= 0) {
    int n;
    void *w = ito__dropin_wq_take_tag(&l->head, &l->tail, TAG_READ, &n);
    l->state += n;
    return w;
  }
  return NULL;
}

static int rw_rdlock(struct pt_rwlock *l, int try, clockid_t clock, const struct timespec *abs) {
  ito__dropin_lock(&l->qlock, ITO_DROPIN_LR_QUEUE);
  if (l->state >= 0 && (l->kind != 2 || l->wwait == 0) && l->state < INT_MAX) {
    l->state++;
    ito__dropin_unlock(&l->qlock);
    return 0;
  }
  int rc = 0;
  if (l->state == -1 && __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == self_id())
    rc = EDEADLK;
  else if (l->state == INT_MAX)
    rc = EAGAIN;
  else if (try)
    rc = EBUSY;
  else if (abs && ito__pt_bad_time(abs))
    rc = EINVAL;
  if (rc) {
    ito__dropin_unlock(&l->qlock);
    return rc;
  }
  /* a signal's handler runs during the wait, which then goes on */
  rc = ito__dropin_wq_wait(&l->qlock, &l->head, &l->tail, TAG_READ | ITO_DROPIN_WQ_INTR, clock, abs,
                           NULL, NULL);
  if (rc != EINTR) return rc;
  ito__pt_cancel_async_check(); /* no cancellation point, but the asynchronous type acts anywhere */
  return rw_rdlock(l, 0, clock, abs);
}

static int rw_wrlock(struct pt_rwlock *l, int try, clockid_t clock, const struct timespec *abs) {
  uint64_t me = self_id();
  ito__dropin_lock(&l->qlock, ITO_DROPIN_LR_QUEUE);
  if (l->state == 0 && !l->head) {
    l->state = -1;
    __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
    ito__dropin_unlock(&l->qlock);
    return 0;
  }
  int rc = 0;
  if (l->state == -1 && __atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me)
    rc = EDEADLK;
  else if (try)
    rc = EBUSY;
  else if (abs && ito__pt_bad_time(abs))
    rc = EINVAL;
  if (rc) {
    ito__dropin_unlock(&l->qlock);
    return rc;
  }
  l->wwait++;
  rc = ito__dropin_wq_wait(&l->qlock, &l->head, &l->tail, TAG_WRITE | ITO_DROPIN_WQ_INTR, clock,
                           abs, NULL, NULL);
  if (rc == 0) {
    __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
    return 0;
  }
  /* timed out, or a signal's handler ran: readers queued behind this
   * writer may now enter; after a handler the wait goes on */
  ito__dropin_lock(&l->qlock, ITO_DROPIN_LR_QUEUE);
  l->wwait--;
  void *w = rw_grant(l);
  ito__dropin_unlock(&l->qlock);
  ito__dropin_wq_wake(w);
  if (rc != EINTR) return rc;
  ito__pt_cancel_async_check();
  return rw_wrlock(l, 0, clock, abs);
}

ITO_PT_EXPORT int pthread_rwlock_init(pthread_rwlock_t *pl, const pthread_rwlockattr_t *attr) {
  ITO_PT_ENTER(pthread_rwlock_init, pl, attr);
  int kind = 0;
  if (attr) {
    int v;
    if (pthread_rwlockattr_getpshared(attr, &v) == 0 && v == PTHREAD_PROCESS_SHARED) {
      return ito__pt_real.pthread_rwlock_init(pl, attr); /* glibc's, for other processes too */
    }
    if (pthread_rwlockattr_getkind_np(attr, &v) == 0 &&
        v == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
      kind = 2;
  }
  memset(pl, 0, sizeof *pl);
  PRW(pl)->kind = kind;
  return 0;
}

ITO_PT_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *pl) {
  ITO_PT_ENTER(pthread_rwlock_destroy, pl);
  if (UNLIKELY(glibc_rw(pl))) return ito__pt_real.pthread_rwlock_destroy(pl);
  struct pt_rwlock *l = PRW(pl);
  return (__atomic_load_n(&l->state, __ATOMIC_RELAXED) ||
          __atomic_load_n(&l->head, __ATOMIC_RELAXED))
             ? EBUSY
             : 0;
}

ITO_PT_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *pl) {
  ITO_PT_ENTER(pthread_rwlock_rdlock, pl);
  if (UNLIKELY(glibc_rw(pl)))
    return held(KWAIT_TRY(ito__pt_real.pthread_rwlock_tryrdlock(pl),
                          ito__pt_real.pthread_rwlock_rdlock(pl)));
  return rw_rdlock(PRW(pl), 0, CLOCK_REALTIME, NULL);
}
ITO_PT_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *pl) {
  ITO_PT_ENTER(pthread_rwlock_tryrdlock, pl);
  if (UNLIKELY(glibc_rw(pl))) return held(ito__pt_real.pthread_rwlock_tryrdlock(pl));
  return rw_rdlock(PRW(pl), 1, CLOCK_REALTIME, NULL);
}
ITO_PT_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *pl, const struct timespec *abs) {
  ITO_PT_ENTER(pthread_rwlock_timedrdlock, pl, abs);
  if (UNLIKELY(glibc_rw(pl)))
    return held(KWAIT_LOCK(ito__pt_real.pthread_rwlock_timedrdlock(pl, abs)));
  if (ito__pt_null(abs)) return EINVAL;
  return rw_rdlock(PRW(pl), 0, CLOCK_REALTIME, abs);
}
ITO_PT_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *pl, clockid_t clock,
                                             const struct timespec *abs) {
  ITO_PT_ENTER(pthread_rwlock_clockrdlock, pl, clock, abs);
  if (UNLIKELY(glibc_rw(pl)))
    return held(KWAIT_LOCK(ito__pt_real.pthread_rwlock_clockrdlock(pl, clock, abs)));
  if (ito__pt_bad_clockwait(clock, abs)) return EINVAL;
  return rw_rdlock(PRW(pl), 0, clock, abs);
}
ITO_PT_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *pl) {
  ITO_PT_ENTER(pthread_rwlock_wrlock, pl);
  if (UNLIKELY(glibc_rw(pl)))
    return held(KWAIT_TRY(ito__pt_real.pthread_rwlock_trywrlock(pl),
                          ito__pt_real.pthread_rwlock_wrlock(pl)));
  return rw_wrlock(PRW(pl), 0, CLOCK_REALTIME, NULL);
}
ITO_PT_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *pl) {
  ITO_PT_ENTER(pthread_rwlock_trywrlock, pl);
  if (UNLIKELY(glibc_rw(pl))) return held(ito__pt_real.pthread_rwlock_trywrlock(pl));
  return rw_wrlock(PRW(pl), 1, CLOCK_REALTIME, NULL);
}
ITO_PT_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *pl, const struct timespec *abs) {
  ITO_PT_ENTER(pthread_rwlock_timedwrlock, pl, abs);
  if (UNLIKELY(glibc_rw(pl)))
    return held(KWAIT_LOCK(ito__pt_real.pthread_rwlock_timedwrlock(pl, abs)));
  if (ito__pt_null(abs)) return EINVAL;
  return rw_wrlock(PRW(pl), 0, CLOCK_REALTIME, abs);
}
ITO_PT_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *pl, clockid_t clock,
                                             const struct timespec *abs) {
  ITO_PT_ENTER(pthread_rwlock_clockwrlock, pl, clock, abs);
  if (UNLIKELY(glibc_rw(pl)))
    return held(KWAIT_LOCK(ito__pt_real.pthread_rwlock_clockwrlock(pl, clock, abs)));
  if (ito__pt_bad_clockwait(clock, abs)) return EINVAL;
  return rw_wrlock(PRW(pl), 0, clock, abs);
}

ITO_PT_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *pl) {
  ITO_PT_ENTER(pthread_rwlock_unlock, pl);
  if (UNLIKELY(glibc_rw(pl))) return let_go(ito__pt_real.pthread_rwlock_unlock(pl));
  struct pt_rwlock *l = PRW(pl);
  ito__dropin_lock(&l->qlock, ITO_DROPIN_LR_QUEUE);
  if (l->state == -1) {
    l->state = 0;
    __atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
  } else if (l->state > 0) {
    l->state--;
  } else {
    ito__dropin_unlock(&l->qlock);
    return EPERM;
  }
  void *w = l->state == 0 ? rw_grant(l) : NULL;
  ito__dropin_unlock(&l->qlock);
  ito__dropin_wq_wake(w);
  return 0;
}

/* glibc's old names for the same calls */
ITO_PT_ALIAS(__pthread_rwlock_init, pthread_rwlock_init)
ITO_PT_ALIAS(__pthread_rwlock_destroy, pthread_rwlock_destroy)
ITO_PT_ALIAS(__pthread_rwlock_rdlock, pthread_rwlock_rdlock)
ITO_PT_ALIAS(__pthread_rwlock_tryrdlock, pthread_rwlock_tryrdlock)
ITO_PT_ALIAS(__pthread_rwlock_wrlock, pthread_rwlock_wrlock)
ITO_PT_ALIAS(__pthread_rwlock_trywrlock, pthread_rwlock_trywrlock)
ITO_PT_ALIAS(__pthread_rwlock_unlock, pthread_rwlock_unlock)
