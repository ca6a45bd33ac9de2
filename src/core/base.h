/* The ground every file of libito.so stands on: visibility and branch
 * hints, atomics over plain fields, fences, spinlocks, time arithmetic and
 * the runtime's assertions. Includes nothing of the runtime. Naming: ito_
 * is the public ABI, ito__ is internal and hidden, ito__dropin_ is the
 * drop-in libraries' interface (src/dropin/ito_dropin.h). */
#ifndef ITO_CORE_BASE_H
#define ITO_CORE_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "relax.h"
#include "timespec.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CACHELINE 64
/* The most workers (ITO_WORKER_LIMIT's highest value): slots of the per-worker tables. */
#define ITO_MAX_WORKERS 8192

#if defined(__SANITIZE_ADDRESS__) && !defined(ITO_ASAN)
#define ITO_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(ITO_TSAN)
#define ITO_TSAN 1
#endif

/* ---- assertions -------------------------------------------------------------
 * ITO_ASSERT(cond) checks an invariant a design note states. It is on in
 * Debug builds and in sanitizer builds, and compiled out of Release (where
 * NDEBUG is defined): the condition is then not evaluated at all, so it
 * must have no side effects. A failure prints the file, the line and the
 * condition, and aborts. */
#if !defined(NDEBUG) || ITO_ASAN || ITO_TSAN
#define ITO_ASSERTS 1
#define ITO_ASSERT(cond) (LIKELY(cond) ? (void)0 : ito__assert_fail(__FILE__, __LINE__, #cond))
#else
#define ITO_ASSERTS 0
#define ITO_ASSERT(cond) ((void)0)
#endif
HIDDEN void ito__assert_fail(const char *file, int line, const char *cond)
    __attribute__((noreturn, cold));

/* A message on stderr ("ito: ..."), then abort. */
HIDDEN void ito__fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* ---- registries --------------------------------------------------------------
 * A module registers an entry in a registry where the module is: a
 * constant object, and a pointer to it in the section named for the
 * registry. The registry walks the pointers between the linker's
 * __start_ and __stop_ symbols of that section (weak and hidden: a program
 * that links no entry sees none, and each library sees its own), so that no
 * file lists the modules. Used for configuration rows (config.h), fork
 * parts (forkpart.h) and start and stop observers (observe.h). */
#define ITO_REGISTER(reg, type, id, ...) \
  static const type id = __VA_ARGS__;    \
  static const type *const id##_entry    \
      __attribute__((used, section(#reg), aligned(sizeof(void *)))) = &id
#define ITO_REGISTRY(reg, type)                                          \
  extern const type *const __start_##reg[] __attribute__((weak)) HIDDEN; \
  extern const type *const __stop_##reg[] __attribute__((weak)) HIDDEN
#define ITO_REGISTRY_N(reg) ((int)(__stop_##reg - __start_##reg))
#define ITO_REGISTRY_AT(reg, i) (__start_##reg[i])
#define ITO_REGISTRY_ALL(reg) ((const void *const *)__start_##reg)

/* A registry's entries taken in one order: among entries[0, n) those for
 * which key gives a key (true), the one with the least key above `after`,
 * or with `down` the greatest below it; NULL when none is left. Two
 * entries that take part never share a key. Registries are short and
 * walked rarely (a start, a fork): a scan per step. */
static inline const void *ito__registry_next(const void *const *entries, int n,
                                             bool (*key)(const void *e, const void *arg, int *k),
                                             const void *arg, int after, bool down) {
  const void *best = NULL;
  int best_key = 0;
  for (int i = 0; i < n; i++) {
    int k;
    if (!key(entries[i], arg, &k) || (down ? k >= after : k <= after)) continue;
    ITO_ASSERT(!best || k != best_key);
    if (!best || (down ? k > best_key : k < best_key)) {
      best = entries[i];
      best_key = k;
    }
  }
  return best;
}

/* ---- atomics: one style for the whole project ----------------------------------
 * A word that threads share is a plain field or variable (never _Atomic,
 * never <stdatomic.h>: the public structs hold plain ints, and every file
 * reads alike), accessed through GCC's __atomic builtins with an explicit
 * order. LOAD_RLX, LOAD_ACQ, STORE_RLX and STORE_REL are the short forms
 * of the loads and stores. A shared word is read or written plainly only
 * where no other thread can touch it at once: before it is shared, or
 * where every access holds the same lock. */
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* A full memory barrier. On x86-64 a locked no-op on the stack: about 5 ns
 * here, where mfence costs 25. */
static inline void full_fence(void) {
#if defined(__x86_64__)
  __asm__ volatile("lock orq $0, (%%rsp)" ::: "memory", "cc");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* ---- spinlocks: a word, 0 free and 1 held ---------------------------------- */
/* The lock order (docs/locks.md, which says what each guards): a lock may
 * be taken while holding only locks of lower rank. Every spin_lock names
 * the rank of the lock it takes; Debug and sanitizer builds check it
 * against the locks the thread holds (its TLS block's list) and fail on a
 * lock taken twice, out of order, or held across a switch other than the
 * queue lock the scheduler lets go (ito__lock_handoff). A trylock is
 * recorded but not ordered: it never waits. */
enum {
  LR_INIT = 1,    /* runtime.c's init_lock */
  LR_IO_SETUP,    /* io/poller.c's setup_lock */
  LR_MPI_POLL,    /* (the MPI engine's exchange lock: not a spin lock) */
  LR_MPI_TABLE,   /* the MPI engine's tlock */
  LR_POLL_SETUP,  /* poll.c's setup_lock */
  LR_TLS_BUSY,    /* tls.c's busy latch */
  LR_OMP_RING,    /* an OpenMP team's ring_lock */
  LR_OMP_ID,      /* (an OpenMP member's id_lock: an exchange lock) */
  LR_QUEUE_OUTER, /* a wait queue whose locked step takes an inner one */
  LR_QUEUE,       /* every other wait queue */
  LR_LATE,        /* signal.c's late.lock */
  LR_ILOCK,       /* a thread's ilock */
  LR_TIMER,       /* timer.c's timer_lock */
  LR_STEAL,       /* a deque's steal_lock */
  LR_KEYS,        /* keys.c's key_lock */
  LR_SIG_ACTS,    /* the program's signal actions */
  LR_POOL,        /* the fiber pool's pool_lock */
  LR_OWN,         /* the fiber pool's own_lock */
  LR_HANDLES,     /* handle.c's table_lock */
  LR_TLS,         /* tls.c's ts.lock */
  LR_READY,       /* a ready queue */
  LR_MAIL,        /* a worker's mail */
  LR_SLEEP,       /* idle.c's sleep_lock */
  LR_LEAF,        /* takes nothing inside */
};
#if ITO_ASSERTS
HIDDEN void ito__lock_order(const int *l, int rank); /* before a wait: the order */
HIDDEN void ito__lock_taken(const int *l, int rank); /* recorded as held */
HIDDEN void ito__lock_given(const int *l);           /* no longer held */
HIDDEN void ito__lock_handoff(int post);             /* a switch (sched.c) */
/* 1 unless a white-box test plays several threads on one (unit_deque) */
extern int ito__lock_check HIDDEN;
#else
#define ito__lock_order(l, rank) ((void)0)
#define ito__lock_taken(l, rank) ((void)0)
#define ito__lock_given(l) ((void)0)
#define ito__lock_handoff(post) ((void)0)
#endif
/* Called every 2^20 spins of one wait for a lock (never on the way that
 * finds it free): after SPIN_LONG_S seconds it says once that the lock
 * seems never to come free, which is what a signal handler that calls
 * into ito while its thread is inside ito meets (os.c). */
HIDDEN void ito__spin_long(uint64_t *since) __attribute__((cold, noinline));
static inline void spin_lock(int *l, int rank) {
  (void)rank;
  ito__lock_order(l, rank);
  for (;;) {
    if (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0) break;
    uint64_t since = 0;
    for (unsigned n = 1; LOAD_RLX(l); n++) {
      cpu_relax();
      if (UNLIKELY(!(n & 0xFFFFF))) ito__spin_long(&since);
    }
  }
  ito__lock_taken(l, rank);
}
static inline bool spin_trylock(int *l, int rank) {
  if (LOAD_RLX(l) != 0 || __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) != 0) return false;
  (void)rank;
  ito__lock_taken(l, rank);
  return true;
}
static inline void spin_unlock(int *l) {
  ITO_ASSERT(LOAD_RLX(l) == 1); /* released by whoever holds it, once */
  ito__lock_given(l);
  __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}
/* Is the lock held (by anybody)? For assertions. */
static inline bool spin_held(const int *l) { return LOAD_RLX(l) != 0; }

#endif
