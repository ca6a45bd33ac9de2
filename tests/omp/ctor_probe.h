/* OpenMP from constructors (ctor.c, ctor_lib.c): what a constructor sees
 * and does, printed. Under a drop-in library a constructor may run before
 * the library's own (a library the program is linked with, when the
 * drop-in library is preloaded) or after it, and with the runtime started
 * or not: every answer must be libgomp's. */
#ifndef ITO_TESTS_OMP_CTOR_PROBE_H
#define ITO_TESTS_OMP_CTOR_PROBE_H

#include <omp.h>
#include <stdio.h>

/* Every query that reads the environment's ICVs, then omp_set_num_threads
 * and a region with a single, tasks, a loop, a critical section and a
 * lock, then the ICV as it is left. */
static void ctor_probe(const char *who, int nthreads) {
  int kind, chunk;
  omp_get_schedule((omp_sched_t *)&kind, &chunk);
  char fmt[128];
  omp_get_affinity_format(fmt, sizeof fmt);
  printf(
      "%s: procs %d max %d dynamic %d nested %d levels %d limit %d priority %d cancel %d "
      "bind %d teams %d teams_limit %d schedule %d,%d format '%s' in_parallel %d level %d "
      "thread %d/%d\n",
      who, omp_get_num_procs(), omp_get_max_threads(), omp_get_dynamic(), omp_get_nested(),
      omp_get_max_active_levels(), omp_get_thread_limit(), omp_get_max_task_priority(),
      omp_get_cancellation(), (int)omp_get_proc_bind(), omp_get_max_teams(),
      omp_get_teams_thread_limit(), kind, chunk, fmt, omp_in_parallel(), omp_get_level(),
      omp_get_thread_num(), omp_get_num_threads());
  fflush(stdout);
  omp_set_num_threads(nthreads);
  int members = 0, tasks = 0, crit = 0, locked = 0;
  long sum = 0;
  omp_lock_t l;
  omp_init_lock(&l);
#pragma omp parallel reduction(+ : members)
  {
    members++;
#pragma omp single
    for (int i = 1; i <= 20; i++) {
#pragma omp task
      {
#pragma omp atomic
        tasks += i;
      }
    }
#pragma omp for reduction(+ : sum)
    for (int i = 0; i < 1000; i++) sum += i;
#pragma omp critical
    crit++;
    omp_set_lock(&l);
    locked++;
    omp_unset_lock(&l);
  }
  omp_destroy_lock(&l);
  printf("%s: team %d tasks %d sum %ld critical %d locked %d max %d\n", who, members, tasks, sum,
         crit, locked, omp_get_max_threads());
  fflush(stdout);
}

#endif
