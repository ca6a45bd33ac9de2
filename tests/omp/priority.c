/* priority as a hint among ready tasks (ito): one task writes x, then six
 * readers of x with priorities 0, 5, 2, 9, 1, 9 are created while it runs;
 * when it completes they become ready together and, on one worker, must
 * start highest priority first (equal ones in creation order), with the
 * priorities clamped to OMP_MAX_TASK_PRIORITY. Prints the start order.
 * priority.sh runs it under libito-omp.so with one worker. */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
  int x = 0, order[6], n = 0;
  const int prio[6] = {0, 5, 2, 9, 1, 9};
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    omp_event_handle_t ev;
#pragma omp task depend(out : x) detach(ev) shared(x)
    x = 1;
    for (int i = 0; i < 6; i++) {
#pragma omp task depend(in : x) priority(prio[i]) shared(order, n)
      order[n++] = i;
    }
    omp_fulfill_event(ev); /* all six are waiting for it now */
  }
  printf("max %d order", omp_get_max_task_priority());
  for (int i = 0; i < n; i++) printf(" %d", order[i]);
  printf("\n");
  return n == 6 ? 0 : 1;
}
