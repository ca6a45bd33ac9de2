/* omp_pause_resource and omp_pause_resource_all between regions: both
 * runtimes answer 0 for a soft or hard pause of the host device, -1 for
 * another device or inside a region, and regions and tasks run as before
 * after a pause. Under libito-omp.so (found by its runtime's ito_init) the
 * program also checks that an invalid kind gets -1 (gcc 12's runtime
 * ignores the kind and answers 0) and that the pause gave the free thread
 * stacks' pages back: the resident size falls by at least 8 MiB after a
 * team of 300 members that each touched 256 KiB of its stack. (Members
 * have 8 MiB stacks: of the 300 freed, the runtime keeps up to 64 per
 * worker and 5 more resident, ITO_STACK_CACHE, and gives the others' pages
 * back at once; the pause releases those of the calling worker and the
 * 5.) */
#define _GNU_SOURCE
#include "omptest.h"

#include <dlfcn.h>
#include <unistd.h>

static long resident_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = -1;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = -1;
    fclose(f);
  }
  return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static long work(int round) {
  long sum = 0;
#pragma omp parallel reduction(+ : sum)
  {
#pragma omp for schedule(dynamic, 3)
    for (int i = 0; i < 1000; i++) sum += i + round;
#pragma omp single
    for (int t = 0; t < 50; t++) {
#pragma omp task shared(sum)
      {
#pragma omp atomic
        sum += t;
      }
    }
  }
  return sum;
}

/* touches 256 KiB of its stack */
static __attribute__((noinline)) int deep(int seed) {
  volatile char buf[256 * 1024];
  for (size_t i = 0; i < sizeof buf; i += 512) buf[i] = (char)(seed + i);
  return buf[seed % 512];
}

int main(void) {
  int under_ito = dlsym(RTLD_DEFAULT, "ito_init") != NULL;
  printf("before: %ld\n", work(0));
  printf("pause soft host: %d\n", omp_pause_resource(omp_pause_soft, omp_get_initial_device()));
  printf("after soft: %ld\n", work(1));
  printf("pause hard host: %d\n", omp_pause_resource(omp_pause_hard, omp_get_initial_device()));
  printf("after hard: %ld\n", work(2));
  printf("pause all soft: %d hard: %d\n", omp_pause_resource_all(omp_pause_soft),
         omp_pause_resource_all(omp_pause_hard));
  printf("after all: %ld\n", work(3));
  printf("pause device %d: %d, device -5: %d\n", omp_get_initial_device() + 1,
         omp_pause_resource(omp_pause_soft, omp_get_initial_device() + 1),
         omp_pause_resource(omp_pause_soft, -5));
  int in_region = 0, in_task = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
    in_region = omp_pause_resource_all(omp_pause_soft);
#pragma omp task shared(in_task)
    in_task = omp_pause_resource(omp_pause_hard, omp_get_initial_device());
  }
  printf("in a region: %d, in a task of one: %d\n", in_region, in_task);
  printf("after region: %ld\n", work(4));
  if (under_ito) {
    CHECK_EQ(omp_pause_resource(0, omp_get_initial_device()), -1);
    CHECK_EQ(omp_pause_resource_all(3), -1);
#ifndef __SANITIZE_ADDRESS__
    int bad = 0;
    /* every member's stack is in use at the barrier */
#pragma omp parallel num_threads(300) reduction(+ : bad)
    {
      bad += deep(omp_get_thread_num()) == 127;
#pragma omp barrier
    }
    long before = resident_kib();
    CHECK_EQ(omp_pause_resource_all(omp_pause_soft), 0);
    long after = resident_kib();
    if (before < 0 || before - after < 8192) {
      fprintf(stderr, "pause: resident %ld KiB before the pause, %ld after\n", before, after);
      CHECK(before - after >= 8192);
    }
    (void)bad;
#endif
  }
  printf("last: %ld\n", work(5));
  return omptest_finish("pause");
}
