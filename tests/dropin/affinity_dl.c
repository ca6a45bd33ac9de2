/* A library's constructor that sets the thread's CPU affinity inside
 * dlopen (libpsm2's does, under Open MPI's MPI_Init): the thread must stay
 * on its OS thread until dlopen returned, since the dynamic loader's lock
 * it holds there belongs to that OS thread. Moved at once, it released
 * the lock from another one, which glibc refuses: the lock stayed held
 * and the next dlsym waited for ever. Rounds alternate between the
 * process's first CPU and its last one that a thread may be set to (under
 * the preload, one with a worker), from the main thread and from a
 * created one; after dlopen the thread runs on the CPU the constructor chose, and
 * the loader works (dlsym, dlclose, dlopen again). Output is
 * deterministic; both.sh compares it with the native run.
 *
 *   affinity_dl DIR   (DIR holds libaffmod.so) */
#define _GNU_SOURCE
#define DROPIN_PROG "affinity_dl"
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "dropin.h"

static char path[4096];
static int first = -1, last = -1;
static cpu_set_t every; /* the process's CPUs */

static void rounds(const char *who) {
  for (int r = 0; r < 4; r++) {
    int cpu = r % 2 ? last : first;
    char v[16];
    snprintf(v, sizeof v, "%d", cpu);
    setenv("AFFMOD_CPU", v, 1);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) FAIL("dlopen: %s", dlerror());
    int *val = dlsym(h, "affmod_value");
    if (!val) FAIL("dlsym: %s", dlerror());
    int here = sched_getcpu() == cpu, value = *val;
    if (dlclose(h) != 0) FAIL("dlclose: %s", dlerror());
    printf("%s round %d: value %d, on the CPU the constructor chose: %s\n", who, r, value,
           here ? "yes" : "no");
  }
  if (sched_setaffinity(0, sizeof every, &every) != 0) FAIL("sched_setaffinity back");
}

static void *thread_rounds(void *p) {
  (void)p;
  rounds("thread");
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) FAIL("usage: affinity_dl DIR");
  snprintf(path, sizeof path, "%s/libaffmod.so", argv[1]);
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof s, &s) != 0) FAIL("sched_getaffinity");
  every = s;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &s)) {
      if (first < 0) first = c;
      last = c;
    }
  if (CPU_COUNT(&s) != last - first + 1) {
    printf("SKIPPED: the process's CPUs are not one range\n");
    return 77;
  }
  /* the highest CPU a thread may be set to: under the preload one with a
   * worker (the workers follow the CPUs in order; a set without one is
   * refused), so with one worker only the first, and nothing moves */
  const char *w = getenv("ITO_NUM_WORKERS");
  if (w && atoi(w) > 0 && first + atoi(w) - 1 < last) last = first + atoi(w) - 1;
  rounds("main");
  pthread_t t;
  int rc = pthread_create(&t, NULL, thread_rounds, NULL);
  if (rc) FAIL("pthread_create: %s", code_name(rc));
  rc = pthread_join(t, NULL);
  if (rc) FAIL("pthread_join: %s", code_name(rc));
  puts("affinity_dl: done");
  return 0;
}
