/* libito-omp.so: the Fortran API, as gfortran calls it through gcc 12's
 * omp_lib module and omp_lib.h: the C name with an underscore, every
 * argument by reference, a hidden length (size_t) after the arguments for
 * each character argument, logical(4) as a 32-bit integer (nonzero true,
 * returned as 1), and an `_8_` form of each routine with an integer
 * argument for callers compiled with -fdefault-integer-8 (64-bit integers,
 * narrowed to int as gcc's runtime does). Each calls the C entry point.
 *
 * Locks: omp_lock_kind is 4, and this library's omp_lock_t is 4 bytes, so
 * a Fortran lock variable is the C lock itself. omp_nest_lock_kind is 8
 * and the nest lock 16 bytes, so the Fortran variable holds the address of
 * a nest lock allocated by omp_init_nest_lock and freed by
 * omp_destroy_nest_lock (gcc's runtime does the same). docs/openmp.md,
 * "Fortran". */
#include "omp_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* the C entry points (omp.c, extra.c; those gcc's omp.h declares) */
OMP_API int omp_get_thread_num(void);
OMP_API int omp_get_num_threads(void);
OMP_API int omp_get_max_threads(void);
OMP_API void omp_set_num_threads(int n);
OMP_API int omp_in_parallel(void);
OMP_API int omp_get_level(void);
OMP_API int omp_get_active_level(void);
OMP_API int omp_get_ancestor_thread_num(int level);
OMP_API int omp_get_team_size(int level);
OMP_API void omp_set_dynamic(int v);
OMP_API int omp_get_dynamic(void);
OMP_API void omp_set_nested(int v);
OMP_API int omp_get_nested(void);
OMP_API void omp_set_max_active_levels(int n);
OMP_API int omp_get_max_active_levels(void);
OMP_API int omp_get_supported_active_levels(void);
OMP_API int omp_get_thread_limit(void);
OMP_API int omp_get_num_procs(void);
OMP_API int omp_in_final(void);
OMP_API int omp_get_cancellation(void);
OMP_API int omp_get_proc_bind(void);
OMP_API int omp_get_num_places(void);
OMP_API int omp_get_place_num_procs(int place);
OMP_API void omp_get_place_proc_ids(int place, int *ids);
OMP_API int omp_get_place_num(void);
OMP_API int omp_get_partition_num_places(void);
OMP_API void omp_get_partition_place_nums(int *nums);
OMP_API int omp_get_max_task_priority(void);
OMP_API int omp_get_num_devices(void);
OMP_API int omp_get_default_device(void);
OMP_API void omp_set_default_device(int d);
OMP_API int omp_get_initial_device(void);
OMP_API int omp_get_device_num(void);
OMP_API int omp_is_initial_device(void);
OMP_API int omp_get_num_teams(void);
OMP_API int omp_get_team_num(void);
OMP_API int omp_get_max_teams(void);
OMP_API void omp_set_num_teams(int n);
OMP_API int omp_get_teams_thread_limit(void);
OMP_API void omp_set_teams_thread_limit(int n);
OMP_API void omp_set_schedule(int kind, int chunk);
OMP_API void omp_get_schedule(int *kind, int *chunk);
OMP_API double omp_get_wtime(void);
OMP_API double omp_get_wtick(void);
OMP_API void omp_display_env(int verbose);
OMP_API int omp_pause_resource(int kind, int device);
OMP_API int omp_pause_resource_all(int kind);
OMP_API void omp_set_affinity_format(const char *format);
OMP_API size_t omp_get_affinity_format(char *buffer, size_t size);
OMP_API void omp_display_affinity(const char *format);
OMP_API size_t omp_capture_affinity(char *buffer, size_t size, const char *format);
OMP_API void omp_fulfill_event(uintptr_t event);
struct alloctrait { /* omp_alloctrait_t; Fortran's type(omp_alloctrait) */
  int key;
  uintptr_t value;
};
OMP_API uintptr_t omp_init_allocator(uintptr_t memspace, int ntraits,
                                     const struct alloctrait *traits);
OMP_API void omp_destroy_allocator(uintptr_t allocator);
OMP_API void omp_set_default_allocator(uintptr_t allocator);
OMP_API uintptr_t omp_get_default_allocator(void);

/* A default-kind integer of a -fdefault-integer-8 caller, as an int. */
static int to_int(int64_t v) { return v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : (int)v; }

/* ---- locks ------------------------------------------------------------------------------ */
_Static_assert(sizeof(lock_t) == 4, "a Fortran integer(omp_lock_kind) holds omp_lock_t itself");
_Static_assert(sizeof(nest_lock_t *) <= 8,
               "a Fortran integer(omp_nest_lock_kind) holds the nest lock's address");

OMP_API void omp_init_lock_(int32_t *l) { omp_init_lock((lock_t *)l); }
OMP_API void omp_init_lock_with_hint_(int32_t *l, const int32_t *hint) {
  omp_init_lock_with_hint((lock_t *)l, *hint);
}
OMP_API void omp_destroy_lock_(int32_t *l) { omp_destroy_lock((lock_t *)l); }
OMP_API void omp_set_lock_(int32_t *l) { omp_set_lock((lock_t *)l); }
OMP_API void omp_unset_lock_(int32_t *l) { omp_unset_lock((lock_t *)l); }
OMP_API int32_t omp_test_lock_(int32_t *l) { return omp_test_lock((lock_t *)l) != 0; }

static nest_lock_t *nest_new(void) {
  nest_lock_t *n = malloc(sizeof *n);
  if (!n) ito__omp_fatal("omp_init_nest_lock: out of memory");
  return n;
}
static nest_lock_t *nest_of(nest_lock_t **l, const char *fn) {
  if (UNLIKELY(!*l))
    ito__omp_fatal(
        "%s on a lock that omp_init_nest_lock did not initialise (or that was "
        "destroyed)",
        fn);
  return *l;
}
OMP_API void omp_init_nest_lock_(nest_lock_t **l) {
  nest_lock_t *n = nest_new();
  omp_init_nest_lock(n);
  *l = n;
}
OMP_API void omp_init_nest_lock_with_hint_(nest_lock_t **l, const int32_t *hint) {
  nest_lock_t *n = nest_new();
  omp_init_nest_lock_with_hint(n, *hint);
  *l = n;
}
OMP_API void omp_destroy_nest_lock_(nest_lock_t **l) {
  nest_lock_t *n = nest_of(l, "omp_destroy_nest_lock");
  omp_destroy_nest_lock(n);
  free(n);
  *l = NULL;
}
OMP_API void omp_set_nest_lock_(nest_lock_t **l) {
  omp_set_nest_lock(nest_of(l, "omp_set_nest_lock"));
}
OMP_API void omp_unset_nest_lock_(nest_lock_t **l) {
  omp_unset_nest_lock(nest_of(l, "omp_unset_nest_lock"));
}
OMP_API int32_t omp_test_nest_lock_(nest_lock_t **l) {
  return omp_test_nest_lock(nest_of(l, "omp_test_nest_lock"));
}

/* ---- threads, teams and nesting ---------------------------------------------------------- */
OMP_API int32_t omp_get_thread_num_(void) { return omp_get_thread_num(); }
OMP_API int32_t omp_get_num_threads_(void) { return omp_get_num_threads(); }
OMP_API int32_t omp_get_max_threads_(void) { return omp_get_max_threads(); }
OMP_API void omp_set_num_threads_(const int32_t *n) { omp_set_num_threads(*n); }
OMP_API void omp_set_num_threads_8_(const int64_t *n) { omp_set_num_threads(to_int(*n)); }
OMP_API int32_t omp_in_parallel_(void) { return omp_in_parallel() != 0; }
OMP_API int32_t omp_get_level_(void) { return omp_get_level(); }
OMP_API int32_t omp_get_active_level_(void) { return omp_get_active_level(); }
OMP_API int32_t omp_get_ancestor_thread_num_(const int32_t *level) {
  return omp_get_ancestor_thread_num(*level);
}
OMP_API int32_t omp_get_ancestor_thread_num_8_(const int64_t *level) {
  return omp_get_ancestor_thread_num(to_int(*level));
}
OMP_API int32_t omp_get_team_size_(const int32_t *level) { return omp_get_team_size(*level); }
OMP_API int32_t omp_get_team_size_8_(const int64_t *level) {
  return omp_get_team_size(to_int(*level));
}
OMP_API void omp_set_dynamic_(const int32_t *v) { omp_set_dynamic(*v != 0); }
OMP_API void omp_set_dynamic_8_(const int64_t *v) { omp_set_dynamic(*v != 0); }
OMP_API int32_t omp_get_dynamic_(void) { return omp_get_dynamic() != 0; }
OMP_API void omp_set_nested_(const int32_t *v) { omp_set_nested(*v != 0); }
OMP_API void omp_set_nested_8_(const int64_t *v) { omp_set_nested(*v != 0); }
OMP_API int32_t omp_get_nested_(void) { return omp_get_nested() != 0; }
OMP_API void omp_set_max_active_levels_(const int32_t *n) { omp_set_max_active_levels(*n); }
OMP_API void omp_set_max_active_levels_8_(const int64_t *n) {
  omp_set_max_active_levels(to_int(*n));
}
OMP_API int32_t omp_get_max_active_levels_(void) { return omp_get_max_active_levels(); }
OMP_API int32_t omp_get_supported_active_levels_(void) { return omp_get_supported_active_levels(); }
OMP_API int32_t omp_get_thread_limit_(void) { return omp_get_thread_limit(); }
OMP_API int32_t omp_get_num_procs_(void) { return omp_get_num_procs(); }
OMP_API int32_t omp_in_final_(void) { return omp_in_final() != 0; }
OMP_API int32_t omp_get_cancellation_(void) { return omp_get_cancellation() != 0; }
OMP_API int32_t omp_get_max_task_priority_(void) { return omp_get_max_task_priority(); }

/* ---- schedules ----------------------------------------------------------------------------- */
OMP_API void omp_set_schedule_(const int32_t *kind, const int32_t *chunk) {
  omp_set_schedule(*kind, *chunk);
}
OMP_API void omp_set_schedule_8_(const int32_t *kind, const int64_t *chunk) {
  omp_set_schedule(*kind, to_int(*chunk));
}
OMP_API void omp_get_schedule_(int32_t *kind, int32_t *chunk) {
  int k, c;
  omp_get_schedule(&k, &c);
  *kind = k;
  *chunk = c;
}
OMP_API void omp_get_schedule_8_(int32_t *kind, int64_t *chunk) {
  int k, c;
  omp_get_schedule(&k, &c);
  *kind = k;
  *chunk = c;
}

/* ---- places ------------------------------------------------------------------------------- */
OMP_API int32_t omp_get_proc_bind_(void) { return omp_get_proc_bind(); }
OMP_API int32_t omp_get_num_places_(void) { return omp_get_num_places(); }
OMP_API int32_t omp_get_place_num_procs_(const int32_t *place) {
  return omp_get_place_num_procs(*place);
}
OMP_API int32_t omp_get_place_num_procs_8_(const int64_t *place) {
  return omp_get_place_num_procs(to_int(*place));
}
OMP_API void omp_get_place_proc_ids_(const int32_t *place, int32_t *ids) {
  omp_get_place_proc_ids(*place, ids);
}
/* the C call fills ints: as many as the place has processors, widened */
OMP_API void omp_get_place_proc_ids_8_(const int64_t *place, int64_t *ids) {
  int p = to_int(*place);
  int n = omp_get_place_num_procs(p);
  if (n <= 0) return;
  int *tmp = malloc((size_t)n * sizeof *tmp);
  if (!tmp) ito__omp_fatal("omp_get_place_proc_ids: out of memory");
  omp_get_place_proc_ids(p, tmp);
  for (int i = 0; i < n; i++) ids[i] = tmp[i];
  free(tmp);
}
OMP_API int32_t omp_get_place_num_(void) { return omp_get_place_num(); }
OMP_API int32_t omp_get_partition_num_places_(void) { return omp_get_partition_num_places(); }
OMP_API void omp_get_partition_place_nums_(int32_t *nums) { omp_get_partition_place_nums(nums); }
OMP_API void omp_get_partition_place_nums_8_(int64_t *nums) {
  int n = omp_get_partition_num_places();
  if (n <= 0) return;
  int *tmp = malloc((size_t)n * sizeof *tmp);
  if (!tmp) ito__omp_fatal("omp_get_partition_place_nums: out of memory");
  omp_get_partition_place_nums(tmp);
  for (int i = 0; i < n; i++) nums[i] = tmp[i];
  free(tmp);
}

/* ---- devices and teams --------------------------------------------------------------------- */
OMP_API void omp_set_default_device_(const int32_t *d) { omp_set_default_device(*d); }
OMP_API void omp_set_default_device_8_(const int64_t *d) { omp_set_default_device(to_int(*d)); }
OMP_API int32_t omp_get_default_device_(void) { return omp_get_default_device(); }
OMP_API int32_t omp_get_num_devices_(void) { return omp_get_num_devices(); }
OMP_API int32_t omp_get_initial_device_(void) { return omp_get_initial_device(); }
OMP_API int32_t omp_get_device_num_(void) { return omp_get_device_num(); }
OMP_API int32_t omp_is_initial_device_(void) { return omp_is_initial_device() != 0; }
OMP_API int32_t omp_get_num_teams_(void) { return omp_get_num_teams(); }
OMP_API int32_t omp_get_team_num_(void) { return omp_get_team_num(); }
OMP_API int32_t omp_get_max_teams_(void) { return omp_get_max_teams(); }
OMP_API void omp_set_num_teams_(const int32_t *n) { omp_set_num_teams(*n); }
OMP_API void omp_set_num_teams_8_(const int64_t *n) { omp_set_num_teams(to_int(*n)); }
OMP_API int32_t omp_get_teams_thread_limit_(void) { return omp_get_teams_thread_limit(); }
OMP_API void omp_set_teams_thread_limit_(const int32_t *n) { omp_set_teams_thread_limit(*n); }
OMP_API void omp_set_teams_thread_limit_8_(const int64_t *n) {
  omp_set_teams_thread_limit(to_int(*n));
}

/* ---- time, pausing, the environment ---------------------------------------------------------- */
OMP_API double omp_get_wtime_(void) { return omp_get_wtime(); }
OMP_API double omp_get_wtick_(void) { return omp_get_wtick(); }
OMP_API int32_t omp_pause_resource_(const int32_t *kind, const int32_t *device) {
  return omp_pause_resource(*kind, *device);
}
OMP_API int32_t omp_pause_resource_all_(const int32_t *kind) {
  return omp_pause_resource_all(*kind);
}
OMP_API void omp_display_env_(const int32_t *verbose) { omp_display_env(*verbose != 0); }
OMP_API void omp_display_env_8_(const int64_t *verbose) { omp_display_env(*verbose != 0); }

/* ---- character arguments: (pointer, hidden length), no terminating NUL, and
 * results padded with blanks ----------------------------------------------------------------- */

/* A Fortran string as a C string (NULL: no memory). */
static char *c_string(const char *s, size_t len) {
  char *c = malloc(len + 1);
  if (c) {
    memcpy(c, s, len);
    c[len] = 0;
  }
  return c;
}
/* A C string into a Fortran buffer: cut to its length, or padded with blanks. */
static void to_fortran(char *buf, size_t buflen, const char *s, size_t len) {
  if (len >= buflen) {
    memcpy(buf, s, buflen);
  } else {
    memcpy(buf, s, len);
    memset(buf + len, ' ', buflen - len);
  }
}

OMP_API void omp_set_affinity_format_(const char *format, size_t len) {
  char *c = c_string(format, len);
  if (!c) ito__omp_fatal("omp_set_affinity_format: out of memory");
  omp_set_affinity_format(c);
  free(c);
}
OMP_API int32_t omp_get_affinity_format_(char *buffer, size_t len) {
  size_t n = omp_get_affinity_format(NULL, 0);
  char *c = malloc(n + 1);
  if (!c) ito__omp_fatal("omp_get_affinity_format: out of memory");
  omp_get_affinity_format(c, n + 1);
  to_fortran(buffer, len, c, n);
  free(c);
  return (int32_t)n;
}
OMP_API void omp_display_affinity_(const char *format, size_t len) {
  char *c = c_string(format, len);
  if (!c) ito__omp_fatal("omp_display_affinity: out of memory");
  omp_display_affinity(len ? c : NULL);
  free(c);
}
OMP_API int32_t omp_capture_affinity_(char *buffer, const char *format, size_t buflen,
                                      size_t fmtlen) {
  char *f = c_string(format, fmtlen);
  if (!f) ito__omp_fatal("omp_capture_affinity: out of memory");
  size_t n = omp_capture_affinity(NULL, 0, fmtlen ? f : NULL);
  char *c = malloc(n + 1);
  if (!c) ito__omp_fatal("omp_capture_affinity: out of memory");
  omp_capture_affinity(c, n + 1, fmtlen ? f : NULL);
  to_fortran(buffer, buflen, c, n);
  free(c);
  free(f);
  return (int32_t)n;
}

/* ---- events and allocators ----------------------------------------------------------------- */
/* omp_lib passes the event handle by value */
OMP_API void omp_fulfill_event_(uintptr_t event) { omp_fulfill_event(event); }
OMP_API uintptr_t omp_init_allocator_(const uintptr_t *memspace, const int32_t *ntraits,
                                      const struct alloctrait *traits) {
  return omp_init_allocator(*memspace, *ntraits, traits);
}
OMP_API uintptr_t omp_init_allocator_8_(const uintptr_t *memspace, const int64_t *ntraits,
                                        const struct alloctrait *traits) {
  return omp_init_allocator(*memspace, to_int(*ntraits), traits);
}
OMP_API void omp_destroy_allocator_(const uintptr_t *allocator) {
  omp_destroy_allocator(*allocator);
}
OMP_API void omp_set_default_allocator_(const uintptr_t *allocator) {
  omp_set_default_allocator(*allocator);
}
OMP_API uintptr_t omp_get_default_allocator_(void) { return omp_get_default_allocator(); }
