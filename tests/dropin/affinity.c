/* CPU affinity per thread, as natively: a thread pinned to one CPU (by
 * pthread_setaffinity_np, by an attribute at create, by sched_setaffinity
 * of itself) runs only there, across sleeps and yields that would move it;
 * its mask reads back as set; a set of every CPU frees it again; a set
 * with no CPU of the process is EINVAL. Output is deterministic; both.sh
 * compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "affinity"
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "dropin.h"

static int cpu;
static volatile int moved;

static void check_here(int rounds) {
  for (int i = 0; i < rounds; i++) {
    if (sched_getcpu() != cpu) moved++;
    if (i % 4 == 0)
      usleep(200);
    else
      sched_yield();
  }
}

static void *pin_self(void *p) {
  (void)p;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  if (rc) FAIL("pthread_setaffinity_np: %s", code_name(rc));
  check_here(400);
  cpu_set_t back;
  pthread_getaffinity_np(pthread_self(), sizeof back, &back);
  printf("setaffinity on itself: runs only on its CPU: %s, reads back one CPU: %s\n",
         moved ? "no" : "yes", CPU_COUNT(&back) == 1 && CPU_ISSET(cpu, &back) ? "yes" : "no");
  return NULL;
}

static void *pinned_by_attr(void *p) {
  (void)p;
  moved = 0;
  check_here(400);
  printf("attribute at create: runs only on its CPU: %s\n", moved ? "no" : "yes");
  return NULL;
}

static void *sched_self(void *p) {
  (void)p;
  cpu_set_t one, all, back;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  sched_getaffinity(0, sizeof all, &all);
  if (sched_setaffinity(0, sizeof one, &one)) FAIL("sched_setaffinity");
  moved = 0;
  check_here(200);
  sched_getaffinity(0, sizeof back, &back);
  printf("sched_setaffinity(0): runs only on its CPU: %s, reads back: %d CPU(s)\n",
         moved ? "no" : "yes", CPU_COUNT(&back));
  if (sched_setaffinity(0, sizeof all, &all)) FAIL("sched_setaffinity back");
  sched_getaffinity(0, sizeof back, &back);
  printf("every CPU again: reads back all of them: %s\n", CPU_EQUAL(&back, &all) ? "yes" : "no");
  return NULL;
}

static void *spinner(void *p) {
  (void)p;
  for (int i = 0; i < 2000; i++) sched_yield();
  return NULL;
}

/* Alive until released: a thread that may have ended is another answer
 * (ESRCH, from the kernel as from ito), not the one asked about. */
static atomic_int release;
static void *waiter(void *p) {
  (void)p;
  while (!atomic_load(&release)) sched_yield();
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  cpu_set_t all;
  sched_getaffinity(0, sizeof all, &all);
  for (cpu = 0; cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &all); cpu++) {
  } /* the first CPU of the process (a worker runs there however few there are) */
  pthread_t t, s[3];
  for (int i = 0; i < 3; i++) pthread_create(&s[i], NULL, spinner, NULL); /* company */
  pthread_create(&t, NULL, pin_self, NULL);
  pthread_join(t, NULL);
  pthread_attr_t a;
  pthread_attr_init(&a);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  pthread_attr_setaffinity_np(&a, sizeof one, &one);
  pthread_create(&t, &a, pinned_by_attr, NULL);
  pthread_join(t, NULL);
  pthread_create(&t, NULL, sched_self, NULL);
  pthread_join(t, NULL);
  cpu_set_t none;
  CPU_ZERO(&none);
  CPU_SET(CPU_SETSIZE - 1, &none); /* (no machine here has 1024 CPUs) */
  pthread_create(&t, NULL, waiter, NULL);
  printf("a set without a CPU of the process: %s\n",
         code_name(pthread_setaffinity_np(t, sizeof none, &none)));
  atomic_store(&release, 1);
  pthread_join(t, NULL);
  pthread_attr_setaffinity_np(&a, sizeof none, &none);
  printf("create with such a set: %s\n", code_name(pthread_create(&t, &a, spinner, NULL)));
  for (int i = 0; i < 3; i++) pthread_join(s[i], NULL);
  return 0;
}
