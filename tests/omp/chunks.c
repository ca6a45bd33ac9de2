/* A dynamic schedule with a chunk size hands out chunks of that size:
 * chunk k is iterations [k*c, (k+1)*c) (the loop's last may be shorter),
 * and every iteration of a chunk runs on the same thread, in
 * schedule(dynamic, c), schedule(nonmonotonic: dynamic, c) (what gcc
 * emits for a plain dynamic schedule) and schedule(monotonic: dynamic, c);
 * every iteration runs once. Loops of 100, 1000 and 7 iterations with
 * chunks of 7, 3, 64 and 1. Counts are the same under any runtime. */
#include "omptest.h"

#define MAXN 1000
static int who[MAXN], runs[MAXN];

static void report(const char *kind, int n, int c) {
  int split = 0, chunks = 0, once = 1;
  for (int k = 0; k * c < n; k++) {
    chunks++;
    for (int i = k * c; i < n && i < (k + 1) * c; i++)
      if (who[i] != who[k * c]) {
        split++;
        break;
      }
  }
  for (int i = 0; i < n; i++)
    if (runs[i] != 1) once = 0;
  CHECK_EQ(split, 0);
  CHECK(once);
  printf("%s,%d over %d: %d chunks, %d run by more than one thread, each iteration once: %s\n",
         kind, c, n, chunks, split, once ? "yes" : "no");
}

static void reset(int n) {
  for (int i = 0; i < n; i++) who[i] = -1, runs[i] = 0;
}

static void one(int n, int c) {
  reset(n);
#pragma omp parallel
#pragma omp for schedule(dynamic, c)
  for (int i = 0; i < n; i++) {
    who[i] = omp_get_thread_num();
    AINC(&runs[i]);
  }
  report("dynamic", n, c);
  reset(n);
#pragma omp parallel
#pragma omp for schedule(nonmonotonic : dynamic, c)
  for (int i = 0; i < n; i++) {
    who[i] = omp_get_thread_num();
    AINC(&runs[i]);
  }
  report("nonmonotonic:dynamic", n, c);
  reset(n);
#pragma omp parallel
#pragma omp for schedule(monotonic : dynamic, c)
  for (int i = 0; i < n; i++) {
    who[i] = omp_get_thread_num();
    AINC(&runs[i]);
  }
  report("monotonic:dynamic", n, c);
}

int main(void) {
  one(100, 7);
  one(1000, 3);
  one(1000, 64);
  one(7, 3);
  one(100, 1);
  return omptest_finish("chunks");
}
