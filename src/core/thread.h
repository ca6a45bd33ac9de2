/* Lightweight threads: the descriptor, its handles and its life (create,
 * join, detach, exit). Design: docs/scheduler.md, "Threads".
 *
 * Invariants:
 *  1. sync goes RUNNING -> EXITING -> DONE (by the ending thread, once its
 *     stack is left) -> CLAIMED (by the joiner, which then releases the
 *     descriptor). A detached thread is released by the last of its
 *     references (detach_refs), never claimed.
 *  2. A release bumps the handle's generation (ito__handle_retire) before
 *     it resets flags and sync, so a handle that went stale meanwhile
 *     reads a new generation and fails.
 *  3. The parking side of a join is never the last to touch the
 *     descriptor (waiter.parking, detach_refs).
 *  4. Threads alive = created - ended, each a sum of counters that only
 *     grow; ito__live_threads reads every ended counter before any created
 *     one, so a result of 0 means that at one instant no thread other
 *     than the root was alive (docs/scheduler.md, "Counting threads"). */
#ifndef ITO_CORE_THREAD_H
#define ITO_CORE_THREAD_H

#include <ito/ito.h>

#include "base.h"
#include "waitq.h"

typedef struct ithread {
  uint32_t idx;    /* its slot in the handle table (handle.h) */
  int flags;       /* TH_* */
  int sync;        /* TS_* */
  int detach_refs; /* detached while running: the detacher and the ending thread
                      each drop one, the last releases the descriptor */
  waiter *joiner;  /* NULL, a joiner's waiter, or JOINER_DETACHED */
  void *(*fn)(void *);
  void *arg;
  void *result;
  void **keys; /* ITO_KEYS_MAX + KEYS_RESERVED slots, allocated on first set */
  int pin;     /* > 0: stays on its OS thread (ito__thread_pin) */
  /* what a drop-in library keeps per thread and reads back (the program's
   * view; ito schedules none of it): its name ("" never set), scheduling
   * policy and priority, and whether its creation named them */
  char name[16];
  int policy, prio, explicit_sched;
  /* signals (signal.h): the mask, what was sent to it and waits for
   * delivery, what it waits for in sigwait, the infos (allocated on first
   * need, kept with the descriptor), its interruptible wait (under
   * ilock; iflight counts the interrupters working on it), and the result of
   * its last delivery (0 none, 1 all SA_RESTART, 2 not) */
  uint64_t sigmask, sigpend, sigwaitset;
  uint64_t osmask; /* what its worker's OS thread blocks while it runs: sigmask,
                      or every asynchronous signal in sigsuspend */
  struct sig_infos *siginfo;
  struct sig_intr *intr;
  int ilock, iflight;
  signed char sig_last;
  signed char sig_live; /* a program thread that signals can be routed to */
  /* it has ended for signals of the process (under ilock: what it had not
   * taken of them, sigproc, goes back to the process; signal.h,
   * invariant 7) */
  signed char sig_closed;
  /* parked in a wait that delivers its signals itself once it is over
   * (ito__suspend then does not: a handler's own waits would use the
   * fiber's waiter, which the wait still reads, or its timer still names) */
  signed char sig_self;
  int cancel;       /* a drop-in's cancellation state: CANCEL_* */
  uint64_t sigproc; /* signals of the process among sigpend (routed or claimed to it) */
  /* a cancellable join parked on joining, with its waiter (under ilock;
   * ito__join_cancel) */
  struct ithread *joining;
  waiter *joining_w;
  long long cpu_ns; /* CPU time charged to it (cpuclock.h) */
  long long cpu_in; /* its worker's thread CPU time when it last came on */
  /* preemption (preempt.h): a team member of a drop-in library, preemptible
   * while set (never inside a kernel signal frame of ito's, nor inside a
   * call to another object's code: fiber.in_handler, fiber.callout) */
  int preempt;
} ithread;

enum { TS_RUNNING = 0, TS_EXITING = 1, TS_DONE = 2, TS_CLAIMED = 3 };
/* cancel: requested; disabled by the thread; asynchronous type; being
 * acted on. A request ends an interruptible wait as a signal does
 * (signal.h) while it is enabled. */
enum {
  CANCEL_PENDING = 1,
  CANCEL_DISABLED = 2,
  CANCEL_ASYNC = 4,
  CANCEL_ACTING = 8,
  CANCEL_SEEN = 16 /* a wait was ended for the request */
};
#define JOINER_DETACHED ((waiter *)1)
/* TH_ANON: detached from birth and never handed out (ito__thread_spawn) */
/* TH_GHOST: a thread of the parent, seen in a child after fork (atfork.h) */
enum { TH_ROOT = 1, TH_DETACHED = 2, TH_ANON = 4, TH_GHOST = 8 };

/* ---- creation ------------------------------------------------------------------------------ */
struct fiber;
/* How a thread starts: at once on the creator's worker (the creator's
 * continuation can be stolen meanwhile: work first), or queued. */
struct thread_opts {
  int detached;
  int queue; /* queue the child rather than run it first */
  int anon;  /* a detached task (ito__thread_spawn): no TLS block of its own */
  int policy, prio, explicit_sched; /* the drop-in's, set before the child runs: the policy
                                        and priority named (explicit_sched) or inherited */
  int has_sigmask;                  /* the child's signal mask is sigmask, not its creator's */
  uint64_t sigmask;
  int placed; /* PLACED_KNOWN or PLACED_UNKNOWN (nodeq.h): started with data, whose
                 node is `node` (KNOWN); else 0, and the child takes its creator's */
  int node;
};
/* Starts fn(arg) on the fresh fiber f; *out gets the descriptor, *hout
 * (if not NULL) the handle, before the child runs. */
HIDDEN int ito__thread_start(struct fiber *f, void *(*fn)(void *), void *arg,
                             const struct thread_opts *o, ithread **out, ito_thread_t *hout);
/* A detached thread that runs fn on a copy of size bytes of arg (aligned
 * to align; made by cpy(dst, arg) when cpy is given): at once on a fresh
 * stack holding the copy when the caller is an ito thread, else queued
 * with a heap copy. The new stack's context word starts as ctx, or as the
 * copy's address when ctx is THREAD_CTX_COPY. home >= 0: the thread lives
 * on worker home (placement); THREAD_QUEUED: queued on the caller's worker
 * for any worker to take, the caller going on (help-first); -1: work-first
 * where it can. 0 or EAGAIN. */
#define THREAD_CTX_COPY ((void *)1)
#define THREAD_QUEUED (-2)
HIDDEN int ito__thread_spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                             void (*cpy)(void *, void *), void *ctx, int home);
/* The same, work-first, for a task with data on node (-1: none known),
 * placed as ito_create_near places a thread (nodeq.h). */
HIDDEN int ito__thread_spawn_node(void (*fn)(void *), const void *arg, size_t size, size_t align,
                                  void (*cpy)(void *, void *), void *ctx, int node);
/* Threads other than the root still alive (invariant 4). */
HIDDEN long ito__live_threads(void);
/* Threads ever counted as created (for the drop-in library's report). */
HIDDEN unsigned long ito__threads_created(void);

/* ---- for the scheduler ----------------------------------------------------------------------- */
/* The thread ended and its stack is left: DONE, and its joiner woken (or
 * the descriptor released). */
HIDDEN void ito__thread_done(ithread *t);
/* Descriptor of the root (the program's main thread, adopted). */
HIDDEN ithread *ito__thread_adopt_root(struct fiber *f);

/* ---- pinning: while pin > 0 the thread stays on its OS thread ------------------------------ */
/* ito_join; cancellable: a cancellation request (enabled) ends a parked
 * joiner's wait with ECANCELED, the thread left joinable (the drop-in's
 * pthread_join). */
HIDDEN int ito__join(ito_thread_t h, void **result, bool cancellable);
/* j has a cancellation request: its cancellable join, if parked, ends. */
HIDDEN void ito__join_cancel(ithread *j);
/* j has a signal to see: if it is parked in a cancellable join, it leaves
 * the join (EINTR), its handler runs, and the join goes on. True if j was
 * in such a join. */
HIDDEN bool ito__join_signal(ithread *j);
HIDDEN void ito__thread_pin(void);
HIDDEN void ito__thread_unpin(void);
/* The same, and then, unpinned, to the home it was given while pinned. */
HIDDEN void ito__thread_unpin_move(void);

/* ---- thread-specific data (keys.c) ----------------------------------------------------------- */
/* Keys beyond the program's ITO_KEYS_MAX, for the drop-in libraries' own
 * per-thread values (pthread cleanup buffers, sigaltstack), so that a
 * program under one has as many keys as under glibc. */
#define KEYS_RESERVED 8
/* A reserved key (EAGAIN when all are taken), and its value get and set
 * (keys of either range). */
HIDDEN int ito__key_create_reserved(ito_key_t *key, void (*destructor)(void *));
HIDDEN void *ito__key_get(ito_key_t key);
HIDDEN int ito__key_set(ito_key_t key, const void *value);
/* Values main set before the runtime started (for the root). */
HIDDEN void **ito__take_os_keys(void);
/* A thread's value array back to the spares (keys.c). */
HIDDEN void ito__keys_free(void **slots);
/* Destructors of t's values, at its end (until none is left, at most 4
 * rounds, as POSIX does). */
HIDDEN void ito__run_key_destructors(ithread *t);

#endif
