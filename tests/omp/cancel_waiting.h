/* One parallel region of tests/omp/cancel.c and cancel_pending.c: member 0
 * makes A (with cancellation on, a taskgroup whose task polls a
 * cancellation point for ever), B after A and C after B, then cancels the
 * region; every member then meets a cancellable barrier. With
 * cancellation on, A ends only once the region is cancelled (its child's
 * cancellation point answers the cancelled region), and B and C, waiting
 * for it, never run. Adds to *ran_b, *ran_c and *past (the members past
 * the barrier). */
#ifndef ITO_TESTS_OMP_CANCEL_WAITING_H
#define ITO_TESTS_OMP_CANCEL_WAITING_H

#include <omp.h>

static void cancel_with_waiting_tasks(int enabled, int *ran_b, int *ran_c, int *past) {
  int x = 0, y = 0;
#pragma omp parallel shared(x, y)
  {
    if (omp_get_thread_num() == 0) {
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
#pragma omp task depend(in : x) depend(out : y) shared(x, y)
      {
        __atomic_fetch_add(ran_b, 1, __ATOMIC_RELAXED);
        y = x;
      }
#pragma omp task depend(in : y)
      __atomic_fetch_add(ran_c, 1, __ATOMIC_RELAXED);
#pragma omp cancel parallel
    }
#pragma omp barrier
    __atomic_fetch_add(past, 1, __ATOMIC_RELAXED);
  }
}

#endif
