/* libito-omp.so: the small entry points (error directives, places,
 * pausing) and every other entry point
 * of gcc's runtime, which stops the program naming itself instead of
 * running libgomp's code beside ito's. docs/openmp.md, "Not supported". */
#include "omp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the error directive ------------------------------------------------------------- */
OMP_API void GOMP_warning(const char *msg, size_t len) {
  if (msg)
    fprintf(stderr, "OpenMP warning: %.*s\n", (int)len, msg);
  else
    fputs("OpenMP warning\n", stderr);
}
OMP_API void GOMP_error(const char *msg, size_t len) {
  if (msg)
    fprintf(stderr, "OpenMP error: %.*s\n", (int)len, msg);
  else
    fputs("OpenMP error\n", stderr);
  exit(EXIT_FAILURE);
}

/* ---- places ------------------------------------------------------------------------- */
/* The runtime's places (ITO_PLACES, or OMP_PLACES / OMP_PROC_BIND:
 * docs/numa.md); the partition is the whole list (workers, not teams, are
 * bound). */
OMP_API int omp_get_place_num_procs(int place) {
  int n = ito__dropin_place_cpus(place, NULL, 0);
  return n < 0 ? 0 : n;
}
OMP_API void omp_get_place_proc_ids(int place, int *ids) {
  if (!ids) return;
  int n = ito__dropin_place_cpus(place, NULL, 0);
  if (n > 0) ito__dropin_place_cpus(place, ids, n);
}
OMP_API void omp_get_partition_place_nums(int *nums) {
  if (!nums) return;
  for (int i = 0, n = ito__dropin_place_count(); i < n; i++) nums[i] = i;
}

/* ---- pausing: what is kept idle goes back to the system -------------------------------
 * libito-omp.so itself keeps nothing idle between regions (team and task
 * descriptors live on their threads' stacks, dependence nodes are freed
 * when done); the runtime keeps free thread stacks, whose pages
 * ito__dropin_release_stacks gives back. Soft and hard pauses do the same:
 * the workers stay (idle ones sleep: ITO_WAIT_POLICY), and a later region
 * starts as before. As gcc's runtime, a pause inside a parallel region
 * fails, and only the host device (omp_get_initial_device()) can be
 * paused. */
enum { PAUSE_SOFT = 1, PAUSE_HARD = 2 }; /* omp_pause_soft, omp_pause_hard */

static int pause_host(int kind) {
  if (kind != PAUSE_SOFT && kind != PAUSE_HARD) return -1;
  task *t = ito__omp_cur();
  if (t->team && t->team->level > 0) return -1;
  ito__dropin_release_stacks();
  return 0;
}
OMP_API int omp_pause_resource(int kind, int device) {
  /* the host is the only device: the initial device's number is the
   * device count, 0 */
  if (device != 0) return -1;
  return pause_host(kind);
}
OMP_API int omp_pause_resource_all(int kind) { return pause_host(kind); }

/* ---- not supported ----------------------------------------------------------------------- */
static void unsupported(const char *name) {
  ito__omp_fatal("%s: not supported by ito's OpenMP runtime (docs/openmp.md)", name);
}

#define UNSUPPORTED(name) \
  OMP_API void name(void) { unsupported(#name); }
#include "unsupported.def"
