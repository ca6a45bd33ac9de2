/* Drop-in test: scheduling policies and priorities passed on to new
 * threads (PTHREAD_INHERIT_SCHED, glibc's default) and named for them
 * (PTHREAD_EXPLICIT_SCHED), read back through pthread_getschedparam,
 * pthread_getattr_np, sched_getscheduler and sched_getparam of the
 * calling thread; sched_setscheduler and sched_setparam of the calling
 * thread, with glibc's errors. Lightweight threads keep these for the
 * program and schedule by none of them (docs/dropin.md section 6).
 *
 * Setting SCHED_FIFO needs CAP_SYS_NICE or RLIMIT_RTPRIO; without them
 * each line shows EPERM and the policies stay SCHED_OTHER, natively and
 * preloaded alike.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#define DROPIN_PROG "sched"
#include "dropin.h"

/* What the calling thread reads about itself. */
static void *report(void *label) {
  int pol = -1, apol = -1, inh = -1;
  struct sched_param sp = {-1}, asp = {-1}, kp = {-1};
  int rc = pthread_getschedparam(pthread_self(), &pol, &sp);
  pthread_attr_t a;
  must("pthread_getattr_np", pthread_getattr_np(pthread_self(), &a));
  pthread_attr_getschedpolicy(&a, &apol);
  pthread_attr_getschedparam(&a, &asp);
  pthread_attr_getinheritsched(&a, &inh);
  pthread_attr_destroy(&a);
  int kpol = sched_getscheduler(0);
  int krc = sched_getparam(0, &kp);
  printf(
      "%s: getschedparam %s %d/%d; getattr %d/%d %s; sched_getscheduler %d, sched_getparam %d "
      "prio %d\n",
      (const char *)label, code_name(rc), pol, sp.sched_priority, apol, asp.sched_priority,
      inh == PTHREAD_INHERIT_SCHED ? "inherited" : "explicit", kpol, krc, kp.sched_priority);
  return NULL;
}

static void child(const char *label, int explicit_sched, int policy, int prio) {
  pthread_attr_t a;
  pthread_t t;
  must("pthread_attr_init", pthread_attr_init(&a));
  if (explicit_sched)
    must("setinheritsched", pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED));
  /* ignored unless explicit */
  struct sched_param sp = {prio};
  must("setschedpolicy", pthread_attr_setschedpolicy(&a, policy));
  must("setschedparam", pthread_attr_setschedparam(&a, &sp));
  int rc = pthread_create(&t, &a, report, (void *)label);
  if (rc) {
    printf("%s: pthread_create %s\n", label, code_name(rc));
  } else {
    must("pthread_join", pthread_join(t, NULL));
  }
  pthread_attr_destroy(&a);
}

static void plain_child(const char *label) {
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, report, (void *)label));
  must("pthread_join", pthread_join(t, NULL));
}

/* A thread that sets its own policy, then creates. */
static void *creator(void *p) {
  (void)p;
  struct sched_param sp = {7};
  printf("thread sets FIFO 7: %s\n",
         code_name(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)));
  report("thread");
  plain_child("its child, no attribute");
  child("its child, inherit (attribute RR 3 ignored)", 0, SCHED_RR, 3);
  child("its child, explicit OTHER 0", 1, SCHED_OTHER, 0);
  child("its child, explicit RR 3", 1, SCHED_RR, 3);
  return NULL;
}

/* A thread that sets its policy through sched_setscheduler. */
static void *kernel_calls(void *p) {
  (void)p;
  struct sched_param sp = {4};
  int rc = sched_setscheduler(0, SCHED_RR, &sp);
  printf("sched_setscheduler RR 4: %d %s\n", rc, rc ? code_name(errno_now()) : "");
  int pol = sched_getscheduler(0);
  sp.sched_priority = -1;
  sched_getparam(0, &sp);
  printf("sched_getscheduler %d, prio %d\n", pol, sp.sched_priority);
  sp.sched_priority = 6;
  rc = sched_setparam(0, &sp);
  printf("sched_setparam 6: %d %s\n", rc, rc ? code_name(errno_now()) : "");
  sp.sched_priority = -1;
  sched_getparam(0, &sp);
  printf("sched_getscheduler %d, prio %d\n", sched_getscheduler(0), sp.sched_priority);
  sp.sched_priority = 200;
  rc = sched_setparam(0, &sp);
  printf("sched_setparam 200: %d %s\n", rc, rc ? code_name(errno_now()) : "");
  sp.sched_priority = 0;
  rc = sched_setscheduler(0, 77, &sp);
  printf("sched_setscheduler 77: %d %s\n", rc, rc ? code_name(errno_now()) : "");
  sp.sched_priority = 0;
  rc = sched_setscheduler(0, SCHED_OTHER, &sp);
  printf("sched_setscheduler OTHER 0: %d %s\n", rc, rc ? code_name(errno_now()) : "");
  printf("sched_getscheduler %d\n", sched_getscheduler(0));
  return NULL;
}

int main(void) {
  /* before any thread exists */
  struct sched_param sp = {5};
  printf("main sets FIFO 5: %s\n",
         code_name(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)));
  report("main");
  plain_child("main's child, no attribute");
  child("main's child, inherit (attribute OTHER 0 ignored)", 0, SCHED_OTHER, 0);
  child("main's child, explicit OTHER 0", 1, SCHED_OTHER, 0);
  /* now with threads about */
  sp.sched_priority = 2;
  printf("main sets RR 2: %s\n", code_name(pthread_setschedparam(pthread_self(), SCHED_RR, &sp)));
  plain_child("main's child, no attribute");
  printf("main's setschedprio 9: %s\n", code_name(pthread_setschedprio(pthread_self(), 9)));
  plain_child("main's child, no attribute");
  sp.sched_priority = 0;
  printf("main sets OTHER 0: %s\n",
         code_name(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp)));
  plain_child("main's child, no attribute");
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, creator, NULL));
  must("pthread_join", pthread_join(t, NULL));
  must("pthread_create", pthread_create(&t, NULL, kernel_calls, NULL));
  must("pthread_join", pthread_join(t, NULL));
  report("main at the end");
  return 0;
}
