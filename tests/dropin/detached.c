/* Drop-in test: joining or detaching a detached thread gives EINVAL, as
 * glibc does, whether the thread still runs or has ended: created
 * detached (1000 times, each joined and detached at once: under
 * libito-pthread.so most have ended by then, their descriptors released),
 * detached while running and joined after it ended, and joinable,
 * detached after it ended (the detach releases it).
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <unistd.h>

#define DROPIN_PROG "detached"
#include "dropin.h"

static sem_t ended;

static void *quick(void *p) { return p; }

static void *posts(void *p) {
  sem_post(&ended);
  return p;
}

static pthread_barrier_t go;

static void *waits(void *p) {
  pthread_barrier_wait(&go);
  sem_post(&ended);
  return p;
}

int main(void) {
  pthread_attr_t a;
  must("pthread_attr_init", pthread_attr_init(&a));
  must("setdetachstate", pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED));
  /* Natively a detached thread's descriptor is its stack's, which glibc
   * keeps in its cache of 40 MiB: with 8 MiB stacks one may be unmapped
   * before the join reads it (it crashed 1 run in 5); small stacks stay. */
  long min = sysconf(_SC_THREAD_STACK_MIN); /* 128 KiB on AArch64 */
  size_t small = min > (64 << 10) ? (size_t)min : (size_t)64 << 10;
  must("setstacksize", pthread_attr_setstacksize(&a, small));
  pthread_attr_t ja; /* joinable, small for the same reason */
  must("pthread_attr_init", pthread_attr_init(&ja));
  must("setstacksize", pthread_attr_setstacksize(&ja, small));
  int join_einval = 0, detach_einval = 0, other = 0;
  for (int i = 0; i < 1000; i++) {
    pthread_t t;
    must("pthread_create", pthread_create(&t, &a, quick, NULL));
    int j = pthread_join(t, NULL);
    int d = pthread_detach(t);
    join_einval += j == EINVAL;
    detach_einval += d == EINVAL;
    if (j != EINVAL || d != EINVAL) {
      if (!other) fprintf(stderr, "detached: join %s, detach %s\n", code_name(j), code_name(d));
      other++;
    }
  }
  printf("created detached, 1000 times: join EINVAL %d, detach EINVAL %d, other %d\n", join_einval,
         detach_einval, other);

  /* one that posts before it ends: waited for, then joined and detached */
  sem_init(&ended, 0, 0);
  pthread_t t;
  must("pthread_create", pthread_create(&t, &a, posts, NULL));
  sem_wait(&ended);
  int j = pthread_join(t, NULL);
  int d = pthread_detach(t);
  printf("created detached, after its end: join %s, detach %s\n", code_name(j), code_name(d));

  /* joinable, detached while it runs, then ended */
  pthread_barrier_init(&go, NULL, 2);
  must("pthread_create", pthread_create(&t, &ja, waits, NULL));
  printf("detach of a running thread: %s\n", code_name(pthread_detach(t)));
  pthread_barrier_wait(&go);
  sem_wait(&ended);
  j = pthread_join(t, NULL);
  d = pthread_detach(t);
  printf("detached while running, after its end: join %s, detach %s\n", code_name(j), code_name(d));

  /* joinable, ended, then detached */
  must("pthread_create", pthread_create(&t, &ja, posts, NULL));
  sem_wait(&ended);
  printf("detach of a joinable thread after its end: %s\n", code_name(pthread_detach(t)));
  j = pthread_join(t, NULL);
  d = pthread_detach(t);
  printf("then: join %s, detach %s\n", code_name(j), code_name(d));
  pthread_barrier_destroy(&go);
  pthread_attr_destroy(&ja);
  pthread_attr_destroy(&a);
  return 0;
}
