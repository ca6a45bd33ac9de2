/* Start-up and shut-down of the runtime: the workers, the root thread.
 * Design: docs/architecture.md ("Start-up", "Shut-down").
 *
 * Invariants:
 *  1. state goes OFF -> STARTING -> RUNNING -> STOPPING -> OFF, changed
 *     only with the init lock held; a failed start goes back to OFF with
 *     every worker it started stopped again.
 *  2. While RUNNING, the configured workers (ito__nworkers) and the
 *     settings do not change; the slots in use (ito__nslots) only grow,
 *     as the monitor adds extra workers, and a slot's memory is never
 *     freed. */
#ifndef ITO_CORE_RUNTIME_H
#define ITO_CORE_RUNTIME_H

#include "base.h"

#include <sched.h>

/* The scheduler's settings (its rows in runtime.c), as of the last start
 * (config.h, invariant 3). */
struct ito_settings {
  long workers;       /* ITO_NUM_WORKERS (default: the usable CPUs) */
  size_t stack_size;  /* ITO_STACK_SIZE, rounded up to pages */
  int stack_guard;    /* ITO_STACK_GUARD: GUARD_* of fiber.h */
  size_t stack_cache; /* ITO_STACK_CACHE: bytes of free stacks kept resident */
  int deque_fence;    /* ITO_DEQUE_FENCE: 1 symmetric (a fence in each pop) */
  int wait_active;    /* ITO_WAIT_POLICY: 1 active (idle workers never sleep) */
  long spin_us;       /* ITO_SPIN_US */
};
extern struct ito_settings ito__cfg HIDDEN;

enum { RT_OFF = 0, RT_STARTING, RT_RUNNING, RT_STOPPING };

extern int ito__rt_state_ HIDDEN;
static inline int ito__rt_state(void) { return __atomic_load_n(&ito__rt_state_, __ATOMIC_ACQUIRE); }
static inline bool ito__running(void) { return ito__rt_state() == RT_RUNNING; }
/* Starts the runtime if it is not running: 0, or EAGAIN / ENOMEM when
 * workers or their memory could not be made. */
HIDDEN int ito__ensure(void);
/* Called at the end of each start of the runtime, when set (a drop-in
 * library's early set-up of what its calls need: ito__dropin_io_early). */
extern void (*ito__rt_at_start)(void) HIDDEN;
/* CPU affinity: the process's CPUs at start; the CPU worker id is bound to
 * (-1: none); binds every worker (once; later ones bind themselves). */
HIDDEN const cpu_set_t *ito__process_cpus(void);
HIDDEN int ito__worker_cpu(int id);
HIDDEN void ito__bind_all(void);
/* The root thread's descriptor while the runtime runs (else NULL). */
struct ithread;
HIDDEN struct ithread *ito__root_thread(void);
/* Is the calling ito thread the root (the program's main thread)? */
HIDDEN bool ito__is_root(void);
/* The root's home (ito__dropin_root_stay; docs/openmp.md, "The initial
 * thread's OS thread"):
 * asked before the start, applied when main is adopted. */
HIDDEN void ito__root_stay_ask(void);
HIDDEN bool ito__root_stays(void);

#endif
