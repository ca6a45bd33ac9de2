/* 100,000 ito threads all blocked on one barrier of 100,001; the main thread
 * arrives last. (The 1,000,000-thread version is a benchmark, not a test.) */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

enum { N = 100000 };

static ito_barrier_t bar;
static atomic_int serial, arrived;

static void *thread_fn(void *arg) {
  atomic_fetch_add(&arrived, 1);
  int rc = ito_barrier_wait(&bar);
  if (rc == ITO_BARRIER_SERIAL_THREAD)
    atomic_fetch_add(&serial, 1);
  else
    CHECK_EQ(rc, 0);
  return arg;
}

int main(void) {
  ito_thread_t *t = malloc(sizeof *t * N);
  CHECK(t != NULL);
  CHECK_EQ(ito_barrier_init(&bar, N + 1), 0);
  for (intptr_t i = 0; i < N; i++) {
    int rc = ito_create(thread_fn, (void *)i, &t[i]);
    if (rc != 0) fprintf(stderr, "ito_create #%ld failed: %d\n", (long)i, rc);
    CHECK_EQ(rc, 0);
  }
  /* None can pass the barrier before main arrives. */
  CHECK_EQ(atomic_load(&serial), 0);
  int rc = ito_barrier_wait(&bar);
  CHECK(rc == 0 || rc == ITO_BARRIER_SERIAL_THREAD);
  if (rc == ITO_BARRIER_SERIAL_THREAD) atomic_fetch_add(&serial, 1);
  CHECK_EQ(atomic_load(&arrived), N);
  for (intptr_t i = 0; i < N; i++) {
    void *r = NULL;
    CHECK_EQ(ito_join(t[i], &r), 0);
    CHECK_EQ((intptr_t)r, i);
  }
  CHECK_EQ(atomic_load(&serial), 1);
  CHECK_EQ(ito_barrier_destroy(&bar), 0);
  free(t);
  puts("test_million: OK");
  return 0;
}
