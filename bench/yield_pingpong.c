/* yield_pingpong [N]: two ito threads on the workers there are (run it
 * with ITO_NUM_WORKERS=1) each call ito_yield N times (default 1,000,000),
 * so every yield is a switch out to the scheduler and one into the other
 * thread. Prints nanoseconds per yield. Compare ITO_TLS=worker with
 * ITO_TLS=thread for the cost of switching thread-local storage
 * (docs/tls.md, "Costs"). */
#include <ito/ito.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long n_yields;

static void *yielder(void *p) {
  (void)p;
  for (long i = 0; i < n_yields; i++) ito_yield();
  return NULL;
}

int main(int argc, char **argv) {
  n_yields = argc > 1 ? atol(argv[1]) : 1000000;
  if (ito_init() != 0) return 1;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  ito_thread_t t[2];
  for (int i = 0; i < 2; i++)
    if (ito_create(yielder, NULL, &t[i])) return 1;
  for (int i = 0; i < 2; i++) ito_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
  printf("%.1f ns per yield\n", ns / (2.0 * (double)n_yields));
  return 0;
}
