/* Drop-in test: barriers (P threads x K phases, one serial thread per
 * round), a counter under a spinlock (whose words are glibc's), and
 * pthread_once.
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DROPIN_PROG "barrier"
#include "dropin.h"

#define P 6
#define K 200
#define ROUNDS (2 * K) /* two barrier waits per phase */
#define SPINS_PER_PHASE 50

static pthread_barrier_t barrier;
static long slots[P];
static atomic_int serial_in_round[ROUNDS];
static atomic_long slot_reads;

static pthread_spinlock_t spin;
static long spin_counter;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static atomic_int once_runs;
static atomic_int once_calls;
static int once_value; /* written by the once routine, read after pthread_once */

static void once_routine(void) {
  atomic_fetch_add(&once_runs, 1);
  /* Sleep inside the routine so that the other callers wait for it. */
  struct timespec pause = {0, 20 * 1000000L};
  nanosleep(&pause, NULL);
  once_value = 42;
}

static long slot_value(int phase, int slot) { return (long)phase * 1000 + slot * 7 + 1; }

static void wait_round(int round) {
  int rc = pthread_barrier_wait(&barrier);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
    atomic_fetch_add(&serial_in_round[round], 1);
  else if (rc != 0)
    FAIL("pthread_barrier_wait gave %s", code_name(rc));
}

static void *phase_thread(void *arg) {
  int me = (int)(long)arg;
  must("pthread_once", pthread_once(&once, once_routine));
  atomic_fetch_add(&once_calls, 1);
  if (once_value != 42) FAIL("pthread_once returned before its routine finished");
  for (int k = 0; k < K; k++) {
    slots[me] = slot_value(k, me);
    wait_round(2 * k);
    for (int j = 0; j < P; j++) {
      if (slots[j] != slot_value(k, j))
        FAIL("phase %d: thread %d read slot %d = %ld, expected %ld", k, me, j, slots[j],
             slot_value(k, j));
      atomic_fetch_add(&slot_reads, 1);
    }
    for (int i = 0; i < SPINS_PER_PHASE; i++) {
      must("pthread_spin_lock", pthread_spin_lock(&spin));
      spin_counter++;
      must("pthread_spin_unlock", pthread_spin_unlock(&spin));
    }
    wait_round(2 * k + 1); /* nobody writes its next slot before all have read */
  }
  must("pthread_once again", pthread_once(&once, once_routine));
  atomic_fetch_add(&once_calls, 1);
  return NULL;
}

int main(void) {
  must("pthread_barrier_init", pthread_barrier_init(&barrier, NULL, P));
  must("pthread_spin_init", pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE));

  pthread_t t[P];
  for (long i = 0; i < P; i++)
    must("pthread_create", pthread_create(&t[i], NULL, phase_thread, (void *)i));
  for (int i = 0; i < P; i++) must("pthread_join", pthread_join(t[i], NULL));

  int serial_total = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int n = atomic_load(&serial_in_round[r]);
    if (n != 1) FAIL("barrier round %d had %d serial threads", r, n);
    serial_total += n;
  }
  long reads = atomic_load(&slot_reads);
  if (reads != (long)P * P * K) FAIL("%ld slot reads, expected %ld", reads, (long)P * P * K);
  if (spin_counter != (long)P * K * SPINS_PER_PHASE)
    FAIL("spinlock counter %ld, expected %ld", spin_counter, (long)P * K * SPINS_PER_PHASE);

  /* glibc's layout: a process without the library may share the lock */
  int w_free = *(volatile int *)&spin;
  must("pthread_spin_lock", pthread_spin_lock(&spin));
  int w_held = *(volatile int *)&spin;
  must("pthread_spin_unlock", pthread_spin_unlock(&spin));
  printf("spinlock words: free %d, held %d, free again %d\n", w_free, w_held,
         *(volatile int *)&spin);

  /* Try-lock of a held spinlock. */
  must("pthread_spin_lock", pthread_spin_lock(&spin));
  int busy = pthread_spin_trylock(&spin);
  must("pthread_spin_unlock", pthread_spin_unlock(&spin));
  if (busy != EBUSY) FAIL("pthread_spin_trylock of a held lock gave %s", code_name(busy));
  int free_rc = pthread_spin_trylock(&spin);
  if (free_rc != 0) FAIL("pthread_spin_trylock of a free lock gave %s", code_name(free_rc));
  must("pthread_spin_unlock", pthread_spin_unlock(&spin));

  /* main calls pthread_once too. */
  must("pthread_once (main)", pthread_once(&once, once_routine));
  atomic_fetch_add(&once_calls, 1);
  int runs = atomic_load(&once_runs), calls = atomic_load(&once_calls);
  if (runs != 1) FAIL("the once routine ran %d times", runs);
  if (calls != 2 * P + 1) FAIL("%d pthread_once calls, expected %d", calls, 2 * P + 1);

  must("pthread_barrier_destroy", pthread_barrier_destroy(&barrier));
  must("pthread_spin_destroy", pthread_spin_destroy(&spin));

  printf("barrier: %d threads x %d phases: %d rounds, %d serial threads, %ld slot reads checked\n",
         P, K, ROUNDS, serial_total, reads);
  printf("spinlock: counter %ld; trylock held %s, free %s\n", spin_counter, code_name(busy),
         code_name(free_rc));
  printf("pthread_once: %d calls, routine ran %d time(s)\n", calls, runs);
  return 0;
}
