/* CPU time per thread, as natively: a thread that computes for 200 ms of
 * its own CPU time (CLOCK_THREAD_CPUTIME_ID) shows about that much on its
 * clock (pthread_getcpuclockid) read by another thread, and a thread that
 * sleeps meanwhile shows almost none; clock_getres answers for them.
 * Output is deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "cpuclock"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int done, release_;

static long long ns_of(clockid_t k) {
  struct timespec ts;
  if (clock_gettime(k, &ts)) FAIL("clock_gettime");
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void wait_release(void) {
  pthread_mutex_lock(&m);
  done++;
  pthread_cond_broadcast(&c);
  while (!release_) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
}

static void *computes(void *p) {
  (void)p;
  long long start = ns_of(CLOCK_THREAD_CPUTIME_ID);
  volatile unsigned long x = 0;
  while (ns_of(CLOCK_THREAD_CPUTIME_ID) - start < 200000000LL) {
    for (int i = 0; i < 100000; i++) x += (unsigned long)i * i;
    sched_yield(); /* (one worker must also run the others) */
  }
  wait_release();
  return NULL;
}

static void *sleeps(void *p) {
  (void)p;
  usleep(250000);
  wait_release();
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  pthread_t a, b;
  pthread_create(&a, NULL, computes, NULL);
  pthread_create(&b, NULL, sleeps, NULL);
  pthread_mutex_lock(&m);
  while (done < 2) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  clockid_t ca, cb;
  if (pthread_getcpuclockid(a, &ca) || pthread_getcpuclockid(b, &cb)) FAIL("pthread_getcpuclockid");
  long long ta = ns_of(ca), tb = ns_of(cb);
  struct timespec res;
  printf("computing thread: at least 190 ms of CPU: %s\n", ta >= 190000000LL ? "yes" : "no");
  printf("sleeping thread: under 50 ms of CPU: %s\n", tb < 50000000LL ? "yes" : "no");
  printf("clock_getres on a thread's clock: %s\n", clock_getres(ca, &res) == 0 ? "0" : "error");
  pthread_mutex_lock(&m);
  release_ = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  return 0;
}
