/* Idle workers: spinning, sleeping and waking, and the one sleeper that
 * waits for external events (the poll sleeper). The only code that
 * touches the idle word and the sleeper list: other C code reads it only
 * through the functions below (idle_fork_read, idle_anyone), and the
 * assembly fork reads it at the offsets asm_contract.h checks. Protocol, proofs and the Promela
 * model's map: docs/idle.md; the model is verify/idle.pml.
 *
 * Invariants:
 *  1. The idle word is S << 32 | M << 31 | H << 30 | Z: S counts the
 *     workers with spinning set plus those taken off the sleeper list that
 *     have not yet returned from ito__idle_sleep; Z is the length of the
 *     sleeper list. M and H are constant while the runtime runs.
 *  2. Z and the list change only with sleep_lock held; S changes by atomic
 *     read-modify-write only.
 *  3. A publisher of work stores it, fences (or relies on the sleeper's
 *     membarrier), then reads the word: S == 0 and Z > 0 means wake one.
 *     A sleeper adds itself to Z, runs the heavy barrier, then scans
 *     everything. One of the two sees the other.
 *  4. While threads wait for a poll source and any worker sleeps, one
 *     sleeper holds the poll role (poller), or a wake-up is on its way to
 *     make one. Only the holder gives the role up. */
#ifndef ITO_CORE_IDLE_H
#define ITO_CORE_IDLE_H

#include "asm_contract.h"
#include "base.h"
#include "os.h"

/* One per worker. */
struct idler {
  int id;
  int spinning;             /* counted in S (this worker's own field) */
  int ws_hint;              /* worker to try first after a wake-up, or -1 */
  int on_list;              /* on the sleeper list (written under sleep_lock; read without
                               it as a hint by nodeq.c) */
  int wake_word;            /* futex: 0 while asleep, 1 once woken */
  struct idler *sleep_next; /* sleeper list link (sleep_lock) */
  long spin_ns;             /* this worker's spin before sleeping (adaptive) */
};

/* What the idle protocol asks of the scheduler and the poll sources, given
 * at setup (so that this module depends on neither). */
struct idle_ops {
  /* G3: is there anything this worker could run? 1 + the id of a worker
   * with work, -1 for something else (stop, mail, a timer due), 0. */
  int (*scan)(int self);
  /* Nanoseconds until the next timer (-1: none). */
  long (*next_timer_ns)(void);
  /* The poll sleeper's wait: until an event, a kick or timeout_ns (-1:
   * none); > 0 if it made threads ready. */
  int (*wait_events)(long timeout_ns);
  /* Ends a wait_events, now or the next time one starts (sticky). */
  void (*kick)(void);
};

/* The idle word, on a cache line of its own. */
struct ito_idle_word {
  uint64_t v;
  char pad[CACHELINE - 8];
} __attribute__((aligned(CACHELINE)));
extern struct ito_idle_word ito__rt_idle HIDDEN;

#define IDLE_SPIN_ONE (1ULL << IDLE_SHIFT_S)
#define IDLE_SYM (1ULL << IDLE_BIT_SYM)
#define IDLE_HOOKS (1ULL << IDLE_BIT_HOOKS)
#define IDLE_FLAGS (IDLE_SYM | IDLE_HOOKS)
static inline uint32_t idle_S(uint64_t x) { return (uint32_t)(x >> IDLE_SHIFT_S); }
static inline uint32_t idle_Z(uint64_t x) { return (uint32_t)(x & (IDLE_HOOKS - 1)); }

/* The fork's read of the word (P2 of docs/idle.md, after its fence or
 * the asymmetric one): nonzero when somebody spins or sleeps, or a
 * recorder is attached (IDLE_HOOKS); the mode flag masked out. Decoded by
 * the fork's slow path with idle_S and the flags. */
static inline uint64_t idle_fork_read(void) {
  return __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED) & ~IDLE_SYM;
}
/* Whether any worker spins or sleeps (the monitor's view, ordered with its
 * other reads). */
static inline bool idle_anyone(void) {
  return (__atomic_load_n(&ito__rt_idle.v, __ATOMIC_SEQ_CST) & ~IDLE_FLAGS) != 0;
}

/* At each start: the workers' idlers, the policy, the flags. */
HIDDEN void ito__idle_setup(struct idler **idlers, int n, const struct idle_ops *ops, bool active,
                            long spin_ns, bool hooks);
HIDDEN void ito__idle_init(struct idler *w, int id);

/* P2 and P3 of docs/idle.md, after work was published (P1). full: the
 * publisher fences (every path but the fork's). Returns what it found:
 * IDLE_NOBODY, IDLE_SPINNERS (somebody spins: it will try to steal), or
 * IDLE_WOKE (a sleeper was woken for this worker's work). */
enum { IDLE_NOBODY = 0, IDLE_SPINNERS, IDLE_WOKE };
/* wake_one: if nobody spins and somebody sleeps, the sleeper on top (a
 * futex sleeper rather than the poll sleeper) becomes a spinner that tries
 * hint's work first (hint < 0: none). Returns IDLE_WOKE or IDLE_NOBODY. */
HIDDEN int ito__idle_wake_one(int hint);
static inline int idle_after_publish(int hint, bool full) {
  if (full || !ito__asym_fence)
    full_fence();
  else
    __asm__ volatile("" ::: "memory");
  uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED) & ~IDLE_FLAGS;
  if (LIKELY(!x)) return IDLE_NOBODY;
  if (x >= IDLE_SPIN_ONE) return IDLE_SPINNERS;
  return ito__idle_wake_one(hint);
}

/* w has work only it may run (mail): wake it if it sleeps. */
HIDDEN void ito__idle_wake(struct idler *w);
/* Shutdown: every sleeper is woken. */
HIDDEN void ito__idle_wake_all(void);

/* May w become a spinner? (The policy of docs/idle.md.) */
HIDDEN bool ito__idle_start_spinning(struct idler *w);
/* w stops spinning; IDLE_WOKE if it woke a replacement (to try its work
 * first), else IDLE_NOBODY. */
HIDDEN int ito__idle_stop_spinning(struct idler *w);
/* G1-G5: w sleeps until woken or until the scan finds work; returns with w
 * a spinner, w->ws_hint naming where to look first (or -1). */
HIDDEN void ito__idle_sleep(struct idler *w);
/* The spin time before the next sleep has passed? (spin_t0: when the spin
 * started.) Never with the active policy. */
HIDDEN bool ito__idle_spun_out(const struct idler *w, long long spin_t0);

/* The number of workers changed by delta (an extra worker started or
 * retired: monitor.h); it steers the spin policy only. */
HIDDEN void ito__idle_resize(int delta);
/* An extra worker leaves for good: it stops spinning and scans once more
 * (after the heavy barrier). Returns what the scan found (as ops.scan):
 * nonzero, and w is a spinner again (ws_hint set), or 0, and w counts
 * nowhere in the word. */
HIDDEN int ito__idle_leave(struct idler *w);

/* ---- threads that wait for a poll source (docs/idle.md, "Blocking I/O in
 * the model") ---- */
/* A thread is about to wait: counted, and the first one wakes a sleeper to
 * take the poll role if every worker sleeps and nobody holds it. */
HIDDEN void ito__idle_waiter_arrives(void);
HIDDEN void ito__idle_waiter_leaves(void);
/* Threads waiting for poll sources: the scheduler's one relaxed load. */
extern int ito__idle_waiters HIDDEN;
static inline bool idle_waiters_any(void) { return LOAD_RLX(&ito__idle_waiters) != 0; }

#endif
