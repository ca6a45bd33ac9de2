/* A task made ready while the members of a cancelled region leave it: the
 * one strand left waiting (the region's end, for the tasks member 0 made)
 * must run it. Member 0 makes A (a taskgroup whose task polls a
 * cancellation point), B after A and C after B, then cancels the region;
 * the other members leave their cancellable barrier. When A ends, B is
 * made ready on its runner's list and that runner wakes one waiting
 * strand: if the strand woken was a member on its way out, it must pass
 * the wake on (libito-omp's pending tasks, invariant 6), or the region's
 * end waits for ever. Many rounds, so that the orders in which the
 * members leave come up; the outcome printed is what the specification
 * fixes (nothing of B and C runs once the region is cancelled). */
#include "omptest.h"

#define ROUNDS 400

int main(void) {
  const char *env = getenv("OMP_CANCELLATION");
  int enabled = env && !strcasecmp(env, "true");
  int ran_b = 0, ran_c = 0, past = 0, n = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int x = 0, y = 0;
#pragma omp parallel shared(x, y, ran_b, ran_c, past, n)
    {
      if (omp_get_thread_num() == 0) {
        n = omp_get_num_threads();
#pragma omp task depend(out : x) shared(x)
        {
          if (enabled) {
#pragma omp taskgroup
            {
#pragma omp task
              for (;;) {
#pragma omp cancellation point taskgroup
#pragma omp taskyield
              }
            }
          }
          x = 1;
        }
#pragma omp task depend(in : x) depend(out : y) shared(x, y, ran_b)
        {
          __atomic_fetch_add(&ran_b, 1, __ATOMIC_RELAXED);
          y = x;
        }
#pragma omp task depend(in : y) shared(ran_c)
        __atomic_fetch_add(&ran_c, 1, __ATOMIC_RELAXED);
#pragma omp cancel parallel
      }
#pragma omp barrier
      __atomic_fetch_add(&past, 1, __ATOMIC_RELAXED);
    }
  }
  printf("%d rounds: B ran %s, C ran %s, members past the barrier %s\n", ROUNDS,
         ran_b == (enabled ? 0 : ROUNDS) ? "as specified" : "WRONG",
         ran_c == (enabled ? 0 : ROUNDS) ? "as specified" : "WRONG",
         past == (enabled ? 0 : ROUNDS * n) ? "as specified" : "WRONG");
  CHECK_EQ(ran_b, enabled ? 0 : ROUNDS);
  CHECK_EQ(ran_c, enabled ? 0 : ROUNDS);
  CHECK_EQ(past, enabled ? 0 : ROUNDS * n);
  return 0;
}
