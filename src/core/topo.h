/* The machine's topology: its NUMA nodes, the processing units of each and
 * the distances between nodes, from hwloc (never parsed from /sys by
 * hand); one node when ito was built without hwloc or hwloc sees nothing
 * usable. Design: docs/numa.md.
 *
 * Invariants:
 *  1. Loaded once per process, on first use, and never changed after: the
 *     pointer ito__topo() returns stays valid for the life of the process.
 *  2. nodes >= 1 and pus >= 1; every processing unit belongs to exactly one
 *     node (a unit hwloc puts under no node goes to node 0); nodes are
 *     numbered 0 .. nodes-1 in hwloc's logical order, which is what the
 *     API's node numbers mean; os_node[] maps them to the kernel's.
 *  3. `real` is set only when the topology is this machine's (not a
 *     synthetic or XML one given to hwloc for tests): only then are
 *     threads bound to its units or memory to its nodes' kernel numbers. */
#ifndef ITO_CORE_TOPO_H
#define ITO_CORE_TOPO_H

#include "base.h"

/* The kinds of groups of units the places' abstract names name. */
enum { TOPO_PU = 0, TOPO_CORE, TOPO_LLC, TOPO_NUMA, TOPO_SOCKET, TOPO_KINDS };

struct topo {
  int nodes;                       /* NUMA nodes (invariant 2) */
  int groups[TOPO_KINDS];          /* how many of each kind */
  const int *group_of[TOPO_KINDS]; /* [pus] each unit's group of that kind, in logical order */
  int pus;                         /* processing units */
  const int *pu_os;   /* [pus] the kernel's CPU number of each unit, in logical order */
  const int *pu_node; /* [pus] the node of each unit */
  const int *os_node; /* [nodes] the kernel's number of each node */
  const int *dist;    /* [nodes * nodes] relative distance, 10 on the diagonal */
  bool real;          /* this machine's topology (invariant 3) */
  const char *source; /* where it came from, for messages and the docs' tests */
};

/* The topology (invariant 1). */
HIDDEN const struct topo *ito__topo(void);
/* The node (0 .. nodes-1) whose kernel number is os, or -1. */
HIDDEN int ito__topo_node_of_os(int os);
/* The NUMA nodes in use: the topology's, or 1 with ITO_NUMA=off, or with
 * ITO_NUMA=auto where the kernel lets this process use one node only (the
 * topology is then not loaded). */
HIDDEN int ito__numa_nodes(void);
/* The nodes a node mask of the kernel's holds here (get_mempolicy, mbind). */
#define NODE_MASK_BITS 1024

#endif
