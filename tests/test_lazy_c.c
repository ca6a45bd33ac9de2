/* The C lazy task API: ito_tg_init / ito_tg_fork / ito_tg_join.
 * Every check runs twice: from main() and from inside an ito thread. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

static long fib_serial(int n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

/* ---- fib: one fork per frame, the other half in the continuation --------- */
typedef struct {
  int n;
  long *out;
} fib_arg;

static long fib_par(int n);
static long fib_par2(int n);

static void fib_task(void *p) {
  fib_arg *a = p;
  *a->out = fib_par(a->n);
}

static long fib_par(int n) {
  if (n < 2) return n;
  long x = -1;
  ito_tg_t tg;
  ito_tg_init(&tg);
  fib_arg a = {n - 1, &x};
  ito_tg_fork(&tg, fib_task, &a, sizeof a);
  long y = fib_par(n - 2);
  ito_tg_join(&tg);
  return x + y;
}

/* ---- fib: both halves forked into the same group ------------------------ */
static void fib2_task(void *p) {
  fib_arg *a = p;
  *a->out = fib_par2(a->n);
}

static long fib_par2(int n) {
  if (n < 2) return n;
  long x = -1, y = -1;
  ito_tg_t tg;
  ito_tg_init(&tg);
  fib_arg a = {n - 1, &x};
  ito_tg_fork(&tg, fib2_task, &a, sizeof a);
  a.n = n - 2; /* reusing the argument struct is fine: it was copied */
  a.out = &y;
  ito_tg_fork(&tg, fib2_task, &a, sizeof a);
  ito_tg_join(&tg);
  return x + y;
}

static void test_fib(void) {
  long want = fib_serial(25);
  CHECK_EQ(want, 75025);
  CHECK_EQ(fib_par(25), want);
  CHECK_EQ(fib_par2(22), fib_serial(22));
  /* A group with no children at all. */
  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_join(&tg);
}

/* ---- forks from a frame other than the one that called ito_tg_init ------- */
static void sleepy_task(void *p) {
  fib_arg *a = p;
  for (int i = 0; i < 20; i++) {
    (void)ito_yield();
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  *a->out = fib_serial(a->n);
}

static __attribute__((noinline)) void fork_from_helper(ito_tg_t *tg, long *slots, int first,
                                                       int count) {
  /* Make sure this really exercises the slow path. */
  CHECK(tg->home_fp != __builtin_frame_address(0));
  for (int i = first; i < first + count; i++) {
    fib_arg a = {10 + i % 8, &slots[i]};
    ito_tg_fork(tg, (i % 3 == 0) ? sleepy_task : fib_task, &a, sizeof a);
  }
}

static void test_slow_path(void) {
  enum { N = 40 };
  long slots[N];
  for (int i = 0; i < N; i++) slots[i] = -1;
  ito_tg_t tg;
  ito_tg_init(&tg);
  fib_arg a = {18, &slots[0]};
  ito_tg_fork(&tg, fib_task, &a, sizeof a); /* fast path */
  fork_from_helper(&tg, slots, 1, 19);      /* slow path */
  a.n = 19;
  a.out = &slots[20];
  ito_tg_fork(&tg, fib_task, &a, sizeof a); /* fast path again */
  fork_from_helper(&tg, slots, 21, N - 21);
  ito_tg_join(&tg);
  CHECK_EQ(slots[0], fib_serial(18));
  CHECK_EQ(slots[20], fib_serial(19));
  for (int i = 1; i < N; i++)
    if (i != 20) CHECK_EQ(slots[i], fib_serial(10 + i % 8));

  /* A group whose every child comes from the helper. */
  long only[6];
  for (int i = 0; i < 6; i++) only[i] = -1;
  ito_tg_t tg2;
  ito_tg_init(&tg2);
  fork_from_helper(&tg2, only, 0, 6);
  ito_tg_join(&tg2);
  for (int i = 0; i < 6; i++) CHECK_EQ(only[i], fib_serial(10 + i % 8));
}

/* ---- argument copy semantics ------------------------------------------- */
typedef struct {
  int v[16];
  void *orig;
  atomic_int *stage;
  atomic_int *saw_overwrite;
} copy_arg;

static void copy_child(void *p) {
  copy_arg *c = p;
  CHECK(p != c->orig); /* size > 0: a private copy */
  for (int i = 0; i < 16; i++) CHECK_EQ(c->v[i], 100 + i);
  /* Give the parent's continuation a chance to run (and overwrite its
   * struct) while this child is still alive. With an idle second worker it
   * is stolen: wait for that (a loaded machine may not run the thief for
   * a long while: 60 s at most). With one worker it may run when this
   * child yields, or not at all: 10 ms. */
  long limit_ns = ito_num_workers() >= 2 ? 60000000000L : 10000000L;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!atomic_load(c->stage)) {
    (void)ito_yield();
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) > limit_ns) break;
  }
  if (atomic_load(c->stage)) atomic_fetch_add(c->saw_overwrite, 1);
  for (int i = 0; i < 16; i++) CHECK_EQ(c->v[i], 100 + i);
}

typedef struct {
  int tag;
  void *self;
  int saw_self;
} ptr_arg;

static void ptr_child(void *p) {
  ptr_arg *a = p;
  a->saw_self = (p == a->self) && a->tag == 7;
}

static void test_copy(void) {
  atomic_int saw_overwrite = 0;
  enum { ITERS = 10 };
  for (int it = 0; it < ITERS; it++) {
    atomic_int stage = 0;
    copy_arg ca;
    for (int i = 0; i < 16; i++) ca.v[i] = 100 + i;
    ca.orig = &ca;
    ca.stage = &stage;
    ca.saw_overwrite = &saw_overwrite;
    ito_tg_t tg;
    ito_tg_init(&tg);
    ito_tg_fork(&tg, copy_child, &ca, sizeof ca);
    for (int i = 0; i < 16; i++) ca.v[i] = -1; /* overwrite right after the fork */
    atomic_store(&stage, 1);
    ito_tg_join(&tg);
  }
  /* With an idle second worker the continuation is stolen while the child
   * waits, so the overwrite really happened during the child's life. */
  if (ito_num_workers() >= 2) CHECK(atomic_load(&saw_overwrite) > 0);

  /* size 0: the child receives arg itself. */
  ptr_arg pa = {7, NULL, 0};
  pa.self = &pa;
  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_fork(&tg, ptr_child, &pa, 0);
  ito_tg_join(&tg);
  CHECK_EQ(pa.saw_self, 1);
}

static void run_all(void) {
  test_fib();
  test_slow_path();
  test_copy();
}

static void *in_thread(void *p) {
  (void)p;
  run_all();
  return (void *)(intptr_t)1234;
}

int main(void) {
  run_all();
  ito_thread_t t;
  CHECK_EQ(ito_create(in_thread, NULL, &t), 0);
  void *r = NULL;
  CHECK_EQ(ito_join(t, &r), 0);
  CHECK_EQ((intptr_t)r, 1234);
  puts("test_lazy_c: OK");
  return 0;
}
