/* Threads that never call anything that can switch still share the CPUs,
 * as natively: under libito-pthread.so the monitor preempts a pthread that
 * has run a time slice while other threads wait (docs/monitor.md).
 *
 *  1. Spin barrier: 4 threads busy-wait on a flag main sets after creating
 *     them all, then on a counter until all 4 have arrived. With one worker
 *     this passes only if the spinners are preempted (main waits in a
 *     queue meanwhile, and each spinner waits for the others).
 *  2. Progress: 3 threads compute until main, asleep for 300 ms, sets a
 *     stop flag; each must have made progress, and main must wake.
 *  3. State kept across preemption: threads compute sums in integer,
 *     SSE, x87 and (on x86-64 with AVX) ymm registers, with errno and a thread_local set before, in
 *     loops long enough to be preempted many times; the results are the
 *     ones computed with no other thread running. (With the argument
 *     worker-tls, errno and the thread_local are not checked: on a machine
 *     where ito has no TLS per thread, threads share their worker's.)
 *  4. A thread preempted while it holds a mutex: the others park on the
 *     mutex and get it later; the count is exact.
 * Output is deterministic; both.sh compares it with the native run. A
 * failure to preempt hangs: alarm(60) ends the run with a message. */
#define _GNU_SOURCE
#define DROPIN_PROG "preempt"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dropin.h"

static void on_alarm(int s) {
  (void)s;
  static const char msg[] = "preempt: FAILED: no progress in 60 s (threads not preempted?)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
  _exit(1);
}

/* ---- 1. spin barrier ------------------------------------------------------------------- */

#define NSPIN 4
static volatile int go;
static int arrived;

static void *spinner(void *p) {
  (void)p;
  while (!go) {
  }
  __atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) < NSPIN) {
  }
  return NULL;
}

static void spin_barrier(void) {
  pthread_t t[NSPIN];
  for (int i = 0; i < NSPIN; i++)
    must("pthread_create", pthread_create(&t[i], NULL, spinner, NULL));
  go = 1;
  for (int i = 0; i < NSPIN; i++) must("pthread_join", pthread_join(t[i], NULL));
  printf("spin barrier: %d threads passed\n", arrived);
}

/* ---- 2. progress ------------------------------------------------------------------------ */

#define NWORK 3
static volatile int stop;
static unsigned long progress[NWORK];

static void *worker(void *p) {
  unsigned long *mine = p;
  while (!stop) __atomic_add_fetch(mine, 1, __ATOMIC_RELAXED);
  return NULL;
}

static void all_progress(void) {
  pthread_t t[NWORK];
  for (int i = 0; i < NWORK; i++)
    must("pthread_create", pthread_create(&t[i], NULL, worker, &progress[i]));
  struct timespec d = {0, 300000000};
  nanosleep(&d, NULL);
  /* every thread ran, and keeps running until told (looked at for up to
   * 30 s each: a loaded machine may hold an OS thread back for seconds) */
  for (int i = 0; i < NWORK; i++) {
    unsigned long a = __atomic_load_n(&progress[i], __ATOMIC_RELAXED);
    int k = 0;
    while (k < 3000 && __atomic_load_n(&progress[i], __ATOMIC_RELAXED) == a) {
      nanosleep(&(struct timespec){0, 10000000}, NULL);
      k++;
    }
    if (k == 3000) FAIL("thread %d made no progress in 30 s while main slept", i);
  }
  stop = 1;
  for (int i = 0; i < NWORK; i++) must("pthread_join", pthread_join(t[i], NULL));
  printf("progress: main woke, %d computing threads all progressed\n", NWORK);
}

/* ---- 3. state kept across preemption ------------------------------------------------------ */

#define NSTATE 4
#define ROUNDS 40000000UL
static __thread unsigned long tl_mark;

struct sums {
  unsigned long ints;
  double sse;
  long double x87;
  double avx; /* x86-64 with AVX: sums kept in the upper halves of ymm registers */
  int err_ok, tl_ok;
};

#if defined(__x86_64__)
typedef double v4d __attribute__((vector_size(32)));
__attribute__((target("avx"), noinline)) static double avx_part(unsigned long seed) {
  v4d acc = {0, 0, 0, 0}, step = {(double)seed, 1.0, 2.0, 3.0};
  for (unsigned long i = 0; i < ROUNDS / 2; i++) {
    acc = acc * 0.999999 + step;
    step = step + 0.5;
  }
  return acc[0] + acc[1] * 3 + acc[2] * 5 + acc[3] * 7;
}
#endif

__attribute__((noinline)) static void compute(unsigned long seed, struct sums *s) {
  unsigned long a = seed;
  double d = 0;
  long double x = 0;
  for (unsigned long i = 1; i <= ROUNDS; i++) {
    a = a * 6364136223846793005UL + 1442695040888963407UL;
    d += (double)(a >> 40) * 0.5;
    if ((i & 1023) == 0) x += (long double)(a >> 50) / 3.0L;
  }
  s->ints = a;
  s->sse = d;
  s->x87 = x;
  s->avx = 0;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx")) s->avx = avx_part(seed);
#endif
}

static struct sums alone[NSTATE], together[NSTATE];
static int check_tls = 1;

static void *stateful(void *p) {
  long i = (long)p;
  errno = 1000 + (int)i;
  tl_mark = 77 + (unsigned long)i;
  compute((unsigned long)i + 1, &together[i]);
  together[i].err_ok = errno == 1000 + (int)i;
  together[i].tl_ok = tl_mark == 77 + (unsigned long)i;
  return NULL;
}

static void state_kept(void) {
  for (long i = 0; i < NSTATE; i++) compute((unsigned long)i + 1, &alone[i]);
  pthread_t t[NSTATE];
  for (long i = 0; i < NSTATE; i++)
    must("pthread_create", pthread_create(&t[i], NULL, stateful, (void *)i));
  for (int i = 0; i < NSTATE; i++) must("pthread_join", pthread_join(t[i], NULL));
  for (int i = 0; i < NSTATE; i++) {
    if (together[i].ints != alone[i].ints ||
        memcmp(&together[i].sse, &alone[i].sse, sizeof(double)) ||
        together[i].x87 != alone[i].x87 || memcmp(&together[i].avx, &alone[i].avx, sizeof(double)))
      FAIL("thread %d computed another result beside other threads", i);
    if (check_tls && !together[i].err_ok) FAIL("thread %d: errno changed while it computed", i);
    if (check_tls && !together[i].tl_ok)
      FAIL("thread %d: a thread_local changed while it computed", i);
  }
  printf("state: %d threads computed the same sums beside each other as alone\n", NSTATE);
}

/* ---- 4. preempted holding a mutex ------------------------------------------------------ */

#define NLOCK 3
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counted;

static void *locker(void *p) {
  (void)p;
  for (int k = 0; k < 10; k++) {
    pthread_mutex_lock(&m);
    unsigned long c = counted;
    /* (longer than a time slice: preempted holding the mutex) */
    for (volatile unsigned long spin = 0; spin < 12000000; spin++) {
    }
    counted = c + 1;
    pthread_mutex_unlock(&m);
  }
  return NULL;
}

static void mutex_held(void) {
  pthread_t t[NLOCK];
  for (int i = 0; i < NLOCK; i++) must("pthread_create", pthread_create(&t[i], NULL, locker, NULL));
  for (int i = 0; i < NLOCK; i++) must("pthread_join", pthread_join(t[i], NULL));
  printf("mutex: %lu increments\n", counted);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "worker-tls")) check_tls = 0;
  signal(SIGALRM, on_alarm);
  alarm(60);
  spin_barrier();
  all_progress();
  state_kept();
  mutex_held();
  return 0;
}
