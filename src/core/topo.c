/* The machine's topology from hwloc (invariants at the top of topo.h;
 * design in docs/numa.md). */
#define _GNU_SOURCE
#include "topo.h"

#include "config.h"
#include "observe.h"
#include "os.h"
#include "relax.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/mempolicy.h>
#include <sys/syscall.h>

#if ITO_HAVE_HWLOC
#include <dlfcn.h>
#include <hwloc.h>
#endif

static struct topo topo;
static int loaded; /* 0, 1 loading, 2 loaded */

/* The CPUs the process may use, as it started: read when the library is
 * loaded, before ito (or a runtime before it) bound the main thread to
 * one place; the topology may be loaded after that. */
static cpu_set_t start_cpus;
static int have_start_cpus;
__attribute__((constructor)) static void topo_start_cpus(void) {
  have_start_cpus = sched_getaffinity(0, sizeof start_cpus, &start_cpus) == 0;
}

/* One node holding the CPUs the process may use. */
static void one_node(const char *why) {
  static int os_node0[1] = {0}, dist0[1] = {10};
  cpu_set_t cpus;
  if (have_start_cpus)
    cpus = start_cpus;
  else if (sched_getaffinity(0, sizeof cpus, &cpus) != 0)
    CPU_ZERO(&cpus);
  int n = CPU_COUNT(&cpus);
  if (n < 1) n = 1;
  int *os = malloc(sizeof(int) * (size_t)n), *node = calloc((size_t)n, sizeof(int));
  if (!os || !node) {
    free(os);
    free(node);
    static int cpu0[1] = {0}, node0[1] = {0};
    os = cpu0;
    node = node0;
    n = 1;
  } else {
    int k = 0;
    for (int c = 0; c < CPU_SETSIZE && k < n; c++)
      if (CPU_ISSET(c, &cpus)) os[k++] = c;
    if (k == 0) os[k++] = 0;
    n = k;
  }
  topo = (struct topo){.nodes = 1,
                       .pus = n,
                       .pu_os = os,
                       .pu_node = node,
                       .os_node = os_node0,
                       .dist = dist0,
                       .real = true,
                       .source = why};
  /* without hwloc: each unit its own core and cache, one node, one socket */
  int *ident = malloc(sizeof(int) * (size_t)n);
  if (ident)
    for (int i = 0; i < n; i++) ident[i] = i;
  const int *self = ident ? ident : node;
  int selfn = ident ? n : 1;
  topo.groups[TOPO_PU] = topo.groups[TOPO_CORE] = topo.groups[TOPO_LLC] = selfn;
  topo.group_of[TOPO_PU] = topo.group_of[TOPO_CORE] = topo.group_of[TOPO_LLC] = self;
  topo.groups[TOPO_NUMA] = topo.groups[TOPO_SOCKET] = 1;
  topo.group_of[TOPO_NUMA] = topo.group_of[TOPO_SOCKET] = node;
}

#if ITO_HAVE_HWLOC
/* hwloc is loaded when the topology is first asked for, not linked: a
 * program that never asks (most of them: ITO_NUMA=auto reads the
 * topology only when a NUMA call or ITO_PLACES needs it) does not load it
 * and the libraries it pulls in (about 250,000 instructions of the
 * loader's at every start, measured with callgrind), and their TLS is not
 * mistaken for the program's. Only functions the library exports are
 * called: hwloc.h's inline helpers (hwloc_get_obj_by_type, ...) would
 * name them at link time, so their few lines are written out below. */
static struct {
  int (*topology_init)(hwloc_topology_t *);
  void (*topology_destroy)(hwloc_topology_t);
  int (*topology_load)(hwloc_topology_t);
  int (*set_all_types_filter)(hwloc_topology_t, enum hwloc_type_filter_e);
  int (*set_type_filter)(hwloc_topology_t, hwloc_obj_type_t, enum hwloc_type_filter_e);
  int (*is_thissystem)(hwloc_topology_t);
  int (*get_type_depth)(hwloc_topology_t, hwloc_obj_type_t);
  unsigned (*get_nbobjs_by_depth)(hwloc_topology_t, int);
  hwloc_obj_t (*get_obj_by_depth)(hwloc_topology_t, int, unsigned);
  int (*bitmap_isset)(hwloc_const_bitmap_t, unsigned);
  int (*distances_get_by_type)(hwloc_topology_t, hwloc_obj_type_t, unsigned *,
                               struct hwloc_distances_s **, unsigned long, unsigned long);
  void (*distances_release)(hwloc_topology_t, struct hwloc_distances_s *);
} hw;

static bool hw_load(void) {
  void *h = dlopen(ITO_HWLOC_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
#define HW(field, name)                   \
  do {                                    \
    *(void **)&hw.field = dlsym(h, name); \
    if (!hw.field) return false;          \
  } while (0)
  HW(topology_init, "hwloc_topology_init");
  HW(topology_destroy, "hwloc_topology_destroy");
  HW(topology_load, "hwloc_topology_load");
  HW(set_all_types_filter, "hwloc_topology_set_all_types_filter");
  HW(set_type_filter, "hwloc_topology_set_type_filter");
  HW(is_thissystem, "hwloc_topology_is_thissystem");
  HW(get_type_depth, "hwloc_get_type_depth");
  HW(get_nbobjs_by_depth, "hwloc_get_nbobjs_by_depth");
  HW(get_obj_by_depth, "hwloc_get_obj_by_depth");
  HW(bitmap_isset, "hwloc_bitmap_isset");
  HW(distances_get_by_type, "hwloc_distances_get_by_type");
  HW(distances_release, "hwloc_distances_release");
#undef HW
  return true; /* (kept loaded: the topology's objects are read from it once) */
}

static int nbobjs(hwloc_topology_t t, hwloc_obj_type_t type) {
  int d = hw.get_type_depth(t, type);
  if (d == HWLOC_TYPE_DEPTH_UNKNOWN || d == HWLOC_TYPE_DEPTH_MULTIPLE) return 0;
  return (int)hw.get_nbobjs_by_depth(t, d);
}

static hwloc_obj_t obj(hwloc_topology_t t, hwloc_obj_type_t type, unsigned i) {
  int d = hw.get_type_depth(t, type);
  if (d == HWLOC_TYPE_DEPTH_UNKNOWN || d == HWLOC_TYPE_DEPTH_MULTIPLE) return NULL;
  return hw.get_obj_by_depth(t, d, i);
}

static hwloc_obj_t ancestor(hwloc_obj_t o, hwloc_obj_type_t type) {
  for (o = o ? o->parent : NULL; o; o = o->parent)
    if (o->type == type) return o;
  return NULL;
}

/* From hwloc: nodes, units, distances. 0, or -1 when hwloc gave nothing
 * usable (then one_node). */
static int from_hwloc(void) {
  hwloc_topology_t t;
  if (hw.topology_init(&t) != 0) return -1;
  /* only what ito uses: loading caches, bridges and devices costs a
   * millisecond at every start */
  hw.set_all_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hw.set_type_filter(t, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hw.set_type_filter(t, HWLOC_OBJ_PACKAGE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hw.set_type_filter(t, HWLOC_OBJ_L3CACHE, HWLOC_TYPE_FILTER_KEEP_ALL);
  /* groups that hold NUMA nodes: without them a node hangs from the
   * machine, and its CPU set is the whole machine's */
  hw.set_type_filter(t, HWLOC_OBJ_GROUP, HWLOC_TYPE_FILTER_KEEP_STRUCTURE);
  if (hw.topology_load(t) != 0) {
    hw.topology_destroy(t);
    return -1;
  }
  int nn = nbobjs(t, HWLOC_OBJ_NUMANODE);
  int np = nbobjs(t, HWLOC_OBJ_PU);
  if (nn < 1 || np < 1) {
    hw.topology_destroy(t);
    return -1;
  }
  int *pu_os = malloc(sizeof(int) * (size_t)np), *pu_node = calloc((size_t)np, sizeof(int));
  int *os_node = malloc(sizeof(int) * (size_t)nn), *dist = malloc(sizeof(int) * (size_t)(nn * nn));
  /* the objects, looked up once */
  hwloc_obj_t *pus = malloc(sizeof(hwloc_obj_t) * (size_t)np);
  hwloc_obj_t *nodes = malloc(sizeof(hwloc_obj_t) * (size_t)nn);
  if (!pu_os || !pu_node || !os_node || !dist || !pus || !nodes) {
    free(pu_os), free(pu_node), free(os_node), free(dist), free(pus), free(nodes);
    hw.topology_destroy(t);
    return -1;
  }
  for (int p = 0; p < np; p++) pus[p] = obj(t, HWLOC_OBJ_PU, (unsigned)p);
  for (int i = 0; i < nn; i++) {
    nodes[i] = obj(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
    os_node[i] = (int)nodes[i]->os_index;
  }
  for (int p = 0; p < np; p++) {
    hwloc_obj_t pu = pus[p];
    pu_os[p] = (int)pu->os_index;
    pu_node[p] = 0; /* a unit under no node: node 0 (invariant 2) */
    for (int i = 0; i < nn; i++) {
      if (hw.bitmap_isset(nodes[i]->cpuset, pu->os_index)) {
        pu_node[p] = i;
        break;
      }
    }
  }
  /* distances: the firmware's (SLIT) when hwloc has them, else 10 near and
   * 20 far */
  for (int i = 0; i < nn; i++)
    for (int j = 0; j < nn; j++) dist[i * nn + j] = i == j ? 10 : 20;
  unsigned nr = 1;
  struct hwloc_distances_s *d = NULL;
  if (hw.distances_get_by_type(t, HWLOC_OBJ_NUMANODE, &nr, &d, HWLOC_DISTANCES_KIND_MEANS_LATENCY,
                               0) == 0 &&
      nr == 1 && d) {
    for (unsigned a = 0; a < d->nbobjs; a++)
      for (unsigned b = 0; b < d->nbobjs; b++) {
        int i = (int)d->objs[a]->logical_index, j = (int)d->objs[b]->logical_index;
        if (i < nn && j < nn && d->values[a * d->nbobjs + b] > 0)
          dist[i * nn + j] = (int)d->values[a * d->nbobjs + b];
      }
    hw.distances_release(t, d);
  }
  /* the groups of each kind: a unit's ancestor of that type (the unit
   * itself when it has none: a core or cache hwloc does not show) */
  static const hwloc_obj_type_t types[TOPO_KINDS] = {[TOPO_PU] = HWLOC_OBJ_PU,
                                                     [TOPO_CORE] = HWLOC_OBJ_CORE,
                                                     [TOPO_LLC] = HWLOC_OBJ_L3CACHE,
                                                     [TOPO_NUMA] = HWLOC_OBJ_NUMANODE,
                                                     [TOPO_SOCKET] = HWLOC_OBJ_PACKAGE};
  int *gof[TOPO_KINDS] = {0};
  int ng[TOPO_KINDS] = {0};
  for (int k = 0; k < TOPO_KINDS; k++) {
    gof[k] = malloc(sizeof(int) * (size_t)np);
    if (!gof[k]) continue;
    if (k == TOPO_NUMA) {
      memcpy(gof[k], pu_node, sizeof(int) * (size_t)np);
      ng[k] = nn;
      continue;
    }
    /* groups numbered by first appearance in the units' logical order */
    int *seen = malloc(sizeof(int) * (size_t)np); /* group's object logical index */
    for (int p = 0; p < np && seen; p++) {
      hwloc_obj_t pu = pus[p];
      hwloc_obj_t a = k == TOPO_PU ? pu : ancestor(pu, types[k]);
      int key = a ? (int)a->logical_index : -1 - p;
      int g = -1;
      for (int j = 0; j < ng[k]; j++)
        if (seen[j] == key) g = j;
      if (g < 0) {
        g = ng[k]++;
        seen[g] = key;
      }
      gof[k][p] = g;
    }
    if (!seen) {
      for (int p = 0; p < np; p++) gof[k][p] = p;
      ng[k] = np;
    }
    free(seen);
  }
  free(pus);
  free(nodes);
  bool real = hw.is_thissystem(t) != 0;
  hw.topology_destroy(t);
  topo = (struct topo){.nodes = nn,
                       .pus = np,
                       .pu_os = pu_os,
                       .pu_node = pu_node,
                       .os_node = os_node,
                       .dist = dist,
                       .real = real,
                       .source = real ? "hwloc" : "hwloc (a synthetic or XML topology)"};
  for (int k = 0; k < TOPO_KINDS; k++) {
    if (!gof[k]) { /* out of memory: one group per unit */
      gof[k] = pu_node;
      ng[k] = nn;
    }
    topo.groups[k] = ng[k];
    topo.group_of[k] = gof[k];
  }
  return 0;
}
#endif

const struct topo *ito__topo(void) {
  if (LIKELY(__atomic_load_n(&loaded, __ATOMIC_ACQUIRE) == 2)) return &topo;
  int expect = 0;
  if (__atomic_compare_exchange_n(&loaded, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
#if ITO_HAVE_HWLOC
    if (!hw_load())
      one_node("one node (" ITO_HWLOC_SONAME " could not be loaded)");
    else if (from_hwloc() != 0)
      one_node("one node (hwloc saw nothing usable)");
#else
    one_node("one node (ito was built without hwloc)");
#endif
    __atomic_store_n(&loaded, 2, __ATOMIC_RELEASE);
  } else {
    while (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE) != 2) cpu_relax();
  }
  return &topo;
}

int ito__topo_node_of_os(int os) {
  const struct topo *t = ito__topo();
  for (int i = 0; i < t->nodes; i++)
    if (t->os_node[i] == os) return i;
  return -1;
}

/* ---- the nodes in use ------------------------------------------------------------------ */

enum { NUMA_AUTO = 0, NUMA_ON, NUMA_OFF };

/* ITO_NUMA (config.h) */
static struct nodes_settings { int mode; /* NUMA_* */ } nodes_cfg;
static const struct ito_cfg_choice numa_words[] = {
    {"auto", NUMA_AUTO}, {"on", NUMA_ON}, {"off", NUMA_OFF}, {0, 0}};
static const struct ito_cfg nodes_rows[] = {
    {.name = "ITO_NUMA",
     .kind = ITO_CFG_CHOICE,
     .dst = &nodes_cfg.mode,
     .choices = numa_words,
     .dflt = "auto",
     .what = "NUMA nodes: auto (on with more than one), on, off"},
};
ITO_CONFIG_MODULE(nodes_config, nodes_rows, nodes_cfg, NULL, NULL);

/* Whether the kernel lets this process place memory on one node only
 * (get_mempolicy with MPOL_F_MEMS_ALLOWED: one system call, once), unless
 * hwloc is told to describe another machine (a synthetic or XML topology
 * for tests, hwloc's own variables): then hwloc's nodes count. With
 * ITO_NUMA=auto on such a machine, the topology is not loaded at all, so
 * that NUMA support costs a program of one node nothing (docs/numa.md). */
static bool one_node_here(void) {
  static int one = -1; /* the machine does not change */
  int v = LOAD_RLX(&one);
  if (v >= 0) return v;
  v = 0;
  if (!getenv("HWLOC_SYNTHETIC") && !getenv("HWLOC_XMLFILE") && !getenv("HWLOC_FSROOT")) {
    unsigned long mask[NODE_MASK_BITS / (8 * sizeof(unsigned long))];
    memset(mask, 0, sizeof mask);
    if (syscall(SYS_get_mempolicy, NULL, mask, (unsigned long)NODE_MASK_BITS, NULL,
                MPOL_F_MEMS_ALLOWED) == 0) {
      int bits = 0;
      for (size_t i = 0; i < sizeof mask / sizeof mask[0]; i++)
        bits += __builtin_popcountl(mask[i]);
      v = bits == 1;
    }
  }
  STORE_RLX(&one, v);
  return v;
}

int ito__numa_nodes(void) {
  if (nodes_cfg.mode == NUMA_OFF) return 1;
  if (nodes_cfg.mode == NUMA_AUTO && one_node_here()) return 1;
  return ito__topo()->nodes;
}

static void numa_start(void) {
  if (nodes_cfg.mode != NUMA_ON) return;
  const struct topo *t = ito__topo();
  if (t->nodes > 1) return;
  static int said;
  if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) return;
  char msg[256];
  int n = snprintf(msg, sizeof msg,
                   "ito: ITO_NUMA=on, but the topology has one NUMA node (%s): "
                   "running as one node\n",
                   t->source);
  if (n > 0) ito__write_stderr(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}
ITO_OBSERVE(numa_at_setup, OBSERVE_SETUP, OBS_NUMA, numa_start);
