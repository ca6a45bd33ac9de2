/* Shared by the OpenMP benchmarks of bench/omp/: the clock, argument
 * parsing (../common/cutil.h), a fixed hash for seeded data, and the
 * metadata line that names the OpenMP runtime the process really uses.
 *
 * The same gcc -fopenmp binary runs under libgomp, under LLVM's libomp
 * (LD_PRELOAD, it implements the GOMP entry points too) and under
 * libito-omp.so (LD_PRELOAD). Which one answered is read back with dladdr
 * from the addresses of the entry points the program calls: each program
 * lists them (OMPB_ENTRY), and if they do not all come from one library
 * the system is reported as "mixed" and every entry point is named, so a
 * runtime that lacks one and silently falls back to libgomp is caught. */
#ifndef BENCH_OMP_COMMON_H
#define BENCH_OMP_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cutil.h"

static inline double ompb_now_s(void) { return (double)bench_now_ns() * 1e-9; }

/* splitmix64: seeded input data */
static inline uint64_t ompb_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Keeps the compiler from knowing v (before a call) or from dropping it. */
#define OMPB_OPAQUE(v) __asm__ volatile("" : "+r"(v) : : "memory")

/* An entry point of the GOMP ABI or of omp.h, by address. The GOMP_*
 * functions are declared with a dummy type: only their address is taken. */
typedef struct {
  const char *name;
  void *addr;
} ompb_entry;
#define OMPB_ENTRY(f) \
  { #f, (void *)&f }

void GOMP_parallel(void);
void GOMP_single_start(void);
void GOMP_task(void);
void GOMP_taskwait(void);
void GOMP_barrier(void);
void GOMP_sections_next(void);
void GOMP_sections_end_nowait(void);
void GOMP_parallel_sections(void);
void GOMP_atomic_start(void);
void GOMP_atomic_end(void);
void GOMP_loop_doacross_static_start(void);
void GOMP_loop_static_next(void);
void GOMP_loop_end(void);
void GOMP_doacross_post(void);
void GOMP_doacross_wait(void);
void GOMP_taskgroup_start(void);
void GOMP_taskgroup_end(void);
void GOMP_taskgroup_reduction_register(void);
void GOMP_taskgroup_reduction_unregister(void);
void GOMP_task_reduction_remap(void);

/* The omp_* functions ompb_meta calls, in every program's list. */
#define OMPB_META_ENTRIES OMPB_ENTRY(omp_get_max_active_levels), OMPB_ENTRY(omp_get_num_procs)

static inline const char *ompb_lib_of(void *p) {
  Dl_info info;
  if (!dladdr(p, &info) || !info.dli_fname) return "?";
  const char *slash = strrchr(info.dli_fname, '/');
  return slash ? slash + 1 : info.dli_fname;
}

/* gomp, iomp, ito, or the library's file name */
static inline const char *ompb_system_of(const char *lib) {
  if (strstr(lib, "libito-omp")) return "ito";
  if (strstr(lib, "libgomp")) return "gomp";
  if (strstr(lib, "libomp") || strstr(lib, "libiomp")) return "iomp";
  return lib;
}

/* The system the entry points resolve to, or "mixed". */
static inline const char *ompb_system(const ompb_entry *e, int n) {
  const char *first = ompb_lib_of(e[0].addr);
  for (int i = 1; i < n; i++)
    if (strcmp(ompb_lib_of(e[i].addr), first) != 0) return "mixed";
  return ompb_system_of(first);
}

#if defined(__clang__)
#define OMPB_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define OMPB_COMPILER "gcc " __VERSION__
#else
#define OMPB_COMPILER "unknown"
#endif

/* "# bench=... system=... workers=... procs=... max_active_levels=...
 *  compiler=... runtime=..." (run.py keeps '#' lines as metadata); when the
 * entry points come from several libraries, a second line names each. */
static inline void ompb_meta(const char *bench, const ompb_entry *e, int n, int workers) {
  const char *sys = ompb_system(e, n);
  printf(
      "# bench=%s system=%s workers=%d procs=%d max_active_levels=%d compiler=\"%s\" "
      "runtime=%s\n",
      bench, sys, workers, omp_get_num_procs(), omp_get_max_active_levels(), OMPB_COMPILER,
      ompb_lib_of(e[0].addr));
  if (strcmp(sys, "mixed") == 0) {
    printf("# entry_points=\"");
    for (int i = 0; i < n; i++) printf("%s%s:%s", i ? " " : "", e[i].name, ompb_lib_of(e[i].addr));
    printf("\"\n");
  }
  fflush(stdout);
}

/* fib(n), iterated: what the fib benchmarks check their answers against. */
static inline long ompb_fib(int n) {
  long a = 0, b = 1;
  for (int i = 0; i < n; i++) {
    long c = a + b;
    a = b;
    b = c;
  }
  return a;
}

/* The warm-up of a fib benchmark: fib_parallel(min(n, 20)) starts the
 * team's threads; returns the team's size, or exits 1 naming prog on a
 * wrong answer. */
static inline int ompb_fib_warmup(const char *prog, long (*fib_parallel)(int, int *), int n) {
  int team = 0, wn = n < 20 ? n : 20;
  long got = fib_parallel(wn, &team);
  if (got != ompb_fib(wn)) {
    fprintf(stderr, "%s: WRONG ANSWER warm-up fib(%d) = %ld, expected %ld\n", prog, wn, got,
            ompb_fib(wn));
    exit(1);
  }
  return team;
}

#endif
