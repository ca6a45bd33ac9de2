/* The monitor (src/core/monitor.c), white box, with 2 workers:
 *  1. both workers' threads block in raw read(2) system calls, which ito
 *     cannot park, while the main thread's continuation waits in a deque:
 *     an extra worker runs it, and it releases them. The time from the
 *     second block to main running again is the detection delay (printed).
 *  2. once nothing is blocked, the extras retire (their OS threads end).
 *  3. a CPU-bound fib that keeps both workers busy, with continuations
 *     waiting in the deques the whole time, starts no extra worker.
 *  4. the same blocking with a blocked worker among the extras: three
 *     blocked threads need two extras, and all run to the end.
 *  5. rule 2 leaves the native API alone: two threads computing fib for
 *     half a second each, while main's continuation waits in a deque, are
 *     never sent the preemption signal.
 *  7. a thread made on a worker that ends on an extra worker (it waited on
 *     a condition variable while both workers were blocked, and main,
 *     running on the extra, signalled it): after a restart of the runtime
 *     its end still counts, and ito_finalize returns (it waited for ever
 *     when only the slots of the running start were counted).
 *  8. (where preemption exists) the kernel's action for the preemption
 *     signal returns through a restorer in the object that holds ito's
 *     code, whose bytes are rt_sigreturn as the unwinder recognises it: a
 *     second signal that lands in the return path of a refused one is
 *     refused too (docs/monitor.md, "Preemption"; on AArch64 the return
 *     went through the kernel's trampoline or, under qemu-user, a page no
 *     object holds, and such a signal parked a thread holding a lock).
 *  6. with every thread preemptible (what libito-pthread.so asks for), two
 *     threads that spin on a flag main sets after creating both finish:
 *     with TLS per thread they are preempted, and main, waiting in a
 *     deque, runs; with worker TLS (a preempted thread would resume only
 *     on its worker) they are not preempted and main runs on an extra
 *     worker (docs/monitor.md, "Preemption"). With TLS per thread the
 *     spinners first spin inside a call the runtime marks as made from a
 *     state that must not yield (ito__callout_begin: the switch's call of
 *     the C++ runtime's __cxa_get_globals, whose caller may hold a wait
 *     queue's lock): an OS thread of the test's own lets them out once 3
 *     signals reached them, and none may have preempted them there
 *     (preempt.h, invariant 6). Run with both (ctest
 *     unit_monitor and unit_monitor_thread_tls; a build that cannot
 *     switch TLS runs worker TLS in both).
 * Timings are printed, never asserted: a hang is the failure (the test's
 * timeout). */
#define _GNU_SOURCE
#include <ito/ito.h>

#include "../../src/core/fiber.h"
#include "../../src/core/monitor.h"
#include "../../src/core/preempt.h"
#include "../../src/core/tls.h"
#include "../../src/core/timespec.h"
#include "../../src/core/worker.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../check.h"

/* Case 8: the kernel's action for ITO_PREEMPT_SIG (read with the kernel's
 * call: glibc's refuses the signal). */
static void check_restorer(void) {
  struct {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
  } k;
  CHECK_EQ(syscall(SYS_rt_sigaction, ITO_PREEMPT_SIG, NULL, &k, (size_t)8), 0);
  CHECK(k.flags & 0x04000000UL); /* SA_RESTORER */
  Dl_info mine, r;
  CHECK(dladdr((void *)ito_create, &mine) != 0);
  CHECK(dladdr(k.restorer, &r) != 0);
  CHECK(r.dli_fbase == mine.dli_fbase);
  const unsigned char *b = k.restorer;
#if defined(__x86_64__) /* mov $15, %rax; syscall */
  static const unsigned char want[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
#else /* mov x8, #139; svc #0 */
  static const unsigned char want[] = {0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4};
#endif
  CHECK(memcmp(b, want, sizeof want) == 0);
  printf("unit_monitor: the preemption signal's handler returns through ito's restorer\n");
}

static int pipes[4][2];
static long long blocked_at[4];

static void *block_in_read(void *p) {
  long i = (long)p;
  char c;
  __atomic_store_n(&blocked_at[i], clock_ns(CLOCK_MONOTONIC), __ATOMIC_RELAXED);
  /* a raw system call: no interposer, no ito_read */
  long r = syscall(SYS_read, pipes[i][0], &c, 1);
  return (void *)(r == 1 && c == 'x' ? 1L : 0L);
}

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
  ito_tg_fork(&tg, fib_child, &a, sizeof a);
  y = fib(n - 2);
  ito_tg_join(&tg);
  return x + y;
}

static void *fib_for_half_a_second(void *p) {
  (void)p;
  long long t0 = clock_ns(CLOCK_MONOTONIC);
  long r = 0;
  while (clock_ns(CLOCK_MONOTONIC) - t0 < 500000000LL) r = fib(25);
  return (void *)r;
}

/* (monitor_spin.c: outside the executable, which holds ito) */
void *unit_monitor_spin(void *flag);
static int flag;

/* Case 6 with TLS per thread: the spinners' first loop, inside a marked
 * call, and the OS thread that ends it. */
static int callout_flag;
static unsigned long callout_done = ~0UL, callout_signals;
static void *callout_spin(void *arg) {
  fiber *f = cur_worker()->cur;
  ito__callout_begin(f);
  unit_monitor_spin(&callout_flag);
  ito__callout_end(f);
  return unit_monitor_spin(arg);
}
static void *callout_watch(void *arg) {
  (void)arg;
  unsigned long d0, r0, d, r;
  ito__preempt_counts(&d0, &r0);
  long long t0 = clock_ns(CLOCK_MONOTONIC);
  do { /* (bounded: 60 s without 3 signals fails below) */
    usleep(1000);
    ito__preempt_counts(&d, &r);
  } while (d + r - d0 - r0 < 3 && clock_ns(CLOCK_MONOTONIC) - t0 < 60 * NS_PER_S);
  callout_done = d - d0;
  callout_signals = d + r - d0 - r0;
  __atomic_store_n(&callout_flag, 1, __ATOMIC_RELEASE);
  return NULL;
}

static ito_mutex_t m7 = ITO_MUTEX_INITIALIZER;
static ito_cond_t c7;
static int go7, ended_on7 = -1;
static void *wait_go(void *p) {
  (void)p;
  ito_mutex_lock(&m7);
  while (!go7) ito_cond_wait(&c7, &m7);
  ito_mutex_unlock(&m7);
  __atomic_store_n(&ended_on7, ito_worker_id(), __ATOMIC_RELAXED);
  return NULL;
}

/* k threads block; main, resumed by an extra worker, releases them. */
static void block_and_release(int k) {
  ito_thread_t t[4];
  for (long i = 0; i < k; i++) {
    CHECK(pipe(pipes[i]) == 0);
    __atomic_store_n(&blocked_at[i], 0, __ATOMIC_RELAXED);
  }
  for (long i = 0; i < k; i++) CHECK_EQ(ito_create(block_in_read, (void *)i, &t[i]), 0);
  long long resumed = clock_ns(CLOCK_MONOTONIC), last = 0;
  for (int i = 0; i < k; i++) {
    long long b = __atomic_load_n(&blocked_at[i], __ATOMIC_RELAXED);
    if (b > last) last = b;
  }
  unsigned long started;
  int extras = ito__monitor_extras(&started);
  printf(
      "unit_monitor: %d threads blocked in read(2); main ran again %.1f ms after the last "
      "block, %d extra worker(s) running, %lu started\n",
      k, last ? (resumed - last) / 1e6 : 0.0, extras, started);
  for (int i = 0; i < k; i++) CHECK_EQ(write(pipes[i][1], "x", 1), 1);
  for (int i = 0; i < k; i++) {
    void *r = NULL;
    CHECK_EQ(ito_join(t[i], &r), 0);
    CHECK_EQ((long)r, 1);
    close(pipes[i][0]);
    close(pipes[i][1]);
  }
}

static void wait_for_retirement(void) {
  long long t0 = clock_ns(CLOCK_MONOTONIC);
  while (ito__monitor_extras(NULL) > 0) {
    struct timespec ms = {0, 1000000};
    ito_nanosleep(&ms); /* parks: the extra running main may retire */
  }
  printf("unit_monitor: every extra worker retired %.1f ms after the threads were released\n",
         (clock_ns(CLOCK_MONOTONIC) - t0) / 1e6);
}

int main(void) {
  setenv("ITO_NUM_WORKERS", "2", 1);
  ito__preempt_enabled = 1; /* (as a drop-in library does: the signal's handler) */
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_num_workers(), 2);

  /* 1 and 2 */
  block_and_release(2);
  unsigned long started;
  ito__monitor_extras(&started);
  CHECK(started >= 1);
  wait_for_retirement();

  /* 3: CPU-bound fork-join on every worker starts nothing */
  unsigned long before;
  ito__monitor_extras(&before);
  long long t0 = clock_ns(CLOCK_MONOTONIC);
  long r = 0;
  int rounds = 0;
  while (clock_ns(CLOCK_MONOTONIC) - t0 < 500000000LL) { /* at least half a second */
    r = fib(27);
    rounds++;
  }
  CHECK_EQ(r, 196418);
  unsigned long after;
  ito__monitor_extras(&after);
  printf("unit_monitor: %d rounds of fib(27) on both workers started %lu extra workers\n", rounds,
         after - before);
#if ITO_TSAN
  /* (ThreadSanitizer's own locks can put a worker to sleep in the kernel
   * for a tick with its fiber on it: the monitor then rightly counts it
   * as blocked) */
  if (after != before) printf("unit_monitor: (under ThreadSanitizer: not checked)\n");
#else
  CHECK_EQ(after, before);
#endif

  /* 4: three blocked threads on two workers */
  block_and_release(3);
  wait_for_retirement();

  /* 7: a thread's end on an extra counts after a restart */
  CHECK_EQ(ito_cond_init(&c7), 0);
  ito_thread_t w7;
  CHECK_EQ(ito_create(wait_go, NULL, &w7), 0); /* made on a configured worker */
  for (long i = 0; i < 2; i++) CHECK(pipe(pipes[i]) == 0);
  ito_thread_t b7[2];
  for (long i = 0; i < 2; i++) CHECK_EQ(ito_create(block_in_read, (void *)i, &b7[i]), 0);
  int on7 = ito_worker_id(); /* main runs again: on an extra, both workers being blocked */
  ito_mutex_lock(&m7);
  go7 = 1;
  ito_cond_signal(&c7);
  ito_mutex_unlock(&m7);
  CHECK_EQ(ito_join(w7, NULL), 0);
  for (int i = 0; i < 2; i++) CHECK_EQ(write(pipes[i][1], "x", 1), 1);
  for (int i = 0; i < 2; i++) {
    CHECK_EQ(ito_join(b7[i], NULL), 0);
    close(pipes[i][0]);
    close(pipes[i][1]);
  }
  printf("unit_monitor: main signalled on worker %d; the waiting thread ended on worker %d\n", on7,
         __atomic_load_n(&ended_on7, __ATOMIC_RELAXED));
  CHECK(on7 >= 2);
  wait_for_retirement();
  CHECK_EQ(ito_finalize(), 0);
  CHECK_EQ(ito_init(), 0);
  CHECK_EQ(ito_finalize(), 0); /* (waited for ever before) */
  CHECK_EQ(ito_init(), 0);
  printf("unit_monitor: restarted twice after threads ended on extra workers\n");

  /* 5: native threads are never preempted */
  unsigned long done0, refused0, done1, refused1;
  ito__preempt_counts(&done0, &refused0);
  ito_thread_t ft[2];
  for (int i = 0; i < 2; i++) CHECK_EQ(ito_create(fib_for_half_a_second, NULL, &ft[i]), 0);
  for (int i = 0; i < 2; i++) {
    void *res = NULL;
    CHECK_EQ(ito_join(ft[i], &res), 0);
    CHECK_EQ((long)res, 75025);
  }
  ito__preempt_counts(&done1, &refused1);
  printf(
      "unit_monitor: two native threads computed fib for 0.5 s: %lu preemptions, %lu "
      "signals declined\n",
      done1 - done0, refused1 - refused0);
  CHECK_EQ(done1 - done0, 0);
  CHECK_EQ(refused1 - refused0, 0);

  /* 6: preemptible spinners let main run (where preemption exists: not
   * under ThreadSanitizer, which runs handlers late) */
  if (!ito__preempt_ready()) {
    printf("unit_monitor: case 6 not run: no preemption in this build (ThreadSanitizer)\n");
    CHECK_EQ(ito_finalize(), 0);
    printf("unit_monitor: PASS\n");
    return 0;
  }
  check_restorer();
  ito__preempt_threads = 1;
  unsigned long xs0 = 0, xs1 = 0;
  ito__monitor_extras(&xs0);
  ito_thread_t st[2];
  pthread_t watch;
  if (ito__tls_mode) CHECK_EQ(pthread_create(&watch, NULL, callout_watch, NULL), 0);
  for (int i = 0; i < 2; i++)
    CHECK_EQ(ito_create(ito__tls_mode ? callout_spin : unit_monitor_spin, &flag, &st[i]), 0);
  int on6 = ito_worker_id();
  __atomic_store_n(&flag, 1, __ATOMIC_RELEASE); /* (main ran again) */
  for (int i = 0; i < 2; i++) CHECK_EQ(ito_join(st[i], NULL), 0);
  ito__preempt_counts(&done1, &refused1);
  ito__monitor_extras(&xs1);
  printf(
      "unit_monitor: %s TLS: two spinning threads were preempted %lu times (%lu declined) "
      "and %lu extra workers started for main (on worker %d) to set their flag\n",
      ito__tls_mode ? "thread" : "worker", done1 - done0, refused1 - refused0, xs1 - xs0, on6);
  if (ito__tls_mode) {
    CHECK_EQ(pthread_join(watch, NULL), 0);
    printf("unit_monitor: inside the marked call: %lu signals, %lu preemptions\n", callout_signals,
           callout_done);
    CHECK(callout_signals >= 3);
    CHECK_EQ(callout_done, 0);
    CHECK(done1 > done0);
  } else { /* a preemption would keep a spinner on its worker: an extra runs main */
    CHECK_EQ(done1 - done0, 0);
    CHECK(xs1 > xs0);
    CHECK(on6 >= 2);
  }
  ito__preempt_threads = 0;
  CHECK_EQ(ito_finalize(), 0);
  printf("unit_monitor: PASS\n");
  return 0;
}
