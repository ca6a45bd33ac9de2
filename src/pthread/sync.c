/* Synchronisation objects in the program's own memory, in layouts that
 * keep glibc's type words where its static initialisers put them
 * (docs/dropin.md section 4). Fast paths are here; waiting goes through
 * the runtime's wait queues, where lightweight threads park and other
 * threads block.
 *
 * A process-shared object (PTHREAD_PROCESS_SHARED) is glibc's, in glibc's
 * layout, since another process may use it: every call on it is glibc's
 * (a wait blocks the worker; the monitor runs another meanwhile), and the
 * thread that holds one stays on its OS thread until it lets go (glibc
 * records owners by kernel thread id, which the threads of one worker
 * share). Each kind is told apart by what glibc's own init writes in the
 * object, in any process, with or without this library, and so in any
 * mapping of it (mutex: the shared bit of __kind; condition variable: the
 * shared bit of __wrefs; rwlock: __shared; barrier: its futex flag at
 * offset 12); the shim's own layouts keep those words clear. */
#include "sync_int.h"

#include <limits.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

/* ---- mutexes ------------------------------------------------------------------ */

struct pt_mutex {
  int state;      /* 0 free, 1 locked, 2 locked and maybe waited on */
  int count;      /* recursion depth (recursive kind) */
  uint64_t owner; /* the owner's id (recursive and error-checking kinds) */
  int kind;       /* glibc's __kind: PTHREAD_MUTEX_NORMAL/RECURSIVE/ERRORCHECK/ADAPTIVE */
  int qlock;
  void *head, *tail;
};
_Static_assert(sizeof(struct pt_mutex) <= sizeof(pthread_mutex_t), "mutex layout");
_Static_assert(offsetof(struct pt_mutex, kind) == 16, "the kind stays at glibc's offset");

#define PM(m) ((struct pt_mutex *)(void *)(m))

/* glibc's mutex: its __kind has bits no mutex of ours has (the shared bit) */
static inline int glibc_mutex(const struct pt_mutex *m) { return (m->kind & ~3) != 0; }

/* The contended halves are the runtime's, shared with ito_mutex_t. */
/* ECANCELED: an asynchronous cancellation ended the wait, and the thread
 * acts on it (a mutex wait is no cancellation point, but the asynchronous
 * type acts anywhere, as glibc's does); with relock (a condition wait's),
 * the wait goes on until the mutex is held, and the caller acts (a request
 * ends one wait only). */
static inline int acquire_as(struct pt_mutex *m, clockid_t clock, const struct timespec *abs,
                             bool relock) {
  if (LIKELY(cas(&m->state, 0, 1))) return 0;
  int rc;
  do rc = ito__dropin_lock_slow(&m->state, &m->qlock, &m->head, &m->tail, clock, abs);
  while (relock && rc == ECANCELED);
  if (UNLIKELY(rc == ECANCELED)) ito__pt_cancel_async();
  return rc;
}
static inline int acquire(struct pt_mutex *m, clockid_t clock, const struct timespec *abs) {
  return acquire_as(m, clock, abs, false);
}

/* The last touch of the mutex is the word's store (1 to 0), or, for a word
 * at 2, the queue lock's release (the word freed under it): a thread that
 * takes the mutex next and frees its memory after its own unlock (a count
 * of references under the lock, the last one frees) waits in that unlock
 * until the queue lock is free. */
static inline void release(struct pt_mutex *m) {
  int c = 1;
  if (LIKELY(
          __atomic_compare_exchange_n(&m->state, &c, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))) {
    while (__atomic_load_n(&m->qlock, __ATOMIC_ACQUIRE)) cpu_relax();
    return;
  }
  ito__dropin_unlock_slow(&m->state, &m->qlock, &m->head, &m->tail);
}

static inline uint64_t owner_of(struct pt_mutex *m) {
  return __atomic_load_n(&m->owner, __ATOMIC_RELAXED);
}
static inline void set_owner(struct pt_mutex *m, uint64_t id) {
  __atomic_store_n(&m->owner, id, __ATOMIC_RELAXED);
}

static int mutex_lock(struct pt_mutex *m, int try, clockid_t clock, const struct timespec *abs) {
  int kind = m->kind & 3;
  if (LIKELY(kind == PTHREAD_MUTEX_NORMAL || kind == PTHREAD_MUTEX_ADAPTIVE_NP)) {
    if (try) return cas(&m->state, 0, 1) ? 0 : EBUSY;
    return acquire(m, clock, abs);
  }
  uint64_t me = self_id();
  if (owner_of(m) == me) {
    if (kind == PTHREAD_MUTEX_ERRORCHECK) return try ? EBUSY : EDEADLK;
    if (m->count == INT_MAX) return EAGAIN;
    m->count++;
    return 0;
  }
  int rc = try ? (cas(&m->state, 0, 1) ? 0 : EBUSY) : acquire(m, clock, abs);
  if (rc) return rc;
  set_owner(m, me);
  m->count = 1;
  return 0;
}

static int mutex_unlock(struct pt_mutex *m) {
  int kind = m->kind & 3;
  if (LIKELY(kind == PTHREAD_MUTEX_NORMAL || kind == PTHREAD_MUTEX_ADAPTIVE_NP)) {
    release(m);
    return 0;
  }
  if (owner_of(m) != self_id() || !__atomic_load_n(&m->state, __ATOMIC_RELAXED)) return EPERM;
  if (kind == PTHREAD_MUTEX_RECURSIVE && --m->count > 0) return 0;
  m->count = 0;
  set_owner(m, 0);
  release(m);
  return 0;
}

ITO_PT_EXPORT int pthread_mutex_init(pthread_mutex_t *pm, const pthread_mutexattr_t *attr) {
  ITO_PT_ENTER(pthread_mutex_init, pm, attr);
  int kind = PTHREAD_MUTEX_NORMAL;
  if (attr) {
    int v;
    if (pthread_mutexattr_gettype(attr, &kind)) return EINVAL;
    if (pthread_mutexattr_getrobust(attr, &v) == 0 && v == PTHREAD_MUTEX_ROBUST)
      return REFUSE("pthread_mutex_init", "a robust mutex",
                    "lightweight threads do not die while holding a lock", ENOTSUP);
    if (pthread_mutexattr_getprotocol(attr, &v) == 0 && v == PTHREAD_PRIO_PROTECT)
      return REFUSE("pthread_mutex_init", "a priority-ceiling mutex",
                    "lightweight threads have no priorities; use PTHREAD_PRIO_NONE", ENOTSUP);
    if (pthread_mutexattr_getpshared(attr, &v) == 0 && v == PTHREAD_PROCESS_SHARED)
      return ito__pt_real.pthread_mutex_init(pm, attr); /* glibc's, for other processes too */
  }
  memset(pm, 0, sizeof *pm);
  PM(pm)->kind = kind;
  return 0;
}

ITO_PT_EXPORT int pthread_mutex_destroy(pthread_mutex_t *pm) {
  ITO_PT_ENTER(pthread_mutex_destroy, pm);
  if (UNLIKELY(glibc_mutex(PM(pm)))) return ito__pt_real.pthread_mutex_destroy(pm);
  return __atomic_load_n(&PM(pm)->state, __ATOMIC_RELAXED) ? EBUSY : 0;
}

ITO_PT_EXPORT int pthread_mutex_lock(pthread_mutex_t *pm) {
  ITO_PT_ENTER(pthread_mutex_lock, pm);
  struct pt_mutex *m = PM(pm);
  if (LIKELY(m->kind == 0 && cas(&m->state, 0, 1))) return 0;
  if (UNLIKELY(glibc_mutex(m)))
    return held(
        KWAIT_TRY(ito__pt_real.pthread_mutex_trylock(pm), ito__pt_real.pthread_mutex_lock(pm)));
  return mutex_lock(m, 0, CLOCK_REALTIME, NULL);
}

ITO_PT_EXPORT int pthread_mutex_trylock(pthread_mutex_t *pm) {
  ITO_PT_ENTER(pthread_mutex_trylock, pm);
  if (UNLIKELY(glibc_mutex(PM(pm)))) return held(ito__pt_real.pthread_mutex_trylock(pm));
  return mutex_lock(PM(pm), 1, CLOCK_REALTIME, NULL);
}

ITO_PT_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *pm, const struct timespec *abs) {
  ITO_PT_ENTER(pthread_mutex_timedlock, pm, abs);
  if (ito__pt_null(abs)) return EINVAL;
  if (UNLIKELY(glibc_mutex(PM(pm))))
    return held(KWAIT_LOCK(ito__pt_real.pthread_mutex_timedlock(pm, abs)));
  return mutex_lock(PM(pm), 0, CLOCK_REALTIME, abs);
}

ITO_PT_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *pm, clockid_t clock,
                                          const struct timespec *abs) {
  ITO_PT_ENTER(pthread_mutex_clocklock, pm, clock, abs);
  if (ito__pt_bad_clockwait(clock, abs)) return EINVAL;
  if (UNLIKELY(glibc_mutex(PM(pm))))
    return held(KWAIT_LOCK(ito__pt_real.pthread_mutex_clocklock(pm, clock, abs)));
  return mutex_lock(PM(pm), 0, clock, abs);
}

ITO_PT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *pm) {
  ITO_PT_ENTER(pthread_mutex_unlock, pm);
  struct pt_mutex *m = PM(pm);
  if (LIKELY(m->kind == 0)) {
    release(m);
    return 0;
  }
  if (UNLIKELY(glibc_mutex(m))) return let_go(ito__pt_real.pthread_mutex_unlock(pm));
  return mutex_unlock(m);
}

/* Robust and priority-ceiling mutexes are refused at init (ENOTSUP,
 * docs/dropin.md section 6), so no mutex of the library is either: these
 * answer as glibc does for a mutex that is not (EINVAL). A process-shared
 * mutex is glibc's own and asks glibc. */
ITO_PT_EXPORT int pthread_mutex_consistent(pthread_mutex_t *pm) {
  ITO_PT_ENTER(pthread_mutex_consistent, pm);
  if (UNLIKELY(glibc_mutex(PM(pm)))) return ito__pt_real.pthread_mutex_consistent(pm);
  return EINVAL;
}

ITO_PT_EXPORT int pthread_mutex_getprioceiling(const pthread_mutex_t *pm, int *c) {
  ITO_PT_ENTER(pthread_mutex_getprioceiling, pm, c);
  if (UNLIKELY(glibc_mutex(PM(pm)))) return ito__pt_real.pthread_mutex_getprioceiling(pm, c);
  return EINVAL;
}

ITO_PT_EXPORT int pthread_mutex_setprioceiling(pthread_mutex_t *pm, int c, int *old) {
  ITO_PT_ENTER(pthread_mutex_setprioceiling, pm, c, old);
  if (UNLIKELY(glibc_mutex(PM(pm)))) return ito__pt_real.pthread_mutex_setprioceiling(pm, c, old);
  return EINVAL;
}

/* ---- condition variables -------------------------------------------------------- */

struct pt_cond {
  int qlock;
  int clock; /* 0: CLOCK_REALTIME (the static initialiser), 1: CLOCK_MONOTONIC */
  void *head, *tail;
};
_Static_assert(sizeof(struct pt_cond) <= sizeof(pthread_cond_t), "cond layout");
#define PC(c) ((struct pt_cond *)(void *)(c))
/* glibc's: the shared bit of __wrefs (offset 36), which ours never write */
static inline int glibc_cond(const pthread_cond_t *c) {
  return (((const unsigned *)(const void *)c)[9] & 1) != 0;
}

ITO_PT_EXPORT int pthread_cond_init(pthread_cond_t *pc, const pthread_condattr_t *attr) {
  ITO_PT_ENTER(pthread_cond_init, pc, attr);
  int mono = 0;
  if (attr) {
    clockid_t clk = CLOCK_REALTIME;
    int sh;
    if (pthread_condattr_getpshared(attr, &sh) == 0 && sh == PTHREAD_PROCESS_SHARED)
      return ito__pt_real.pthread_cond_init(pc, attr); /* glibc's, for other processes too */
    pthread_condattr_getclock(attr, &clk);
    if (clk == CLOCK_MONOTONIC)
      mono = 1;
    else if (clk != CLOCK_REALTIME)
      return EINVAL;
  }
  memset(pc, 0, sizeof *pc);
  PC(pc)->clock = mono;
  return 0;
}

ITO_PT_EXPORT int pthread_cond_destroy(pthread_cond_t *pc) {
  ITO_PT_ENTER(pthread_cond_destroy, pc);
  if (UNLIKELY(glibc_cond(pc))) return ito__pt_real.pthread_cond_destroy(pc);
  return __atomic_load_n(&PC(pc)->head, __ATOMIC_RELAXED) ? EBUSY : 0;
}

struct cond_unlock {
  struct pt_mutex *m;
  int depth; /* a recursive mutex's depth, given back on relock */
};

/* Runs under the condition's queue lock, once the waiter is queued. */
static int cond_release(void *p) {
  struct cond_unlock *u = p;
  struct pt_mutex *m = u->m;
  int kind = m->kind & 3;
  if (kind == PTHREAD_MUTEX_NORMAL || kind == PTHREAD_MUTEX_ADAPTIVE_NP) {
    release(m);
    return 0;
  }
  if (owner_of(m) != self_id() || !__atomic_load_n(&m->state, __ATOMIC_RELAXED)) return EPERM;
  u->depth = m->count;
  m->count = 0;
  set_owner(m, 0);
  release(m);
  return 0;
}

static int cond_wait(struct pt_cond *c, struct pt_mutex *m, clockid_t clock,
                     const struct timespec *abs) {
  if (abs && ito__pt_bad_time(abs)) return EINVAL;
  ito__pt_testcancel(); /* a cancellation point: acted on with the mutex held */
  struct cond_unlock u = {m, 0};
  ito__dropin_lock(&c->qlock, ITO_DROPIN_LR_QUEUE_OUTER);
  /* a signal for the thread ends the wait so that its handler runs now;
   * the caller sees a spurious wake-up (0), which POSIX allows */
  int r = ito__dropin_wq_wait(&c->qlock, &c->head, &c->tail, ITO_DROPIN_WQ_INTR, clock, abs,
                              cond_release, &u);
  if (r == EPERM) return EPERM;
  if (r == EINTR) r = 0;
  /* the mutex is taken again before any request is acted on, whatever the
   * type */
  acquire_as(m, CLOCK_REALTIME, NULL, true);
  if (u.depth) {
    set_owner(m, self_id());
    m->count = u.depth;
  }
  ito__pt_testcancel(); /* a request that ended the wait: the mutex is held again, as POSIX asks */
  return r;
}

/* glibc's condition variable: a cancellation point as glibc's own. The
 * monitor ends the wait for a request with a broadcast (a spurious wake-up
 * for the other waiters, which POSIX allows); the thread acts on it with
 * the mutex held again. */
static void cond_kwake(void *c) { ito__pt_real.pthread_cond_broadcast(c); }
#define GLIBC_COND_WAIT(pc, call)             \
  ({                                          \
    ito__pt_testcancel();                     \
    int gc_rc_ = KWAIT(cond_kwake, pc, call); \
    ito__pt_testcancel();                     \
    gc_rc_;                                   \
  })

ITO_PT_EXPORT int pthread_cond_wait(pthread_cond_t *pc, pthread_mutex_t *pm) {
  ITO_PT_ENTER(pthread_cond_wait, pc, pm);
  if (UNLIKELY(glibc_cond(pc))) return GLIBC_COND_WAIT(pc, ito__pt_real.pthread_cond_wait(pc, pm));
  return cond_wait(PC(pc), PM(pm), CLOCK_REALTIME, NULL);
}

ITO_PT_EXPORT int pthread_cond_timedwait(pthread_cond_t *pc, pthread_mutex_t *pm,
                                         const struct timespec *abs) {
  ITO_PT_ENTER(pthread_cond_timedwait, pc, pm, abs);
  if (UNLIKELY(glibc_cond(pc)))
    return GLIBC_COND_WAIT(pc, ito__pt_real.pthread_cond_timedwait(pc, pm, abs));
  if (ito__pt_null(abs)) return EINVAL;
  return cond_wait(PC(pc), PM(pm), PC(pc)->clock ? CLOCK_MONOTONIC : CLOCK_REALTIME, abs);
}

ITO_PT_EXPORT int pthread_cond_clockwait(pthread_cond_t *pc, pthread_mutex_t *pm, clockid_t clock,
                                         const struct timespec *abs) {
  ITO_PT_ENTER(pthread_cond_clockwait, pc, pm, clock, abs);
  if (UNLIKELY(glibc_cond(pc)))
    return GLIBC_COND_WAIT(pc, ito__pt_real.pthread_cond_clockwait(pc, pm, clock, abs));
  if (ito__pt_bad_clockwait(clock, abs)) return EINVAL;
  return cond_wait(PC(pc), PM(pm), clock, abs);
}

static int cond_wake(struct pt_cond *c, int n) {
  if (!__atomic_load_n(&c->head, __ATOMIC_RELAXED)) return 0;
  ito__dropin_lock(&c->qlock, ITO_DROPIN_LR_QUEUE_OUTER);
  void *w = ito__dropin_wq_take(&c->head, &c->tail, n);
  ito__dropin_unlock(&c->qlock);
  ito__dropin_wq_wake(w);
  return 0;
}

ITO_PT_EXPORT int pthread_cond_signal(pthread_cond_t *pc) {
  ITO_PT_ENTER(pthread_cond_signal, pc);
  if (UNLIKELY(glibc_cond(pc))) return ito__pt_real.pthread_cond_signal(pc);
  return cond_wake(PC(pc), 1);
}

ITO_PT_EXPORT int pthread_cond_broadcast(pthread_cond_t *pc) {
  ITO_PT_ENTER(pthread_cond_broadcast, pc);
  if (UNLIKELY(glibc_cond(pc))) return ito__pt_real.pthread_cond_broadcast(pc);
  return cond_wake(PC(pc), -1);
}

/* ---- barriers ---------------------------------------------------------------------------
 * The shim's own layout, on the runtime's wait queues. glibc's
 * process-shared barrier has its shared flag (128, FUTEX_SHARED) in the
 * word at offset 12 (its init writes it in any process, with or without
 * this library); ours keep that word 0. */

struct pt_barrier {
  int qlock;
  unsigned count; /* arrived in this round; the top bit: the round's parity (BARRIER_PHASE) */
  unsigned total;
  /* glibc's shared flag (bit 7): 0 in every barrier of ours; bits 8-31:
   * waiters whose round ended while they were out of the queue for a
   * handler, and have not yet looked (BARRIER_GONE_ONE each) */
  unsigned shared;
  void *head, *tail;
};
_Static_assert(sizeof(struct pt_barrier) <= sizeof(pthread_barrier_t), "barrier layout");
_Static_assert(offsetof(struct pt_barrier, shared) == 12, "glibc's shared word");
#define PB(b) ((struct pt_barrier *)(void *)(b))
#define GLIBC_FUTEX_SHARED 128
/* count's top bit flips at each round's end (counts stay below glibc's
 * limit of UINT_MAX / 2), so that a waiter that left the queue for a
 * signal's handler knows whether its round ended meanwhile */
#define BARRIER_PHASE 0x80000000u
/* Such a waiter looks at the barrier again once its handler returns;
 * destroy waits until every one has looked, as glibc's waits for the
 * waiters of the last round to leave, so that the program may free the
 * barrier when destroy returns. Counted in multiples of 256, which leave
 * glibc's flag (bit 7) as it is; a waiter that leaves for good
 * (asynchronous cancellation) takes its count off beforehand. */
#define BARRIER_GONE_ONE 0x100u

static inline int glibc_barrier(pthread_barrier_t *b) {
  return (__atomic_load_n(&PB(b)->shared, __ATOMIC_RELAXED) & GLIBC_FUTEX_SHARED) != 0;
}

ITO_PT_EXPORT int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *attr,
                                       unsigned count) {
  ITO_PT_ENTER(pthread_barrier_init, b, attr, count);
  int sh;
  if (attr && pthread_barrierattr_getpshared(attr, &sh) == 0 && sh == PTHREAD_PROCESS_SHARED)
    return ito__pt_real.pthread_barrier_init(b, attr, count); /* glibc's, for other processes too */
  if (count == 0 || count >= UINT_MAX / 2) return EINVAL;     /* (glibc's limit) */
  memset(b, 0, sizeof *b);
  PB(b)->total = count;
  return 0;
}

ITO_PT_EXPORT int pthread_barrier_destroy(pthread_barrier_t *b) {
  ITO_PT_ENTER(pthread_barrier_destroy, b);
  if (UNLIKELY(glibc_barrier(b))) return ito__pt_real.pthread_barrier_destroy(b);
  struct pt_barrier *pb = PB(b);
  for (;;) {
    /* (under the lock: a waiter's last touch is its unlock) */
    ito__dropin_lock(&pb->qlock, ITO_DROPIN_LR_QUEUE);
    unsigned busy = pb->count & ~BARRIER_PHASE, gone = pb->shared / BARRIER_GONE_ONE;
    ito__dropin_unlock(&pb->qlock);
    if (busy) return EBUSY;
    if (!gone) return 0;
    struct timespec nap = {0, 100000}; /* (a sleep: the waiter's handler may sleep on a timer) */
    ito_nanosleep(&nap);
  }
}

ITO_PT_EXPORT int pthread_barrier_wait(pthread_barrier_t *pb) {
  ITO_PT_ENTER(pthread_barrier_wait, pb);
  if (UNLIKELY(glibc_barrier(pb))) return KWAIT_LOCK(ito__pt_real.pthread_barrier_wait(pb));
  struct pt_barrier *b = PB(pb);
  if (!b->total) return EINVAL;
  ito__dropin_lock(&b->qlock, ITO_DROPIN_LR_QUEUE);
  unsigned phase = b->count & BARRIER_PHASE;
  if ((++b->count & ~BARRIER_PHASE) == b->total) {
    void *w = ito__dropin_wq_take(&b->head, &b->tail, -1);
    unsigned queued = 0;
    for (void *p = w; p; p = *(void **)p) queued++; /* (a waiter's first word: the next) */
    b->count = phase ^ BARRIER_PHASE;
    b->shared += (b->total - 1 - queued) * BARRIER_GONE_ONE; /* out for a handler */
    ito__dropin_unlock(&b->qlock);
    ito__dropin_wq_wake(w);
    return PTHREAD_BARRIER_SERIAL_THREAD;
  }
  /* not a cancellation point; a signal's handler runs during the wait
   * (out of the queue), which goes on unless the round ended meanwhile */
  bool interrupted = false;
  while (ito__dropin_wq_wait(&b->qlock, &b->head, &b->tail, ITO_DROPIN_WQ_INTR, CLOCK_MONOTONIC,
                             NULL, NULL, NULL) == EINTR) {
    interrupted = true;
    ito__dropin_lock(&b->qlock, ITO_DROPIN_LR_QUEUE);
    if ((b->count & BARRIER_PHASE) != phase) {
      b->shared -= BARRIER_GONE_ONE; /* looked: destroy may go on */
      ito__dropin_unlock(&b->qlock);
      break;
    }
    if (ito__pt_cancel_async_due()) { /* counted in the round, as glibc's */
      b->shared -= BARRIER_GONE_ONE;  /* (its round's end counts it gone) */
      ito__dropin_unlock(&b->qlock);
      ito__pt_cancel_async_check();
    }
  }
  if (interrupted) ito__pt_cancel_async_check(); /* (no reference to the barrier left) */
  return 0;
}

/* ---- spinlocks: an ito thread yields every 1,000 spins ------------------------------
 * glibc's layout, so that a lock shared with a process without the library
 * works: an int, on x86 1 free and 0 or below held (glibc's lock
 * decrements it), elsewhere 0 free and 1 held. */
#if defined(__x86_64__) || defined(__i386__)
#define SPIN_FREE 1
#else
#define SPIN_FREE 0
#endif
#define SPIN_HELD (1 - SPIN_FREE)

ITO_PT_EXPORT int pthread_spin_init(pthread_spinlock_t *s, int pshared) {
  ITO_PT_ENTER(pthread_spin_init, s, pshared);
  __atomic_store_n((int *)s, SPIN_FREE, __ATOMIC_RELAXED); /* process-shared: only an atomic */
  return 0;
}

ITO_PT_EXPORT int pthread_spin_destroy(pthread_spinlock_t *s) {
  ITO_PT_ENTER(pthread_spin_destroy, s);
  return 0;
}

ITO_PT_EXPORT int pthread_spin_lock(pthread_spinlock_t *s) {
  ITO_PT_ENTER(pthread_spin_lock, s);
  int *p = (int *)s;
  for (unsigned n = 1;; n++) {
    if (__atomic_load_n(p, __ATOMIC_RELAXED) == SPIN_FREE && cas(p, SPIN_FREE, SPIN_HELD)) return 0;
    if (n % 1000 == 0 && ito__dropin_can_park())
      ito_yield(); /* the holder may be waiting for this worker */
    else
      cpu_relax();
  }
}

ITO_PT_EXPORT int pthread_spin_trylock(pthread_spinlock_t *s) {
  ITO_PT_ENTER(pthread_spin_trylock, s);
  return cas((int *)s, SPIN_FREE, SPIN_HELD) ? 0 : EBUSY;
}

ITO_PT_EXPORT int pthread_spin_unlock(pthread_spinlock_t *s) {
  ITO_PT_ENTER(pthread_spin_unlock, s);
  __atomic_store_n((int *)s, SPIN_FREE, __ATOMIC_RELEASE);
  return 0;
}

/* ---- once: 0 new, 1 running, 2 done; waiters share one queue ------------------------ */

static int once_qlock;
static void *once_head, *once_tail;

static void once_wake_all(void) {
  ito__dropin_lock(&once_qlock, ITO_DROPIN_LR_QUEUE);
  void *w = ito__dropin_wq_take(&once_head, &once_tail, -1);
  ito__dropin_unlock(&once_qlock);
  ito__dropin_wq_wake(w);
}

/* The function left by an exception (or a forced unwind): the once is new
 * again, and a waiter takes its turn. */
static void once_unwound(int **cell) {
  if (*cell) {
    __atomic_store_n(*cell, 0, __ATOMIC_RELEASE);
    once_wake_all();
  }
}

ITO_PT_EXPORT int pthread_once(pthread_once_t *o, void (*fn)(void)) {
  ITO_PT_ENTER(pthread_once, o, fn);
  int *p = (int *)o;
  for (;;) {
    int s = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    if (LIKELY(s == 2)) return 0;
    if (s == 0 && cas(p, 0, 1)) {
      int *cell __attribute__((cleanup(once_unwound))) = p;
      fn();
      cell = NULL;
      __atomic_store_n(p, 2, __ATOMIC_RELEASE);
      once_wake_all();
      return 0;
    }
    ito__dropin_lock(&once_qlock, ITO_DROPIN_LR_QUEUE);
    if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == 1)
      ito__dropin_wq_wait(&once_qlock, &once_head, &once_tail, ITO_DROPIN_WQ_INTR, CLOCK_MONOTONIC,
                          NULL, NULL, NULL); /* (a handler ran: the loop waits again) */
    else
      ito__dropin_unlock(&once_qlock);
  }
}

/* ---- keys: the runtime's, per lightweight thread ------------------------------------ */

_Static_assert(ITO_KEYS_MAX == PTHREAD_KEYS_MAX, "key count");

ITO_PT_EXPORT int pthread_key_create(pthread_key_t *k, void (*dtor)(void *)) {
  ITO_PT_ENTER(pthread_key_create, k, dtor);
  ito_key_t key;
  int rc = ito_key_create(&key, dtor);
  if (!rc) *k = key;
  return rc;
}

ITO_PT_EXPORT int pthread_key_delete(pthread_key_t k) {
  ITO_PT_ENTER(pthread_key_delete, k);
  return ito_key_delete(k);
}

ITO_PT_EXPORT void *pthread_getspecific(pthread_key_t k) {
  ITO_PT_ENTER(pthread_getspecific, k);
  return ito_getspecific(k);
}

ITO_PT_EXPORT int pthread_setspecific(pthread_key_t k, const void *v) {
  ITO_PT_ENTER(pthread_setspecific, k, v);
  return ito_setspecific(k, v);
}

/* ---- glibc's old names for the same calls (binaries linked long ago) --------------- */

ITO_PT_ALIAS(__pthread_mutex_init, pthread_mutex_init)
ITO_PT_ALIAS(__pthread_mutex_destroy, pthread_mutex_destroy)
ITO_PT_ALIAS(__pthread_mutex_lock, pthread_mutex_lock)
ITO_PT_ALIAS(__pthread_mutex_trylock, pthread_mutex_trylock)
ITO_PT_ALIAS(__pthread_mutex_unlock, pthread_mutex_unlock)
ITO_PT_ALIAS(__pthread_once, pthread_once)
ITO_PT_ALIAS(__pthread_key_create, pthread_key_create)
ITO_PT_ALIAS(__pthread_getspecific, pthread_getspecific)
ITO_PT_ALIAS(__pthread_setspecific, pthread_setspecific)
/* pthread.h redirects pthread_mutex_consistent_np to pthread_mutex_consistent;
 * older binaries call it by its own name. */
ITO_PT_EXPORT int ito__pt_mutex_consistent_np(pthread_mutex_t *) __asm__(
    "pthread_mutex_consistent_np")
    __attribute__((alias("pthread_mutex_consistent"), copy(pthread_mutex_consistent)));
