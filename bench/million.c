/* A million lightweight threads alive at once.
 *
 *   million [N=1000000]
 *
 * Creates N ito threads that each block on one ito_barrier of N+1; once all
 * of them have arrived, the main thread samples /proc/self/status and joins
 * the barrier last, releasing everyone; then it joins all N threads and
 * checks each result. Prints (CSV, after '#' metadata lines):
 *   n,workers,wall_s,create_s,arrive_s,finish_s,hwm_start_kb,hwm_end_kb,
 *   rss_peak_kb,pte_peak_kb,bytes_per_thread
 * bytes_per_thread = (hwm_end - hwm_start) * 1024 / N, where hwm is VmHWM
 * (peak resident set) read before creating any thread and at the end.
 * Exits nonzero if a create, wait or join fails or a result is wrong. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RESULT_TAG UINT64_C(0x5eed000000000000)

static ito_barrier_t barrier;
static long arrived;      /* threads that reached the barrier */
static long serial_count; /* ITO_BARRIER_SERIAL_THREAD returns seen */
static long wait_errors;

typedef struct status {
  long hwm_kb, rss_kb, pte_kb; /* -1 when the kernel does not report it */
} status;

static status read_status(void) {
  status s = {-1, -1, -1};
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return s;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    long v;
    if (sscanf(line, "VmHWM: %ld kB", &v) == 1)
      s.hwm_kb = v;
    else if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
      s.rss_kb = v;
    else if (sscanf(line, "VmPTE: %ld kB", &v) == 1)
      s.pte_kb = v;
  }
  fclose(f);
  return s;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *thread_main(void *arg) {
  uintptr_t i = (uintptr_t)arg;
  __atomic_fetch_add(&arrived, 1, __ATOMIC_RELEASE);
  int rc = ito_barrier_wait(&barrier);
  if (rc == ITO_BARRIER_SERIAL_THREAD)
    __atomic_fetch_add(&serial_count, 1, __ATOMIC_RELAXED);
  else if (rc != 0)
    __atomic_fetch_add(&wait_errors, 1, __ATOMIC_RELAXED);
  return (void *)(uintptr_t)(RESULT_TAG | (uint64_t)i);
}

int main(int argc, char **argv) {
  long n = 1000000;
  if (argc > 1) {
    char *end;
    errno = 0;
    n = strtol(argv[1], &end, 10);
    if (errno || end == argv[1] || *end || n < 1 || n > (1L << 32) - 2) {
      fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
      return 2;
    }
  }

  int rc = ito_init();
  if (rc) {
    fprintf(stderr, "million: ito_init failed: %s\n", strerror(rc));
    return 1;
  }
  int workers = ito_num_workers();

  ito_thread_t *th = malloc((size_t)n * sizeof *th);
  if (!th) {
    fprintf(stderr, "million: cannot allocate %ld handles\n", n);
    return 1;
  }
  memset(th, 0, (size_t)n * sizeof *th); /* touched now: not counted per thread */
  rc = ito_barrier_init(&barrier, (unsigned)(n + 1));
  if (rc) {
    fprintf(stderr, "million: ito_barrier_init(%ld) failed: %s\n", n + 1, strerror(rc));
    return 1;
  }

  status st0 = read_status();
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    rc = ito_create(thread_main, (void *)(uintptr_t)i, &th[i]);
    if (rc) {
      /* The threads made so far wait on a barrier that can never fill. */
      fprintf(stderr, "million: ito_create failed at thread %ld of %ld: %s\n", i, n, strerror(rc));
      fflush(stderr);
      _exit(1);
    }
  }
  double t1 = now_s();

  /* Wait until every thread has reached the barrier (bounded). */
  long last = -1;
  double last_progress = now_s();
  while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < n) {
    long a = __atomic_load_n(&arrived, __ATOMIC_RELAXED);
    if (a != last) {
      last = a;
      last_progress = now_s();
    } else if (now_s() - last_progress > 60.0) {
      fprintf(stderr, "million: stuck: %ld of %ld threads reached the barrier in 60 s\n", a, n);
      fflush(stderr);
      _exit(1);
    }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  double t2 = now_s();
  status peak = read_status(); /* all N threads alive and blocked */

  rc = ito_barrier_wait(&barrier);
  if (rc == ITO_BARRIER_SERIAL_THREAD)
    __atomic_fetch_add(&serial_count, 1, __ATOMIC_RELAXED);
  else if (rc != 0) {
    fprintf(stderr, "million: ito_barrier_wait in main failed: %s\n", strerror(rc));
    return 1;
  }

  long bad = 0, join_fail = 0;
  for (long i = 0; i < n; i++) {
    void *res = NULL;
    rc = ito_join(th[i], &res);
    if (rc) {
      if (join_fail++ < 5)
        fprintf(stderr, "million: ito_join(thread %ld) failed: %s\n", i, strerror(rc));
    } else if ((uint64_t)(uintptr_t)res != (RESULT_TAG | (uint64_t)i)) {
      if (bad++ < 5)
        fprintf(stderr, "million: thread %ld returned %#" PRIx64 ", expected %#" PRIx64 "\n", i,
                (uint64_t)(uintptr_t)res, RESULT_TAG | (uint64_t)i);
    }
  }
  double t3 = now_s();
  status st1 = read_status();
  ito_barrier_destroy(&barrier);
  free(th);

  int ok = 1;
  if (join_fail || bad) {
    fprintf(stderr, "million: WRONG: %ld joins failed, %ld wrong results\n", join_fail, bad);
    ok = 0;
  }
  if (wait_errors) {
    fprintf(stderr, "million: WRONG: %ld ito_barrier_wait calls failed\n", wait_errors);
    ok = 0;
  }
  if (serial_count != 1) {
    fprintf(stderr, "million: WRONG: %ld waiters got ITO_BARRIER_SERIAL_THREAD, expected 1\n",
            serial_count);
    ok = 0;
  }

  double bpt = (st0.hwm_kb >= 0 && st1.hwm_kb >= 0)
                   ? (double)(st1.hwm_kb - st0.hwm_kb) * 1024.0 / (double)n
                   : -1.0;
  printf("# bench=million system=ito workers=%d\n", workers);
  printf(
      "n,workers,wall_s,create_s,arrive_s,finish_s,hwm_start_kb,hwm_end_kb,rss_peak_kb,"
      "pte_peak_kb,bytes_per_thread\n");
  printf("%ld,%d,%.6f,%.6f,%.6f,%.6f,%ld,%ld,%ld,%ld,%.1f\n", n, workers, t3 - t0, t1 - t0, t2 - t1,
         t3 - t2, st0.hwm_kb, st1.hwm_kb, peak.rss_kb, peak.pte_kb, bpt);
  fflush(stdout);
  return ok ? 0 : 1;
}
