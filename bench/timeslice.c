/* timeslice [C] [N]: threads that compute without a call that can switch,
 * beside a thread that sleeps. C threads (default 4) count in a loop until
 * told to stop; one more thread sleeps 1 ms N times (default 200) and
 * measures how late each wake-up comes. A plain pthread program: run it
 * natively and under LD_PRELOAD=libito-pthread.so, where the computing
 * threads are preempted after a time slice (ITO_PREEMPT_MS,
 * docs/monitor.md) and the sleeper's wake-up waits for one. Prints the
 * lateness of the wake-ups (median, 90th and 99th percentile, largest), the
 * counting rate of all threads together and the smallest thread's share of
 * it (1/C is a fair share). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;
static unsigned long *counts;

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *count(void *p) {
  unsigned long *mine = p;
  while (!stop) __atomic_store_n(mine, *mine + 1, __ATOMIC_RELAXED);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int c = argc > 1 ? atoi(argv[1]) : 4;
  int n = argc > 2 ? atoi(argv[2]) : 200;
  if (c < 1 || n < 1) {
    fprintf(stderr, "usage: timeslice [computing threads >= 1] [sleeps >= 1]\n");
    return 2;
  }
  counts = calloc((size_t)c * 8, sizeof *counts); /* a cache line each */
  long long *late = calloc((size_t)n, sizeof *late);
  pthread_t *t = calloc((size_t)c, sizeof *t);
  if (!counts || !late || !t) return 1;
  long long t0 = now_ns();
  for (int i = 0; i < c; i++)
    if (pthread_create(&t[i], NULL, count, &counts[i * 8])) {
      perror("pthread_create");
      return 1;
    }
  for (int i = 0; i < n; i++) {
    struct timespec d = {0, 1000000};
    long long a = now_ns();
    nanosleep(&d, NULL);
    late[i] = now_ns() - a - 1000000;
  }
  stop = 1;
  for (int i = 0; i < c; i++) pthread_join(t[i], NULL);
  double secs = (now_ns() - t0) / 1e9;
  unsigned long sum = 0, least = (unsigned long)-1;
  for (int i = 0; i < c; i++) {
    sum += counts[i * 8];
    if (counts[i * 8] < least) least = counts[i * 8];
  }
  qsort(late, (size_t)n, sizeof *late, cmp);
  printf("timeslice: %d computing threads, %d sleeps of 1 ms in %.2f s\n", c, n, secs);
  printf("  wake-up lateness (us): median %.0f, p90 %.0f, p99 %.0f, max %.0f\n", late[n / 2] / 1e3,
         late[n * 9 / 10] / 1e3, late[n * 99 / 100] / 1e3, late[n - 1] / 1e3);
  printf("  counting: %.3g per second in all; the smallest thread's share %.3f (fair: %.3f)\n",
         sum / secs, sum ? (double)least / sum : 0.0, 1.0 / c);
  return 0;
}
