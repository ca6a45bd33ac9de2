/* Cancellation entry points: GOMP_cancel, GOMP_cancellation_point,
 * GOMP_barrier_cancel, GOMP_loop_end_cancel, GOMP_sections_end_cancel
 * (gcc emits the last three for constructs that contain a cancel).
 * With OMP_CANCELLATION unset or false the cancel constructs do nothing
 * and all the work is done; with OMP_CANCELLATION=true (the ctest case
 * omp_cancel_OMP_CANCELLATION_true) only the outcomes that the
 * specification fixes are printed: code after an executed cancel never
 * runs, members waiting at a barrier of a cancelled region leave it, tasks
 * that had not begun when their region or taskgroup was cancelled (waiting
 * for dependences, or created after) do not run and release their
 * successors, work done before the cancellation is there, constructs
 * after a cancelled one are not cancelled, the region and the program
 * still end. What the other members did before they noticed is not
 * printed. */
#include "omptest.h"

#include "cancel_waiting.h"

#define N 1000

int main(void) {
  const char *env = getenv("OMP_CANCELLATION");
  int enabled = env && !strcasecmp(env, "true");
  printf("cancellation %s, omp_get_cancellation() %d\n", enabled ? "enabled" : "disabled",
         omp_get_cancellation());
  CHECK_EQ(omp_get_cancellation(), enabled);
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
    int past = 0, looped = 0;
#pragma omp parallel shared(past, looped)
    {
      if (omp_get_thread_num() == 0) {
#pragma omp cancel parallel
      }
      /* a loop that thread 0 never enters when the region is cancelled:
       * its work share is never left by all (what it allocated is freed at
       * the region's end; a leak under ASan). How many iterations the
       * others run then depends on the schedule (thread 0's are not
       * run by a static one): not printed. */
#pragma omp for schedule(nonmonotonic : dynamic) nowait
      for (int i = 0; i < 64; i++) AINC(&looped);
#pragma omp barrier
      AINC(&past);
    }
    if (r == 0) printf("cancel parallel by thread 0: %d past the barrier\n", past);
    CHECK_EQ(past, enabled ? 0 : n);
    CHECK(looped <= 64);
    if (!enabled) CHECK_EQ(looped, 64);
  }

  /* cancel for in every iteration: no iteration gets past it; code after
   * the loop runs in every member (GOMP_loop_end_cancel). */
  {
    int started = 0, past_cancel = 0, after_loop = 0, checks = 0, later = 0;
    static int done[N];
    memset(done, 0, sizeof done);
#pragma omp parallel shared(started, past_cancel, after_loop, checks, later)
    {
#pragma omp for schedule(dynamic, 4)
      for (int i = 0; i < N; i++) {
        done[i] = 1; /* before the cancel: there afterwards */
        AINC(&started);
#pragma omp cancel for
        AINC(&past_cancel);
      }
      AINC(&after_loop);
      /* the work-share ring has 8 slots: these loops reuse the cancelled
       * loop's slot, and none is cancelled */
      for (int k = 0; k < 9; k++) {
#pragma omp for schedule(dynamic, 3)
        for (int i = 0; i < 100; i++) AINC(&later);
      }
      /* never true, but makes gcc use the cancellable loop and sections
       * ends (GOMP_loop_end_cancel, GOMP_sections_end_cancel) and
       * barriers (GOMP_barrier_cancel) in this region */
#pragma omp cancel parallel if (never)
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
    printf(
        "cancel for: iterations past the cancel %d, members after the loop %d, "
        "uncancelled loop %d\n",
        past_cancel, after_loop, checks);
    CHECK_EQ(past_cancel, enabled ? 0 : N);
    CHECK(started >= 1 && started <= N);
    int marked = 0;
    for (int i = 0; i < N; i++) marked += done[i];
    CHECK_EQ(marked, started);
    printf("cancel for: loops after it %d iterations\n", later);
    CHECK_EQ(later, 900);
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
#pragma omp cancel for if (i == 10)
#pragma omp cancellation point for
      }
      AINC(&after);
#pragma omp cancel parallel if (never)
    }
    printf("cancel for if(i == 10): members after the loop %d\n", after);
    CHECK(ran >= 1 && ran <= N);
    if (!enabled) CHECK_EQ(ran, N);
    CHECK_EQ(after, n);
  }

  /* cancel sections (GOMP_sections_end_cancel). */
  {
    int past = 0, after = 0, second = 0;
#pragma omp parallel shared(past, after, second)
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
#pragma omp sections
      {
#pragma omp section
        AINC(&second);
#pragma omp section
        AINC(&second);
      }
#pragma omp cancel parallel if (never)
    }
    printf("cancel sections: %d past the cancel, %d members after, next sections %d\n", past, after,
           second);
    CHECK_EQ(past, enabled ? 0 : 3);
    CHECK_EQ(after, n);
    CHECK_EQ(second, 2);
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

  /* cancel taskgroup while tasks wait for dependences: A waits (only when
   * cancellation is on) until its taskgroup is cancelled, by D; B waits for
   * A and C for B, so neither can begin before the cancellation: both are
   * discarded, and C's wait for the discarded B ends. Tasks created after
   * the cancellation (E, once the taskwait saw D done) are discarded at
   * once. A later taskgroup runs its tasks. */
  {
    int x = 0, y = 0, ran_b = 0, ran_c = 0, ran_e = 0, ran_next = 0, ended = 0;
#pragma omp parallel shared(x, y, ran_b, ran_c, ran_e, ran_next, ended)
#pragma omp single
    {
#pragma omp taskgroup
      {
#pragma omp task depend(out : x) shared(x)
        {
          if (enabled)
            for (;;) {
#pragma omp cancellation point taskgroup
#pragma omp taskyield
            }
          x = 1;
        }
#pragma omp task depend(in : x) depend(out : y) shared(x, y, ran_b)
        {
          AINC(&ran_b);
          y = x;
        }
#pragma omp task depend(in : y) shared(y, ran_c)
        AINC(&ran_c);
#pragma omp task
        {
#pragma omp cancel taskgroup
        }
#pragma omp taskwait
        for (int i = 0; i < 50; i++) {
#pragma omp task shared(ran_e)
          AINC(&ran_e);
        }
      }
      ended = 1;
#pragma omp taskgroup
      {
        for (int i = 0; i < 50; i++) {
#pragma omp task shared(ran_next)
          AINC(&ran_next);
        }
      }
    }
    printf(
        "cancel taskgroup with dependences: B ran %d, C ran %d, created after %d, "
        "ended %d, next taskgroup %d\n",
        ran_b, ran_c, ran_e, ended, ran_next);
    CHECK_EQ(ran_b, enabled ? 0 : 1);
    CHECK_EQ(ran_c, enabled ? 0 : 1);
    CHECK_EQ(ran_e, enabled ? 0 : 50);
    CHECK_EQ(ran_next, 50);
  }

  /* cancel parallel discards the tasks waiting for dependences: A ends
   * (when cancellation is on) only once the region is cancelled (its
   * child polls a cancellation point, which a cancelled region answers),
   * and B and C wait for it. */
  for (int r = 0; r < 5; r++) {
    int ran_b = 0, ran_c = 0, past = 0;
    cancel_with_waiting_tasks(enabled, &ran_b, &ran_c, &past);
    if (r == 0)
      printf("cancel parallel with waiting tasks: B ran %d, C ran %d, %d past the barrier\n", ran_b,
             ran_c, past);
    CHECK_EQ(ran_b, enabled ? 0 : 1);
    CHECK_EQ(ran_c, enabled ? 0 : 1);
    CHECK_EQ(past, enabled ? 0 : n);
  }

  /* cancel taskgroup in every task of a taskloop: no task gets past it. */
  {
    int past = 0, after = 0;
#pragma omp parallel shared(past, after)
#pragma omp single
    {
#pragma omp taskloop num_tasks(40) shared(past)
      for (int i = 0; i < 400; i++) {
#pragma omp cancel taskgroup
        AINC(&past);
      }
      after = 1;
    }
    printf("cancel taskgroup in a taskloop: %d past the cancel, after %d\n", past, after);
    CHECK_EQ(past, enabled ? 0 : 400);
    CHECK_EQ(after, 1);
  }

  /* a nested region that is cancelled leaves the enclosing one going. */
  {
    int inner_past = 0, outer_past = 0;
#pragma omp parallel shared(inner_past, outer_past)
    {
#pragma omp parallel num_threads(2) shared(inner_past)
      {
#pragma omp cancel parallel
        AINC(&inner_past);
      }
#pragma omp barrier
      AINC(&outer_past);
#pragma omp cancel parallel if (never)
    }
    printf("nested: %d past the inner cancel, %d members of the outer region after it\n",
           inner_past, outer_past);
    CHECK_EQ(outer_past, n);
    if (enabled) CHECK_EQ(inner_past, 0);
  }

  /* cancel parallel by thread 0 while the last member goes on through 12
   * nowait loops with no cancellation point between (the others leave at
   * theirs, or go on too if they passed it first): every loop still runs
   * all its iterations, taken by whoever is in it (a monotonic schedule:
   * a nonmonotonic one may leave the chunks of members that left, docs/
   * openmp.md). More loops than the 8 work shares a member may be ahead of
   * one that left. */
  if (n >= 2)
    for (int r = 0; r < 5; r++) {
      int flag = 0, loops = 0, iters = 0;
#pragma omp parallel shared(flag, loops, iters)
      {
        int id = omp_get_thread_num(), last = omp_get_num_threads() - 1;
        if (id == 0) {
          __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
#pragma omp cancel parallel
        }
        while (!__atomic_load_n(&flag, __ATOMIC_ACQUIRE)) {
        }
        if (id != last) {
#pragma omp cancellation point parallel
        }
        for (int k = 0; k < 12; k++) {
#pragma omp for schedule(monotonic : dynamic, 5) nowait
          for (int i = 0; i < 100; i++) AINC(&iters);
          if (id == last) AINC(&loops);
        }
      }
      if (r == 0)
        printf(
            "cancel parallel, the last member through 12 nowait loops: %d loops, %d "
            "iterations\n",
            loops, iters);
      CHECK_EQ(loops, 12);
      CHECK_EQ(iters, 1200);
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
