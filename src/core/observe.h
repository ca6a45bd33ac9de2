/* Start and stop observers: what a module does at each start and stop of
 * the runtime, registered where the module is (ITO_OBSERVE, in the
 * ito_observe registry of base.h) and run by runtime.c, which names none
 * of them. Design: docs/architecture.md, "Start-up" and "Shut-down".
 *
 * Invariants:
 *  1. Observers run at the point they registered for, in ascending order;
 *     two observers of one point never share an order. Those of the
 *     runtime's points run with its init lock held; those of
 *     OBSERVE_WORKER on each worker's OS thread as it starts (an extra
 *     worker the monitor starts later too), without it.
 *  2. At OBSERVE_SETUP the workers of the start exist and are counted
 *     (ito__nworkers) but none runs and the idle word is not set up; at
 *     OBSERVE_LAUNCHED every worker runs; at OBSERVE_RUNNING the state is
 *     RT_RUNNING; at OBSERVE_STOPPED every worker has stopped and been
 *     joined. At OBSERVE_WORKER, cur_worker() is the worker whose OS thread
 *     runs the observer, and its cur is the adopted main thread's fiber
 *     (worker 0 of a runtime started on main) or NULL; its scheduler has
 *     not run yet. */
#ifndef ITO_CORE_OBSERVE_H
#define ITO_CORE_OBSERVE_H

#include "base.h"

enum {
  OBSERVE_SETUP,
  OBSERVE_LAUNCHED,
  OBSERVE_RUNNING,
  OBSERVE_STOPPED,
  OBSERVE_WORKER,
  OBSERVE_POINTS
};

struct ito_observer {
  int point; /* OBSERVE_* */
  int order; /* within the point, lower first */
  void (*fn)(void);
};

#define ITO_OBSERVE(id, point, order, fn) \
  ITO_REGISTER(ito_observe, struct ito_observer, id, {point, order, fn})

/* The orders, one place for all of them (invariant 1). */
enum {
  /* OBSERVE_SETUP */
  OBS_SEGV = 5,     /* overflow.c: its SIGSEGV and SIGBUS handler, before any worker runs */
  OBS_PROFILE = 10, /* profile.c: its recorder attached before the idle word is set up */
  OBS_NUMA = 20,    /* topo.c: says so when ITO_NUMA=on finds one node */
  OBS_PLACES = 30,  /* places.c: before any worker binds itself (places.h, invariant 1) */
  OBS_NODEQ = 40,   /* nodeq.c: after the places: workers' nodes follow them */
  /* OBSERVE_LAUNCHED */
  OBS_SIGNALS = 10, /* signal.c: process signals routed (signal.h, invariant 6) */
  OBS_MONITOR = 20, /* monitor.c: the monitor thread */
  OBS_SETXID = 30,  /* setxid.c: answers glibc's own set*id (after glibc's, at its first thread) */
  /* OBSERVE_RUNNING, OBSERVE_STOPPED: the profiler's (OBS_PROFILE) */
  /* OBSERVE_WORKER */
  OBS_TLS_WORKER = 10, /* tls.c: the worker's own block (the adopted main keeps its own) */
  OBS_SIG_WORKER = 20, /* signal.c: the OS thread's mask (main's becomes the root's) */
  OBS_ALTSTACK = 30,   /* overflow.c: the alternate stack overflow reports run on */
};

/* Runs the observers of point (invariant 1; runtime.c). */
HIDDEN void ito__observe(int point);

#endif
