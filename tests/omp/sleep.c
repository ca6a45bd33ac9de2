/* Sleeping tasks and team members: 8 explicit tasks of a team of 4 each
 * sleep 100 ms (usleep, nanosleep, clock_nanosleep relative and absolute,
 * in turn), then 4 members of a team each sleep (one of them with
 * sleep(1)). Both
 * runtimes print the same results. Under libito-omp.so (found by its
 * runtime's ito_init) a sleeping task or member must park on a timer
 * rather than hold its worker (docs/openmp.md, "Sleeping"): the program
 * records when each sleep began and ended and checks that at least 3 of
 * the task sleeps, and 3 of the member sleeps, were under way at one
 * moment (a task runs as a member of its team: with 4 members at most 4
 * task sleeps can be under way at once, in any runtime).
 * A sleep goes on in pieces of 10 ms until 3 sleeps have begun (or as
 * many as the team has members; 30 s at most), so that a busy machine
 * that is late to start the others does not end the first ones before:
 * the overlap then shows only whether sleeps park. No wall time is asserted: on 1 or 2 workers,
 * sleeps that held their worker would overlap at most 2 at a time (run with ITO_EXTRA_WORKERS=0, so
 * that no extra worker stands in for a blocked one: tests/omp/ CMakeLists.txt). */
#define _GNU_SOURCE
#include "omptest.h"

#include <dlfcn.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#define NTASKS 8
#define NMEMBERS 4
#define SLEEP_NS 100000000L

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* 100 ms by the call numbered `how`; 0 or the call's error. */
static int sleep_by(int how) {
  struct timespec req = {0, SLEEP_NS}, rem = {0, 0};
  switch (how % 4) {
    case 0:
      return usleep(SLEEP_NS / 1000) ? errno : 0;
    case 1:
      return nanosleep(&req, &rem) ? errno : 0;
    case 2:
      return clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &rem);
    default: {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += SLEEP_NS;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      int rc = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL);
      struct timespec after;
      clock_gettime(CLOCK_REALTIME, &after);
      if (!rc && (after.tv_sec < until.tv_sec ||
                  (after.tv_sec == until.tv_sec && after.tv_nsec < until.tv_nsec)))
        rc = -1; /* woke before the deadline */
      return rc;
    }
  }
}

/* After a sleep: more sleeps of 10 ms until *begun reaches 3 (or the
 * team's size, if smaller), 30 s at most. */
static void until_three_began(int *begun) {
  struct timespec piece = {0, 10000000L};
  int want = omp_get_num_threads() < 3 ? omp_get_num_threads() : 3;
  for (int i = 0; i < 3000 && __atomic_load_n(begun, __ATOMIC_ACQUIRE) < want; i++)
    nanosleep(&piece, NULL);
}

/* The most intervals [start[i], end[i]) under way at one moment. */
static int max_overlap(const long long *start, const long long *end, int n) {
  int best = 0;
  for (int i = 0; i < n; i++) { /* the moment one of them starts */
    int k = 0;
    for (int j = 0; j < n; j++) k += start[j] <= start[i] && start[i] < end[j];
    if (k > best) best = k;
  }
  return best;
}

int main(void) {
  int under_ito = dlsym(RTLD_DEFAULT, "ito_init") != NULL;
  long long start[NTASKS], end[NTASKS], slept[NTASKS];
  int rcs[NTASKS], begun = 0, mbegun = 0;

#pragma omp parallel num_threads(NMEMBERS)
#pragma omp single
  for (int i = 0; i < NTASKS; i++) {
#pragma omp task firstprivate(i) shared(start, end, slept, rcs, begun)
    {
      start[i] = now_ns();
      __atomic_add_fetch(&begun, 1, __ATOMIC_RELEASE);
      rcs[i] = sleep_by(i);
      until_three_began(&begun);
      end[i] = now_ns();
      slept[i] = end[i] - start[i];
    }
  }
  int ok = 0, long_enough = 0;
  for (int i = 0; i < NTASKS; i++) {
    ok += rcs[i] == 0;
    long_enough += slept[i] >= SLEEP_NS - 1000000; /* (clock granularity) */
  }
  printf("tasks: %d slept, %d returned 0, %d slept at least 99 ms\n", NTASKS, ok, long_enough);

  long long mstart[NMEMBERS], mend[NMEMBERS];
  int mrc[NMEMBERS], members = 0;
#pragma omp parallel num_threads(NMEMBERS) shared(mstart, mend, mrc, members, mbegun)
  {
    int me = omp_get_thread_num();
#pragma omp single
    members = omp_get_num_threads();
    mstart[me] = now_ns();
    __atomic_add_fetch(&mbegun, 1, __ATOMIC_RELEASE);
    /* member 1 sleeps a whole second with sleep(3) */
    mrc[me] = me == 1 ? (int)sleep(1) : sleep_by(me);
    until_three_began(&mbegun);
    mend[me] = now_ns();
  }
  int mok = 0;
  for (int i = 0; i < members; i++) mok += mrc[i] == 0;
  printf("members: %d slept, %d returned 0\n", members, mok);
  /* sleep(0) and a zero nanosleep return at once with 0 */
  struct timespec zero = {0, 0};
  printf("zero sleeps: %u %d %d\n", sleep(0), usleep(0), nanosleep(&zero, NULL));
  /* bad arguments: as libc */
  struct timespec bad = {0, 1000000000L};
  int e1 = nanosleep(&bad, NULL) ? errno : 0;
  printf("bad nanosleep: %d, bad clock_nanosleep: %d\n", e1,
         clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL));

  if (under_ito) {
    int k = max_overlap(start, end, NTASKS);
    if (k < 3) {
      fprintf(stderr, "sleep: at most %d task sleeps were under way at once (want 3)\n", k);
      CHECK(k >= 3);
    }
    if (members == NMEMBERS) {
      int m = max_overlap(mstart, mend, members);
      if (m < 3) {
        fprintf(stderr, "sleep: at most %d member sleeps were under way at once (want 3)\n", m);
        CHECK(m >= 3);
      }
    }
  }
  return omptest_finish("sleep");
}
