/* The subject of tests/gdb/check.sh: three lightweight threads park on a
 * mutex the main thread holds, three levels down in parked_deep, and one
 * waits on a condition variable; then main stops in gdb_stop_here, where
 * gdb lists and unwinds them (and writes a core dump to list them from). */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <stdio.h>
#include <stdlib.h>

static ito_mutex_t mu = ITO_MUTEX_INITIALIZER;
static ito_mutex_t cmu = ITO_MUTEX_INITIALIZER;
static ito_cond_t cv = ITO_COND_INITIALIZER;
static int go;

__attribute__((noinline)) static void parked_deep(int n) {
  if (n) {
    parked_deep(n - 1);
    __asm__ volatile("");
    return;
  }
  ito_mutex_lock(&mu);
  ito_mutex_unlock(&mu);
}

static void *parked_locker(void *a) {
  (void)a;
  parked_deep(3);
  return NULL;
}

static void *parked_waiter(void *a) {
  (void)a;
  ito_mutex_lock(&cmu);
  while (!go) ito_cond_wait(&cv, &cmu);
  ito_mutex_unlock(&cmu);
  return NULL;
}

__attribute__((noinline)) void gdb_stop_here(void) { __asm__ volatile(""); }

int main(void) {
  if (ito_init()) return 1;
  ito_mutex_lock(&mu);
  ito_thread_t t[4];
  for (int i = 0; i < 3; i++)
    if (ito_create(parked_locker, NULL, &t[i])) return 1;
  if (ito_create(parked_waiter, NULL, &t[3])) return 1;
  for (int i = 0; i < 200; i++) ito_yield(); /* they all reach their waits */
  gdb_stop_here();
  ito_mutex_unlock(&mu);
  ito_mutex_lock(&cmu);
  go = 1;
  ito_cond_broadcast(&cv);
  ito_mutex_unlock(&cmu);
  for (int i = 0; i < 4; i++) ito_join(t[i], NULL);
  puts("parked: done");
  return 0;
}
