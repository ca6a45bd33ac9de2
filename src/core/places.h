/* Places: the sets of CPUs workers are bound to (ITO_PLACES, in OpenMP's
 * forms; ITO_BIND=1 means cores). Design: docs/numa.md, "Places".
 *
 * Invariants:
 *  1. The places are set up at each start of the runtime, before any
 *     worker starts, and do not change while it runs: worker i is on place
 *     i mod count, and a worker's place never changes.
 *  2. Every place holds at least one CPU of the topology's units; a place
 *     that names no unit is refused when the runtime starts (one line,
 *     exit status 2), as a bad value is.
 *  3. Workers are bound (their OS threads' affinity set) only on the
 *     machine's own topology (topo.h, invariant 3). */
#ifndef ITO_CORE_PLACES_H
#define ITO_CORE_PLACES_H

#include "base.h"

#include <sched.h>

/* (At each start, invariant 1, places.c sets up the places of ITO_PLACES,
 * or of cores when ITO_BIND=1, or none: a start observer, observe.h.) */
/* How many places (0: none; workers are not bound to places). */
HIDDEN int ito__places_count(void);
/* Place i's CPUs (kernel numbers). */
HIDDEN const cpu_set_t *ito__place_cpus(int i);
/* Worker id's place, or -1 without places. */
HIDDEN int ito__worker_place(int id);
/* The node of the first unit of place i, or -1. */
HIDDEN int ito__place_node(int i);
/* The node of worker `id`: its place's, or without places the node of the
 * processing unit it follows (units in logical order, round robin). */
HIDDEN int ito__worker_node(int id);

#endif
