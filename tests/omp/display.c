/* omp_display_env: with an argument ("terse" or "verbose") the program
 * calls it before a parallel region; without, only OMP_DISPLAY_ENV prints.
 * display_env.sh compares what it prints with gcc's runtime. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc > 1) omp_display_env(strcmp(argv[1], "verbose") == 0);
  int n = 0;
#pragma omp parallel reduction(+ : n)
  n += 1;
  printf("display ran: %d\n", n == omp_get_max_threads() || omp_get_dynamic());
  return 0;
}
