/* The rest of the omp_* ICV API that gcc programs call, beyond the core
 * list: omp_get/set_dynamic, omp_get/set_schedule (and what OMP_SCHEDULE
 * sets), omp_get_max_active_levels (and what OMP_MAX_ACTIVE_LEVELS,
 * OMP_NESTED and OMP_NUM_THREADS lists set), omp_get_nested,
 * omp_get_supported_active_levels, omp_get_thread_limit,
 * omp_get_cancellation, omp_get_wtick. Values are printed and compared
 * with libgomp's (some are implementation-defined: the default
 * OMP_SCHEDULE, the monotonic flag reported for static, the level that
 * OMP_NESTED=true sets; libito-omp replaces libgomp, so it must give
 * libgomp's); no team sizes are printed (OMP_DYNAMIC=true may shrink
 * teams). */
#include "omptest.h"

static const char *kind_name(omp_sched_t k) {
  switch ((int)k & ~(int)omp_sched_monotonic) {
    case omp_sched_static:
      return "static";
    case omp_sched_dynamic:
      return "dynamic";
    case omp_sched_guided:
      return "guided";
    case omp_sched_auto:
      return "auto";
    default:
      return "other";
  }
}

/* The chunk of auto is not printed: libgomp keeps whatever was set last. */
static void print_schedule(const char *when) {
  omp_sched_t k;
  int chunk;
  omp_get_schedule(&k, &chunk);
  printf("%s: schedule %s%s", when, (k & omp_sched_monotonic) ? "monotonic:" : "", kind_name(k));
  if ((k & ~omp_sched_monotonic) != omp_sched_auto) printf(" chunk %d", chunk);
  printf("\n");
}

int main(void) {
  printf("dynamic %d nested %d max_active_levels %d cancellation %d thread_limit > 0 %d\n",
         omp_get_dynamic(), omp_get_nested(), omp_get_max_active_levels(), omp_get_cancellation(),
         omp_get_thread_limit() > 0);
  printf("supported_active_levels >= 1 %d, wtick > 0 %d\n", omp_get_supported_active_levels() >= 1,
         omp_get_wtick() > 0);
  CHECK(omp_get_wtick() > 0);
  print_schedule("from the environment");

  omp_set_schedule(omp_sched_dynamic, 5);
  print_schedule("after omp_set_schedule(dynamic, 5)");
  omp_set_schedule(omp_sched_guided, 0);
  print_schedule("after omp_set_schedule(guided, 0)");
  omp_set_schedule(omp_sched_static, 3);
  print_schedule("after omp_set_schedule(static, 3)");
  /* The runtime schedule is now static,3: chunks go round-robin. */
  {
    int owner[60], nthr = 1;
#pragma omp parallel num_threads(3)
    {
#pragma omp single
      nthr = omp_get_num_threads();
#pragma omp for schedule(runtime)
      for (int i = 0; i < 60; i++) owner[i] = omp_get_thread_num();
    }
    int bad = 0;
    for (int i = 0; i < 60; i++) bad += owner[i] != (i / 3) % nthr;
    printf(
        "schedule(runtime) after omp_set_schedule(static, 3): %d iterations in the wrong thread\n",
        bad);
    CHECK_EQ(bad, 0);
  }
  omp_set_schedule(omp_sched_auto, 0);
  print_schedule("after omp_set_schedule(auto, 0)");

  omp_set_dynamic(1);
  printf("after omp_set_dynamic(1): %d\n", omp_get_dynamic());
  omp_set_dynamic(0);
  printf("after omp_set_dynamic(0): %d\n", omp_get_dynamic());

  omp_set_max_active_levels(3);
  printf("after omp_set_max_active_levels(3): %d nested %d\n", omp_get_max_active_levels(),
         omp_get_nested());
  omp_set_max_active_levels(1);
  printf("after omp_set_max_active_levels(1): %d nested %d\n", omp_get_max_active_levels(),
         omp_get_nested());
  omp_set_nested(1);
  printf("after omp_set_nested(1): nested %d, max_active_levels > 1 %d\n", omp_get_nested(),
         omp_get_max_active_levels() > 1);
  omp_set_nested(0);
  printf("after omp_set_nested(0): nested %d, max_active_levels %d\n", omp_get_nested(),
         omp_get_max_active_levels());

  /* The ICVs seen inside a region are the ones set before it. */
  omp_set_schedule(omp_sched_guided, 4);
  omp_set_max_active_levels(2);
  {
    int bad = 0;
#pragma omp parallel num_threads(2)
    {
      omp_sched_t k;
      int c;
      omp_get_schedule(&k, &c);
      if ((k & ~omp_sched_monotonic) != omp_sched_guided || c != 4) AINC(&bad);
      if (omp_get_max_active_levels() != 2) AINC(&bad);
    }
    printf("ICVs inside a region: %d wrong\n", bad);
    CHECK_EQ(bad, 0);
  }
  return omptest_finish("extra_api");
}
