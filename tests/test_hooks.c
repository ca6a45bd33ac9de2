/* Event hooks (docs/hooks.md): a recorder attached before start sees every
 * fork and join of a traced task group (exactly as many as the program
 * made), every thread created, steals, parks, resumes, sleeps and
 * wake-ups, and the program computes what it computes without one. Attach
 * rules: NULL and a second recorder are refused, and so is a recorder
 * after the runtime started. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../src/dropin/ito_dropin.h"
#include "check.h"

static long counts[ITO_EV_KINDS];
static int bad_worker;

static void record(const struct ito_event *e, void *arg) {
  CHECK(arg == (void *)counts);
  CHECK(e->kind > 0 && e->kind < ITO_EV_KINDS);
  if (e->worker < -1 || e->worker >= 64) __atomic_store_n(&bad_worker, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&counts[e->kind], 1, __ATOMIC_RELAXED);
}
static void other(const struct ito_event *e, void *arg) { (void)e, (void)arg; }

static long count(int kind) { return __atomic_load_n(&counts[kind], __ATOMIC_RELAXED); }

/* fib with a checked C task group: one fork and one join per inner call */
static long forks;
static long fib(int n);
struct fib_arg {
  int n;
  long *out;
};
static void fib_child(void *p) {
  struct fib_arg *a = p;
  *a->out = fib(a->n);
}
static long fib(int n) {
  if (n < 2) return n;
  long x, y;
  ito_tg_t tg;
  ito_tg_init(&tg);
  struct fib_arg a = {n - 1, &x};
  __atomic_add_fetch(&forks, 1, __ATOMIC_RELAXED);
  ito_tg_fork(&tg, fib_child, &a, sizeof a);
  y = fib(n - 2);
  ito_tg_join(&tg);
  return x + y;
}

/* Waits, blocking its worker, until events of kind number more than
 * `than` (a state of the other workers, not a time: a loaded machine may
 * not run them for seconds); fails after 100 s. */
static void wait_until_more(int kind, long than, const char *what) {
  for (long i = 0; count(kind) <= than; i++) {
    if (i == 100000) {
      fprintf(stderr, "test_hooks: FAIL: no %s within 100 s\n", what);
      exit(1);
    }
    usleep(1000);
  }
}

/* a fork whose child waits for a thief */
static void wait_for_steal(void *p) {
  (void)p;
  wait_until_more(ITO_EV_STEAL, 0, "steal of a blocked worker's continuation");
}

/* hold_a_while holds the mutex, blocking its worker, until a thread has
 * parked: take_mutex on it (or main in its join of this thread) */
static ito_mutex_t mu = ITO_MUTEX_INITIALIZER;
static long parks_before;
static void *hold_a_while(void *p) {
  (void)p;
  ito_mutex_lock(&mu);
  wait_until_more(ITO_EV_PARK, parks_before, "park while a worker holds a contended mutex");
  ito_mutex_unlock(&mu);
  return NULL;
}
static void *take_mutex(void *p) {
  (void)p;
  ito_mutex_lock(&mu);
  ito_mutex_unlock(&mu);
  return NULL;
}

int main(void) {
  CHECK_EQ(ito__dropin_hooks_attach(NULL, NULL), EINVAL);
  CHECK_EQ(ito__dropin_hooks_attach(record, counts), 0);
  CHECK_EQ(ito__dropin_hooks_attach(other, NULL), EINVAL); /* one recorder */
  CHECK_EQ(ito_init(), 0);
  CHECK(ito_num_workers() >= 2);

  long r = fib(22);
  CHECK_EQ(r, 17711);
  CHECK_EQ(count(ITO_EV_SPAWN), forks);
  CHECK_EQ(count(ITO_EV_JOIN), forks);

  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_fork(&tg, wait_for_steal, NULL, 0);
  ito_tg_join(&tg);
  CHECK(count(ITO_EV_STEAL) > 0);

  long created_before = count(ITO_EV_CREATE);
  parks_before = count(ITO_EV_PARK);
  ito_thread_t a, b;
  CHECK_EQ(ito_create(hold_a_while, NULL, &a), 0);
  CHECK_EQ(ito_create(take_mutex, NULL, &b), 0);
  CHECK_EQ(ito_join(a, NULL), 0);
  CHECK_EQ(ito_join(b, NULL), 0);
  CHECK_EQ(count(ITO_EV_CREATE) - created_before, 2);
  CHECK(count(ITO_EV_PARK) > 0); /* the joins, or the mutex */
  CHECK(count(ITO_EV_RESUME) > 0);

  /* idle: the other worker goes to sleep (ITO_SPIN_US is small) while
   * this one blocks; a sleeper has reported more sleeps than wake-ups */
  for (long i = 0; count(ITO_EV_SLEEP) <= count(ITO_EV_WAKE); i++) {
    if (i == 100000) {
      fprintf(stderr, "test_hooks: FAIL: no worker asleep within 100 s\n");
      exit(1);
    }
    usleep(1000);
  }
  long wakes = count(ITO_EV_WAKE);
  ito_thread_t c;
  CHECK_EQ(ito_create(take_mutex, NULL, &c), 0); /* its creator's continuation wakes it */
  CHECK_EQ(ito_join(c, NULL), 0);
  wait_until_more(ITO_EV_WAKE, wakes, "wake-up of a sleeping worker");
  CHECK(count(ITO_EV_SLEEP) > 0);
  CHECK(!bad_worker);
  CHECK_EQ(ito_finalize(), 0);
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito__dropin_hooks_attach(other, NULL), EBUSY); /* after start */
  CHECK_EQ(ito_finalize(), 0);
  printf(
      "test_hooks: %ld forks, events: spawn %ld, join %ld, steal %ld, create %ld, park %ld, "
      "resume %ld, sleep %ld, wake %ld\n",
      forks, count(ITO_EV_SPAWN), count(ITO_EV_JOIN), count(ITO_EV_STEAL), count(ITO_EV_CREATE),
      count(ITO_EV_PARK), count(ITO_EV_RESUME), count(ITO_EV_SLEEP), count(ITO_EV_WAKE));
  puts("test_hooks: OK");
  return 0;
}
