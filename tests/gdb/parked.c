/* The subject of tests/gdb/check.sh: three lightweight threads park on a
 * mutex the main thread holds, three levels down in parked_deep, and one
 * waits on a condition variable; then main stops in gdb_stop_here, where
 * gdb lists and unwinds them (and writes a core dump to list them from).
 * Main stops there only once all four have parked: a recorder
 * (docs/hooks.md) counts the parks, reported after a thread has left its
 * stack (the state gdb reads: parked_on set, no worker running it). A
 * number of yields is not enough: on a loaded machine the other worker may
 * not have run its thread to the wait yet. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <stdio.h>
#include <stdlib.h>

#include "../../src/dropin/ito_dropin.h"

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

/* Nothing else parks before the stop: main only yields. */
static int parks;
static void count_parks(const struct ito_event *e, void *arg) {
  (void)arg;
  if (e->kind == ITO_EV_PARK && e->peer == 0) __atomic_add_fetch(&parks, 1, __ATOMIC_RELEASE);
}

int main(void) {
  if (ito__dropin_hooks_attach(count_parks, NULL) || ito_init()) return 1;
  ito_mutex_lock(&mu);
  ito_thread_t t[4];
  for (int i = 0; i < 3; i++)
    if (ito_create(parked_locker, NULL, &t[i])) return 1;
  if (ito_create(parked_waiter, NULL, &t[3])) return 1;
  while (__atomic_load_n(&parks, __ATOMIC_ACQUIRE) < 4) ito_yield(); /* all four are parked */
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
