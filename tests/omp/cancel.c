/* Cancellation entry points: GOMP_cancel, GOMP_cancellation_point,
 * GOMP_barrier_cancel, GOMP_loop_end_cancel, GOMP_sections_end_cancel
 * (gcc emits the last three for constructs that contain a cancel).
 * With OMP_CANCELLATION unset or false the cancel constructs do nothing
 * and all the work is done; with OMP_CANCELLATION=true (the ctest case
 * omp_cancel_enabled) only the outcomes that the specification fixes are
 * printed: code after an executed cancel never runs, members waiting at
 * a barrier of a cancelled region leave it, the region and the program
 * still end. */
#include "omptest.h"

#define N 1000

int main(void) {
  const char *env = getenv("OMP_CANCELLATION");
  int enabled = env && !strcasecmp(env, "true");
  printf("cancellation %s\n", enabled ? "enabled" : "disabled");
  int n = 0;
#pragma omp parallel
#pragma omp single
  n = omp_get_num_threads();
  int never = n < 0;

  /* cancel parallel by every member: nothing after it runs. */
  {
    int before = 0, after = 0;
#pragma omp parallel shared(before, after)
    {
      AINC(&before);
#pragma omp cancel parallel
      AINC(&after);
    }
    printf("cancel parallel by all: %d before, %d after\n", before, after);
    CHECK_EQ(before, n);
    CHECK_EQ(after, enabled ? 0 : n);
  }

  /* cancel parallel by thread 0 only; the others wait at a barrier
   * (GOMP_barrier_cancel) and leave the region when it is cancelled. */
  for (int r = 0; r < 20; r++) {
    int past = 0;
#pragma omp parallel shared(past)
    {
      if (omp_get_thread_num() == 0) {
#pragma omp cancel parallel
      }
#pragma omp barrier
      AINC(&past);
    }
    if (r == 0) printf("cancel parallel by thread 0: %d past the barrier\n", past);
    CHECK_EQ(past, enabled ? 0 : n);
  }

  /* cancel for in every iteration: no iteration gets past it; code after
   * the loop runs in every member (GOMP_loop_end_cancel). */
  {
    int started = 0, past_cancel = 0, after_loop = 0, checks = 0;
#pragma omp parallel shared(started, past_cancel, after_loop, checks)
    {
#pragma omp for schedule(dynamic, 4)
      for (int i = 0; i < N; i++) {
        AINC(&started);
#pragma omp cancel for
        AINC(&past_cancel);
      }
      AINC(&after_loop);
      /* never true, but makes gcc use the cancellable loop and sections
       * ends (GOMP_loop_end_cancel, GOMP_sections_end_cancel) and
       * barriers (GOMP_barrier_cancel) in this region */
#pragma omp cancel parallel if(never)
      /* cancellation point in a loop that nobody cancels */
#pragma omp for
      for (int i = 0; i < N; i++) {
#pragma omp cancellation point for
        AINC(&checks);
        if (i < 0) {
#pragma omp cancel for
        }
      }
    }
    printf("cancel for: iterations past the cancel %d, members after the loop %d, "
           "uncancelled loop %d\n",
           past_cancel, after_loop, checks);
    CHECK_EQ(past_cancel, enabled ? 0 : N);
    CHECK(started >= 1 && started <= N);
    if (!enabled) CHECK_EQ(started, N);
    CHECK_EQ(after_loop, n);
    CHECK_EQ(checks, N);
  }

  /* cancel for on a condition: the loop ends early or not, and the
   * region goes on (only fixed outcomes are printed). */
  {
    int ran = 0, after = 0;
#pragma omp parallel shared(ran, after)
    {
#pragma omp for schedule(static, 1)
      for (int i = 0; i < N; i++) {
        AINC(&ran);
#pragma omp cancel for if(i == 10)
#pragma omp cancellation point for
      }
      AINC(&after);
#pragma omp cancel parallel if(never)
    }
    printf("cancel for if(i == 10): members after the loop %d\n", after);
    CHECK(ran >= 1 && ran <= N);
    if (!enabled) CHECK_EQ(ran, N);
    CHECK_EQ(after, n);
  }

  /* cancel sections (GOMP_sections_end_cancel). */
  {
    int past = 0, after = 0;
#pragma omp parallel shared(past, after)
    {
#pragma omp sections
      {
#pragma omp section
        {
#pragma omp cancel sections
          AINC(&past);
        }
#pragma omp section
        {
#pragma omp cancel sections
          AINC(&past);
        }
#pragma omp section
        {
#pragma omp cancel sections
          AINC(&past);
        }
      }
      AINC(&after);
#pragma omp cancel parallel if(never)
    }
    printf("cancel sections: %d past the cancel, %d members after\n", past, after);
    CHECK_EQ(past, enabled ? 0 : 3);
    CHECK_EQ(after, n);
  }

  /* cancel taskgroup: tasks that cancel stop there; the taskgroup ends. */
  {
    int past = 0, points = 0, after = 0;
#pragma omp parallel shared(past, points, after)
#pragma omp single
    {
#pragma omp taskgroup
      {
        for (int i = 0; i < 200; i++) {
#pragma omp task shared(past, points)
          {
#pragma omp cancellation point taskgroup
            AINC(&points);
#pragma omp cancel taskgroup
            AINC(&past);
          }
        }
      }
      after = 1;
    }
    printf("cancel taskgroup: %d tasks past the cancel, taskgroup ended %d\n", past, after);
    CHECK_EQ(past, enabled ? 0 : 200);
    if (!enabled) CHECK_EQ(points, 200);
    CHECK_EQ(after, 1);
  }

  /* A region after all the cancelled ones works normally. */
  {
    int members = 0;
#pragma omp parallel
    {
#pragma omp barrier
      AINC(&members);
    }
    printf("next region: %d members\n", members);
    CHECK_EQ(members, n);
  }
  return omptest_finish("cancel");
}
