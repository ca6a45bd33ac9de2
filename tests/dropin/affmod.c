/* A library whose constructor sets the calling thread's CPU affinity (as
 * libpsm2's does, under Open MPI's MPI_Init): to the CPU named by
 * AFFMOD_CPU. It runs inside dlopen, under the dynamic loader's lock. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>

int affmod_value;

__attribute__((constructor)) static void affmod_init(void) {
  const char *c = getenv("AFFMOD_CPU");
  if (c) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(atoi(c), &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) abort();
  }
  affmod_value = 42;
}
