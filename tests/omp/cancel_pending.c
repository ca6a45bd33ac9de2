/* A task made ready while the members of a cancelled region leave it: the
 * one strand left waiting (the region's end, for the tasks member 0 made)
 * must run it. Member 0 makes A (a taskgroup whose task polls a
 * cancellation point), B after A and C after B, then cancels the region;
 * the other members leave their cancellable barrier. When A ends, B is
 * made ready on its runner's list and that runner wakes one waiting
 * strand: if the strand woken was a member on its way out, it must pass
 * the wake on (libito-omp's pending tasks, invariant 6), or the region's
 * end waits for ever (the region: cancel_waiting.h). Many rounds, so that the orders in which the
 * members leave come up; the outcome printed is what the specification
 * fixes (nothing of B and C runs once the region is cancelled). */
#include "omptest.h"

#include "cancel_waiting.h"

#define ROUNDS 400

int main(void) {
  const char *env = getenv("OMP_CANCELLATION");
  int enabled = env && !strcasecmp(env, "true");
  int ran_b = 0, ran_c = 0, past = 0;
  int n = 0;
#pragma omp parallel
#pragma omp single
  n = omp_get_num_threads();
  for (int r = 0; r < ROUNDS; r++) cancel_with_waiting_tasks(enabled, &ran_b, &ran_c, &past);
  printf("%d rounds: B ran %s, C ran %s, members past the barrier %s\n", ROUNDS,
         ran_b == (enabled ? 0 : ROUNDS) ? "as specified" : "WRONG",
         ran_c == (enabled ? 0 : ROUNDS) ? "as specified" : "WRONG",
         past == (enabled ? 0 : ROUNDS * n) ? "as specified" : "WRONG");
  CHECK_EQ(ran_b, enabled ? 0 : ROUNDS);
  CHECK_EQ(ran_c, enabled ? 0 : ROUNDS);
  CHECK_EQ(past, enabled ? 0 : ROUNDS * n);
  return 0;
}
