/* NUMA memory and the nodes in use (invariants at the top of numa.c;
 * design in docs/numa.md). The public calls are ito_numa_* of ito.h. */
#ifndef ITO_CORE_NUMA_H
#define ITO_CORE_NUMA_H

#include "base.h"

/* The nodes in use: the topology's, or 1 with ITO_NUMA=off. */
HIDDEN int ito__numa_nodes(void);

#endif
