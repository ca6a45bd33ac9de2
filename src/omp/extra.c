/* libito-omp.so: the small entry points (cancellation off, error
 * directives, places) and every other entry point
 * of gcc's runtime, which stops the program naming itself instead of
 * running libgomp's code beside ito's. docs/openmp.md, "Not supported". */
#include "omp_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cancellation: off (OMP_CANCELLATION is not supported) ------------------------- */
OMP_API bool GOMP_cancel(int which, bool do_cancel) {
  (void)which;
  (void)do_cancel;
  return false;
}
OMP_API bool GOMP_cancellation_point(int which) {
  (void)which;
  return false;
}

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

/* ---- places, pausing ---------------------------------------------------- */
OMP_API int omp_get_place_num_procs(int place) {
  (void)place;
  return 0;
}
OMP_API void omp_get_place_proc_ids(int place, int *ids) {
  (void)place;
  (void)ids;
}
OMP_API void omp_get_partition_place_nums(int *nums) { (void)nums; }
OMP_API int omp_pause_resource(int kind, int device) {
  (void)kind;
  (void)device;
  return -1; /* nothing is paused */
}
OMP_API int omp_pause_resource_all(int kind) {
  (void)kind;
  return -1;
}

/* ---- not supported ----------------------------------------------------------------------- */
static void unsupported(const char *name) {
  const char *why = name[strlen(name) - 1] == '_'
                        ? "Fortran entry points are not supported"
                        : "not supported by ito's OpenMP runtime (docs/openmp.md)";
  ito_omp_fatal("%s: %s", name, why);
}

#define UNSUPPORTED(name) \
  OMP_API void name(void) { unsupported(#name); }
#include "unsupported.def"
