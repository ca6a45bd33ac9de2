/* Large arrays on the stacks of team members and tasks: libgomp gives its
 * team threads the default pthread stack size (8 MiB, or OMP_STACKSIZE),
 * and tasks run on those stacks; libito-omp.so gives members and tasks
 * stacks of that size (docs/openmp.md, "Stacks"). Every member, then 6
 * explicit tasks, then an undeferred task, fill a 4.8 MB array on their
 * stack and print its checksum. Under ito's former 128 KiB stacks the
 * first member to run it stopped the program with ito's overflow message:
 * the array is filled from the top down, so its first write past the
 * stack is on the guard page (a program that first writes the bottom of
 * such an array steps over the guard instead: docs/openmp.md, "Stacks"). */
#include "omptest.h"

#define BIG (600 * 1000) /* doubles: 4.8 MB */

/* Fills a 4.8 MB array on this frame, from the top down (the end the
 * stack grows from), and returns a checksum that depends on every
 * element. */
static __attribute__((noinline)) long big_frame(int seed) {
  volatile double a[BIG];
  for (long i = BIG - 1; i >= 0; i--) a[i] = (double)((i * 7 + seed) % 1000);
  long sum = 0;
  for (long i = 0; i < BIG; i += 1) sum += (long)a[i] * ((i & 7) + 1);
  return sum;
}

int main(void) {
  long member[64] = {0};
  int n = 0;
#pragma omp parallel shared(member, n)
  {
    int me = omp_get_thread_num();
#pragma omp single
    n = omp_get_num_threads();
    if (me < 64) member[me] = big_frame(me);
  }
  for (int i = 0; i < n && i < 64; i++) printf("member %d: %ld\n", i, member[i]);

  long task[6] = {0}, undeferred = 0;
#pragma omp parallel shared(task, undeferred)
#pragma omp single
  {
    for (int i = 0; i < 6; i++) {
#pragma omp task firstprivate(i) shared(task)
      task[i] = big_frame(100 + i);
    }
#pragma omp taskwait
#pragma omp task if (0) shared(undeferred)
    undeferred = big_frame(200);
  }
  for (int i = 0; i < 6; i++) printf("task %d: %ld\n", i, task[i]);
  printf("undeferred task: %ld\n", undeferred);

  /* a nested region: members of the inner team too (active when nesting
   * is on, else a team of one) */
  long inner[4] = {0};
#pragma omp parallel num_threads(2) shared(inner)
  {
    int outer = omp_get_thread_num();
#pragma omp parallel num_threads(2) shared(inner)
    inner[outer * 2 + omp_get_thread_num()] = big_frame(300 + outer * 2 + omp_get_thread_num());
  }
  printf("nested: %ld %ld %ld %ld\n", inner[0], inner[1], inner[2], inner[3]);
  return omptest_finish("bigstack");
}
