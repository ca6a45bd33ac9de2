/* Constructs whose entry points libito-omp does not implement:
 *   unimpl target   #pragma omp target       -> GOMP_target_ext
 *   unimpl teams    #pragma omp teams (host) -> GOMP_teams_reg
 * Under libgomp both run on the host and the program prints "ran" and
 * exits 0. Under libito-omp the call must stop the program with a message
 * naming the entry point (unimpl.sh checks it): falling through to
 * libgomp's implementation would mix two runtimes. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  int x = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: unimpl target|teams\n");
    return 2;
  }
  if (!strcmp(argv[1], "target")) {
#pragma omp target map(tofrom : x)
    x = 42;
  } else if (!strcmp(argv[1], "teams")) {
#pragma omp teams num_teams(2)
    {
      if (omp_get_team_num() == 0) x = 42;
    }
  } else {
    fprintf(stderr, "unimpl: unknown case %s\n", argv[1]);
    return 2;
  }
  printf("%s ran: %d\n", argv[1], x);
  return x == 42 ? 0 : 1;
}
