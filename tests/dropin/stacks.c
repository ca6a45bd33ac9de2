/* Drop-in test: thread stacks as the program asks for them.
 *  - an explicit size is honoured, glibc's default of 8 MiB included (a
 *    thread recurses 6 MiB deep);
 *  - PTHREAD_STACK_MIN is accepted;
 *  - the program's own memory (pthread_attr_setstack) is the stack, at
 *    PTHREAD_STACK_MIN and at 1 MiB;
 *  - 32 threads with 8 MiB stacks are alive at once, each 4 MiB deep;
 *  - 2000 threads with 1 MiB stacks are created and joined one after the
 *    other (the stacks are reused).
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DROPIN_PROG "stacks"
#include "dropin.h"

/* Uses about kib KiB of stack; returns a value that depends on every frame. */
static __attribute__((noinline)) long deep(int kib) {
  volatile char frame[1000];
  memset((char *)frame, kib & 0x7f, sizeof frame);
  if (kib <= 1) return frame[10];
  return deep(kib - 1) + frame[kib % 1000];
}

struct job {
  int kib;
  long result;
  char *lo, *hi; /* the memory the stack must lie in, when known */
  int inside;
};

static void *run(void *p) {
  struct job *j = p;
  char here;
  j->inside = !j->lo || (&here >= j->lo && &here < j->hi);
  j->result = deep(j->kib);
  pthread_attr_t a;
  void *lo;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
    FAIL("pthread_getattr_np");
  pthread_attr_destroy(&a);
  /* the stack reported holds this frame */
  if (&here < (char *)lo || &here >= (char *)lo + size) FAIL("the reported stack misses a local");
  return (void *)size;
}

static size_t one(size_t stacksize, void *mem, size_t memsize, int kib, long *result) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  int rc = 0;
  if (mem)
    rc = pthread_attr_setstack(&a, mem, memsize);
  else if (stacksize)
    rc = pthread_attr_setstacksize(&a, stacksize);
  if (rc) FAIL("setting the stack: %s", code_name(rc));
  struct job j = {.kib = kib, .lo = mem, .hi = mem ? (char *)mem + memsize : NULL};
  pthread_t t;
  if ((rc = pthread_create(&t, &a, run, &j))) FAIL("pthread_create: %s", code_name(rc));
  void *size;
  if ((rc = pthread_join(t, &size))) FAIL("pthread_join: %s", code_name(rc));
  pthread_attr_destroy(&a);
  if (!j.inside) FAIL("a thread on the program's memory ran elsewhere");
  *result = j.result;
  return (size_t)size;
}

static pthread_barrier_t all_alive;

static void *alive(void *p) {
  struct job *j = p;
  j->result = deep(j->kib);
  pthread_barrier_wait(&all_alive);
  return NULL;
}

int main(void) {
  long r;
  size_t size = one(8u << 20, NULL, 0, 6 << 10, &r);
  printf("8 MiB asked: %s, recursion 6 MiB deep gives %ld\n",
         size >= (8u << 20) ? "at least 8 MiB" : "less", r);

  size = one(PTHREAD_STACK_MIN, NULL, 0, 4, &r);
  printf("PTHREAD_STACK_MIN asked: accepted, %s, recursion gives %ld\n",
         size >= (size_t)PTHREAD_STACK_MIN / 2 ? "usable" : "too small", r);

  void *mem = aligned_alloc(4096, PTHREAD_STACK_MIN);
  if (!mem) FAIL("aligned_alloc");
  one(0, mem, PTHREAD_STACK_MIN, 4, &r);
  printf("own memory of PTHREAD_STACK_MIN: ran on it, recursion gives %ld\n", r);
  free(mem);

  mem = aligned_alloc(4096, 1u << 20);
  if (!mem) FAIL("aligned_alloc");
  one(0, mem, 1u << 20, 700, &r);
  printf("own memory of 1 MiB: ran on it, recursion 700 KiB deep gives %ld\n", r);
  free(mem);

  enum { ALIVE = 32 };
  pthread_t t[ALIVE];
  struct job jobs[ALIVE];
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 8u << 20);
  pthread_barrier_init(&all_alive, NULL, ALIVE);
  for (int i = 0; i < ALIVE; i++) {
    jobs[i] = (struct job){.kib = 4 << 10};
    int rc = pthread_create(&t[i], &a, alive, &jobs[i]);
    if (rc) FAIL("pthread_create %d: %s", i, code_name(rc));
  }
  long sum = 0;
  for (int i = 0; i < ALIVE; i++) {
    pthread_join(t[i], NULL);
    sum += jobs[i].result;
  }
  pthread_barrier_destroy(&all_alive);
  printf("%d threads with 8 MiB stacks alive at once, 4 MiB deep each: sum %ld\n", ALIVE, sum);

  pthread_attr_setstacksize(&a, 1u << 20);
  long total = 0;
  for (int i = 0; i < 2000; i++) {
    struct job j = {.kib = 100 + i % 500};
    int rc = pthread_create(&t[0], &a, run, &j);
    if (rc) FAIL("pthread_create %d: %s", i, code_name(rc));
    pthread_join(t[0], NULL);
    total += j.result;
  }
  pthread_attr_destroy(&a);
  printf("2000 threads with 1 MiB stacks one after the other: sum %ld\n", total);
  return 0;
}
