/* Drop-in test: 100,000 joinable threads in waves of 1,000, then 100,000
 * detached threads that count down under a mutex.
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1.
 *
 * Every thread gets a 64 KiB stack (or the system's minimum), so that the native run is limited by
 * neither memory nor mappings. Natively, detached threads that have not yet
 * exited count against the kernel's limits; a create that fails with EAGAIN
 * is retried after a millisecond (that never changes the output). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "create100k"
#include "dropin.h"

#define DEFAULT_THREADS 100000L
#define WAVE 1000L
#define STACK (64u << 10)

/* pthread_create, retrying EAGAIN for up to 30 s in all. */
static long eagain_retries;
static void create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg) {
  for (;;) {
    int rc = pthread_create(t, a, fn, arg);
    if (rc == 0) return;
    if (rc != EAGAIN || ++eagain_retries > 30000) FAIL("pthread_create gave %s", code_name(rc));
    struct timespec ms = {0, 1000000L};
    nanosleep(&ms, NULL);
  }
}

static void *joinable(void *arg) { return (void *)((uintptr_t)arg + 1); }

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t count_zero = PTHREAD_COND_INITIALIZER;
static long remaining;
static long long detached_sum;

static void *detached(void *arg) {
  pthread_mutex_lock(&count_lock);
  detached_sum += (long long)(uintptr_t)arg;
  if (--remaining == 0) pthread_cond_signal(&count_zero);
  pthread_mutex_unlock(&count_lock);
  return NULL;
}

int main(int argc, char **argv) {
  /* The number of threads of each kind: 100,000 unless given (a multiple of
   * the wave size; ctest gives fewer under an emulator, where each native
   * thread costs about a millisecond). */
  long threads = DEFAULT_THREADS;
  if (argc > 1) {
    char *end;
    threads = strtol(argv[1], &end, 10);
    if (*end || threads <= 0 || threads % WAVE)
      FAIL("usage: create100k [THREADS, a multiple of %ld]", WAVE);
  }
  remaining = threads;
  pthread_attr_t a;
  must("pthread_attr_init", pthread_attr_init(&a));
  /* 64 KiB, or the system's minimum where that is larger (128 KiB on
   * aarch64, whose pages may be 64 KiB). */
  size_t stack = STACK;
  long min = sysconf(_SC_THREAD_STACK_MIN);
  if (min > 0 && (size_t)min > stack) stack = (size_t)min;
  must("pthread_attr_setstacksize", pthread_attr_setstacksize(&a, stack));

  /* Joinable, in waves. */
  static pthread_t wave[WAVE];
  long long join_sum = 0;
  long joined = 0;
  for (long base = 0; base < threads; base += WAVE) {
    for (long i = 0; i < WAVE; i++) create(&wave[i], &a, joinable, (void *)(uintptr_t)(base + i));
    for (long i = 0; i < WAVE; i++) {
      void *ret;
      must("pthread_join", pthread_join(wave[i], &ret));
      if ((uintptr_t)ret != (uintptr_t)(base + i + 1))
        FAIL("thread %ld returned %lu", base + i, (unsigned long)(uintptr_t)ret);
      join_sum += (long long)(uintptr_t)ret;
      joined++;
    }
  }
  long long expect_join = (long long)threads * (threads + 1) / 2;
  if (joined != threads || join_sum != expect_join)
    FAIL("joined %ld threads with sum %lld, expected %ld and %lld", joined, join_sum, threads,
         expect_join);
  printf("joinable: %ld threads in waves of %ld, sum of join results %lld\n", joined, WAVE,
         join_sum);

  /* Detached: each counts down; the last one signals. */
  must("pthread_attr_setdetachstate", pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
  for (long i = 0; i < threads; i++) {
    pthread_t t;
    create(&t, &a, detached, (void *)(uintptr_t)i);
  }
  pthread_mutex_lock(&count_lock);
  while (remaining != 0) pthread_cond_wait(&count_zero, &count_lock);
  long long dsum = detached_sum;
  pthread_mutex_unlock(&count_lock);
  long long expect_detached = (long long)threads * (threads - 1) / 2;
  if (dsum != expect_detached) FAIL("detached sum %lld, expected %lld", dsum, expect_detached);
  printf("detached: %ld threads counted down to 0, sum of indices %lld\n", threads, dsum);
  must("pthread_attr_destroy", pthread_attr_destroy(&a));
  return 0;
}
