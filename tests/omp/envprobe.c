/* A small program that uses what every OMP_* variable controls: a
 * parallel region of the default size, a schedule(runtime) loop and a
 * nested region. badenv.sh runs it with invalid values. */
#include <omp.h>
#include <stdio.h>

int main(void) {
  long sum = 0;
#pragma omp parallel reduction(+ : sum)
  {
#pragma omp for schedule(runtime)
    for (int i = 0; i < 100; i++) sum += i;
#pragma omp parallel num_threads(2)
    {}
  }
  printf("probe ran: %ld (max_threads %d)\n", sum, omp_get_max_threads());
  return sum == 4950 ? 0 : 1;
}
