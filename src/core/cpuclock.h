/* CPU time per lightweight thread (cpuclock.c), for a drop-in's
 * pthread_getcpuclockid and clock_gettime on a thread's clock.
 *
 * Off until the program first asks for a thread's CPU clock; then every
 * switch on a worker charges the thread that leaves with the worker's
 * thread CPU time since it came (one clock_gettime per switch).
 *
 * Invariant: while the accounting is on, w->on_cpu is the thread whose
 * slice on w's OS thread began at its cpu_in (NULL while the scheduler
 * runs), and a thread's cpu_ns is the sum of its ended slices. */
#ifndef ITO_CORE_CPUCLOCK_H
#define ITO_CORE_CPUCLOCK_H

#include "base.h"

struct worker;
struct fiber;
struct ithread;

extern int ito__cpuclock_on HIDDEN;
/* What runs next on w is f (NULL: the scheduler). */
HIDDEN void ito__cpu_enter(struct worker *w, struct fiber *f);
/* Turns the accounting on (the caller's time counts from now). */
HIDDEN void ito__cpuclock_enable(void);
/* t's CPU time in nanoseconds (its share of its workers' since the
 * accounting began, and the running slice). */
HIDDEN long long ito__thread_cpu_ns(struct ithread *t);

#endif
