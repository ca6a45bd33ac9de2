/* Team members that wait for each other by spinning, with no OpenMP
 * construct that could switch: they run at the same time, as threads do
 * (OpenMP's progress rules). Under libito-omp.so with fewer workers than
 * members, this needs the monitor's preemption (docs/monitor.md): a
 * member that has run a time slice while other members wait to run is
 * preempted.
 *  1. A spin barrier of 4 members, three times over.
 *  2. A relay: member i waits until member i-1 has passed, in a team of 4,
 *     so the last member to start may be the first to need the CPU.
 *  3. Nested: an inner team of 3 spins the same way inside each of 2 outer
 *     members.
 *  4. A relay of 4 members, 100 rounds, each waiting for its turn in a
 *     loop that calls sched_yield (as OpenBLAS's threads wait for each
 *     other): the member whose turn it is must get the worker at the yield,
 *     since a member in libc is not preempted.
 *  5. A pthread spinlock whose holder calls sched_yield while it holds
 *     it, 4 members, 50 rounds: a member spinning for it must give way to
 *     the holder (glibc's lock spins inside libc).
 *  6. glibc's pthread mutex held across more than a time slice of
 *     computing, 4 members, 6 rounds each: a member that waits for it
 *     blocks its OS thread in the kernel (libito-omp.so does not park
 *     glibc's mutex), so the holder must not be left waiting for that OS
 *     thread (with worker TLS a preempted member resumes only on its own
 *     worker: docs/monitor.md, "Preemption").
 * Counts come out the same under any runtime; a runtime that does not
 * preempt hangs (compare.sh's time limit). */
#include "omptest.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

/* Computes (no call that can switch) for about ms milliseconds. */
static void compute_ms(long ms) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  volatile unsigned long x = 0;
  do {
    for (int i = 0; i < 10000; i++) x += (unsigned long)i;
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L < ms);
}

/* 4 members take a lock rounds times each and call hold() while they hold
 * it; the line says whether every round was taken, one holder at a time. */
static void contend(const char *what, void (*lock)(void *), void (*unlock)(void *), void *obj,
                    void (*hold)(void), int rounds) {
  int in_lock = 0, shared = 0, team = 0;
  long held = 0;
#pragma omp parallel num_threads(4)
  {
#pragma omp single
    team = omp_get_num_threads();
    for (int r = 0; r < rounds; r++) {
      lock(obj);
      if (in_lock++) shared = 1;
      hold();
      held++;
      in_lock--;
      unlock(obj);
    }
  }
  CHECK_EQ(held, (long)rounds * team);
  CHECK(!shared);
  printf("%s: %s\n", what,
         held == (long)rounds * team && !shared ? "every round, one holder at a time" : "wrong");
}

static void spin_lock(void *l) { pthread_spin_lock((pthread_spinlock_t *)l); }
static void spin_unlock(void *l) { pthread_spin_unlock((pthread_spinlock_t *)l); }
static void mutex_lock(void *m) { pthread_mutex_lock(m); }
static void mutex_unlock(void *m) { pthread_mutex_unlock(m); }
static void yield_holding(void) { sched_yield(); /* the holder gives its worker away */ }
/* more than a time slice (ITO_PREEMPT_MS, 10 ms) */
static void compute_holding(void) { compute_ms(15); }

static void spin_barrier(int *arrived, int n, int round) {
  __atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) < n * round) {
  }
}

int main(void) {
  int arrived = 0, passed = 0;
#pragma omp parallel num_threads(4)
  {
    int n = omp_get_num_threads();
    for (int r = 1; r <= 3; r++) spin_barrier(&arrived, n, r);
    __atomic_add_fetch(&passed, 1, __ATOMIC_SEQ_CST);
  }
  printf("spin barrier: %d members passed 3 rounds\n", passed);

  int turn = 0, order_ok = 1;
#pragma omp parallel num_threads(4)
  {
    int me = omp_get_thread_num();
    while (__atomic_load_n(&turn, __ATOMIC_SEQ_CST) != me) {
    }
    if (__atomic_fetch_add(&turn, 1, __ATOMIC_SEQ_CST) != me) order_ok = 0;
  }
  CHECK(order_ok);
  printf("relay: %d members passed in order\n", turn);

  omp_set_max_active_levels(2);
  int inner_passed = 0;
#pragma omp parallel num_threads(2)
  {
    int in_arrived = 0;
#pragma omp parallel num_threads(3) shared(in_arrived)
    {
      spin_barrier(&in_arrived, omp_get_num_threads(), 1);
      __atomic_add_fetch(&inner_passed, 1, __ATOMIC_SEQ_CST);
    }
  }
  printf("nested: %d inner members passed\n", inner_passed);

  int yturn = 0;
#pragma omp parallel num_threads(4)
  {
    int me = omp_get_thread_num(), n = omp_get_num_threads();
    for (int r = 0; r < 100; r++) {
      while (__atomic_load_n(&yturn, __ATOMIC_SEQ_CST) != r * n + me) sched_yield();
      __atomic_add_fetch(&yturn, 1, __ATOMIC_SEQ_CST);
    }
  }
  printf("relay with sched_yield: %d turns\n", yturn);

  pthread_spinlock_t sl;
  pthread_spin_init(&sl, PTHREAD_PROCESS_PRIVATE);
  contend("spinlock held across sched_yield", spin_lock, spin_unlock, (void *)&sl, yield_holding,
          50);
  pthread_spin_destroy(&sl);

  pthread_mutex_t mx = PTHREAD_MUTEX_INITIALIZER;
  contend("pthread mutex held across a time slice", mutex_lock, mutex_unlock, &mx, compute_holding,
          6);
  return omptest_finish("spin");
}
