/* Drop-in test: what a program reads back about its threads, as glibc
 * reports it: pthread_getattr_np's detach state, inherit flag, policy,
 * priority, guard size and scope; names set and read with
 * pthread_setname_np and pthread_getname_np; scheduling policies and
 * priorities set with pthread_setschedparam, pthread_setschedprio and an
 * explicit attribute at create, with glibc's errors (EINVAL for a bad
 * policy or priority, EPERM where the process may not); joining a
 * detached thread. Lightweight threads keep these for the program and
 * schedule by none of them (docs/dropin.md section 6).
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#define DROPIN_PROG "attrs"
#include "dropin.h"
static pthread_barrier_t b;
static void *f(void *p) {
  (void)p;
  pthread_barrier_wait(&b);
  return 0;
}
static void show(pthread_t t, const char *what) {
  pthread_attr_t a;
  int rc = pthread_getattr_np(t, &a);
  int ds = -1, inh = -1, pol = -1;
  size_t gs = 0;
  struct sched_param sp = {-1};
  int scope = -1;
  pthread_attr_getdetachstate(&a, &ds);
  pthread_attr_getinheritsched(&a, &inh);
  pthread_attr_getschedpolicy(&a, &pol);
  pthread_attr_getguardsize(&a, &gs);
  pthread_attr_getschedparam(&a, &sp);
  pthread_attr_getscope(&a, &scope);
  printf("%s: getattr %d detach %d inherit %d policy %d prio %d guard %zu scope %d\n", what, rc, ds,
         inh, pol, sp.sched_priority, gs, scope);
  pthread_attr_destroy(&a);
}
int main() {
  pthread_barrier_init(&b, 0, 2);
  pthread_t t;
  pthread_create(&t, 0, f, 0);
  show(t, "joinable");
  char name[32];
  int rc = pthread_setname_np(t, "worker-one");
  printf("setname %d\n", rc);
  rc = pthread_getname_np(t, name, sizeof name);
  printf("getname %d '%s'\n", rc, name);
  rc = pthread_setname_np(t, "a-name-that-is-too-long");
  printf("long setname %d\n", rc);
  int pol;
  struct sched_param sp;
  sp.sched_priority = 10;
  rc = pthread_setschedparam(t, SCHED_FIFO, &sp);
  printf("setsched FIFO 10: %d\n", rc);
  rc = pthread_getschedparam(t, &pol, &sp);
  printf("getsched %d: policy %d prio %d\n", rc, pol, sp.sched_priority);
  sp.sched_priority = 100;
  rc = pthread_setschedparam(t, SCHED_FIFO, &sp);
  printf("setsched FIFO 100: %d\n", rc);
  sp.sched_priority = 0;
  rc = pthread_setschedparam(t, SCHED_BATCH, &sp);
  printf("setsched BATCH 0: %d\n", rc);
  rc = pthread_getschedparam(t, &pol, &sp);
  printf("getsched %d: policy %d prio %d\n", rc, pol, sp.sched_priority);
  rc = pthread_setschedprio(t, 5);
  printf("setschedprio 5 under BATCH: %d\n", rc);
  sp.sched_priority = 0;
  rc = pthread_setschedparam(t, SCHED_OTHER, &sp);
  printf("setsched OTHER: %d\n", rc);
  rc = pthread_setschedparam(t, 77, &sp);
  printf("setsched 77: %d\n", rc);
  pthread_barrier_wait(&b);
  pthread_join(t, 0);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_barrier_init(&b, 0, 2);
  pthread_create(&t, &a, f, 0);
  show(t, "detached");
  rc = pthread_join(t, 0);
  printf("join detached: %s\n", rc == EINVAL ? "EINVAL" : strerror(rc));
  pthread_barrier_wait(&b);
  pthread_attr_init(&a);
  pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
  pthread_attr_setschedpolicy(&a, SCHED_RR);
  sp.sched_priority = 3;
  pthread_attr_setschedparam(&a, &sp);
  pthread_barrier_init(&b, 0, 2);
  rc = pthread_create(&t, &a, f, 0);
  printf("create RR 3: %d\n", rc);
  if (!rc) {
    show(t, "rr");
    pthread_getschedparam(t, &pol, &sp);
    printf("rr getsched policy %d prio %d\n", pol, sp.sched_priority);
    pthread_barrier_wait(&b);
    pthread_join(t, 0);
  }
  show(pthread_self(), "main");
  return 0;
}
