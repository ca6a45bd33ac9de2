/* The libc calls of the runtime, through one table (struct ito_os);
 * futexes; membarrier; the runtime's own descriptors; fatal errors and
 * failed assertions. Without a drop-in library the table holds the
 * link-time addresses, so sanitizer interceptors stay in the path; the
 * pthread library installs libc's own definitions before the runtime
 * starts, since its interposers would otherwise catch the runtime's calls
 * (docs/dropin.md section 2). */
#define _GNU_SOURCE
#include "os.h"

#include "elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct ito_os ito__os = {
    .pthread_create = pthread_create,
    .pthread_join = pthread_join,
    .pthread_self = pthread_self,
    .pthread_getattr_np = pthread_getattr_np,
    .pthread_setaffinity_np = pthread_setaffinity_np,
    .sched_yield = sched_yield,
    .nanosleep = nanosleep,
    .clock_nanosleep = clock_nanosleep,
    .write = write,
    .syscall = syscall,
    .sigaction = sigaction,
};

void ito__os_install(const struct ito_os *os) {
#define TAKE(f) \
  if (os->f) ito__os.f = os->f
  TAKE(pthread_create);
  TAKE(pthread_join);
  TAKE(pthread_self);
  TAKE(pthread_getattr_np);
  TAKE(pthread_setaffinity_np);
  TAKE(sched_yield);
  TAKE(nanosleep);
  TAKE(clock_nanosleep);
  TAKE(write);
  TAKE(syscall);
  TAKE(sigaction);
#undef TAKE
}

int ito__os_thread(pthread_t *t, size_t stack, void *(*fn)(void *), void *arg, int quiet) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, stack);
  /* A runtime thread runs SCHED_OTHER even when its creator runs a
   * real-time policy (main set one before the runtime started, or the
   * program was started with one): lightweight threads are scheduled by
   * none of it, and an idle worker that spins at SCHED_FIFO starves every
   * other thread of its CPU. Lowering a policy needs no privilege; nice
   * is inherited. */
  int creator[2];
  ito__os_sched(creator);
  if (creator[0] == SCHED_FIFO || creator[0] == SCHED_RR) {
    struct sched_param other = {0};
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_OTHER);
    pthread_attr_setschedparam(&a, &other);
  }
  /* quiet (signals per lightweight thread): the new OS thread starts with
   * every signal blocked and sets its own mask (signal.h, invariants 1 and
   * 6); with its creator's, it could take a program's signal before it is
   * a worker or the monitor, and run the handler as if it were one of the
   * program's own threads */
  /* (glibc's two signals stay open: set*id waits for every thread's answer) */
  uint64_t all = ~((1ULL << 31) | (1ULL << 32) | (1ULL << (SIGSEGV - 1)) | (1ULL << (SIGBUS - 1)) |
                   (1ULL << (SIGFPE - 1)) | (1ULL << (SIGILL - 1))),
           old = 0;
  if (quiet) ito__os.syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, (size_t)8);
  int rc = ito__os.pthread_create(t, &a, fn, arg);
  pthread_attr_destroy(&a);
  if (rc == EINVAL) rc = ito__os.pthread_create(t, NULL, fn, arg);
  if (quiet) ito__os.syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)8);
  return rc;
}

long ito__futex_wait(int *addr, int val, const struct timespec *rel) {
  return ito__os.syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, rel, NULL, 0);
}
long ito__futex_wake(int *addr, int n) {
  return ito__os.syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* ---- membarrier --------------------------------------------------------------------- */

int ito__asym_fence;

bool ito__membarrier_register(void) {
  return ito__os.syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* Either the common side's store is visible to the rare side's load after
 * the call, or the common side's load comes after the barrier it was made
 * to execute and sees the rare side's store (docs/scheduler.md, "Why the
 * owner needs no fence"). */
void ito__heavy_barrier(void) {
  if (LIKELY(ito__asym_fence))
    ito__os.syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  else
    full_fence();
}

/* ---- descriptors the runtime owns ------------------------------------------------
 * Slots that hold a descriptor or -1, each claimed and emptied by a
 * compare-and-swap: the callers that add and drop them hold locks of
 * their own modules (the poll sources', the I/O layer's), which do not
 * exclude each other. Read without a lock. */

static int own_fds[ITO_OWN_FDS] = {-1, -1, -1, -1, -1, -1, -1, -1};
_Static_assert(ITO_OWN_FDS == 8, "own_fds: one -1 per slot");

void ito__own_fd_add(int fd) {
  for (int i = 0; i < ITO_OWN_FDS; i++) {
    int empty = -1;
    if (__atomic_compare_exchange_n(&own_fds[i], &empty, fd, false, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED))
      return;
  }
  ito__fatal("more than %d descriptors of its own", ITO_OWN_FDS);
}

void ito__own_fd_drop(int fd) {
  for (int i = 0; i < ITO_OWN_FDS; i++) {
    int x = fd;
    if (__atomic_compare_exchange_n(&own_fds[i], &x, -1, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      return;
  }
}

bool ito__own_fd(int fd) {
  for (int i = 0; i < ITO_OWN_FDS; i++)
    if (fd >= 0 && __atomic_load_n(&own_fds[i], __ATOMIC_ACQUIRE) == fd) return true;
  return false;
}

int ito__own_fd_first(unsigned lo, unsigned hi) {
  int best = -1;
  for (int i = 0; i < ITO_OWN_FDS; i++) {
    int x = __atomic_load_n(&own_fds[i], __ATOMIC_ACQUIRE);
    if (x >= 0 && (unsigned)x >= lo && (unsigned)x <= hi && (best < 0 || x < best)) best = x;
  }
  return best;
}

/* The lowest number a descriptor of the runtime's goes to: 1024, or, under
 * a lower limit of descriptors, near its top (the program's table fills
 * from below, so its numbers stay those it would have natively); 0 where
 * the limit leaves no room for that. */
static int own_fd_floor(void) {
  struct rlimit rl;
  if (ito__os.syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) != 0) return 1024;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1024) return 1024;
  long lo = (long)rl.rlim_cur - 2 * ITO_OWN_FDS;
  return lo > 2 * ITO_OWN_FDS ? (int)lo : 0;
}

int ito__own_fd_take(int fd) {
  int floor = own_fd_floor();
  int hi = floor > fd ? (int)ito__os.syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor) : -1;
  if (hi >= 0) {
    ito__os.syscall(SYS_close, fd);
    fd = hi;
  }
  ito__own_fd_add(fd);
  return fd;
}

int ito__own_fd_renew(int old, int fresh) {
  if (fresh == old) return old;
  if (ito__os.syscall(SYS_dup3, fresh, old, O_CLOEXEC) >= 0) {
    ito__os.syscall(SYS_close, fresh);
    return old;
  }
  ito__own_fd_drop(old);
  return ito__own_fd_take(fresh);
}

/* ---- messages -------------------------------------------------------------------------- */

void ito__write_stderr(const char *s, size_t n) {
  while (n) {
    ssize_t r = ito__os.write(2, s, n);
    if (r <= 0) return;
    s += r;
    n -= (size_t)r;
  }
}

void ito__fatal(const char *fmt, ...) {
  char buf[1024];
  int k = snprintf(buf, sizeof buf, "ito: ");
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + k, sizeof buf - (size_t)k - 1, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)(k + n) > sizeof buf - 2) n = (int)sizeof buf - 2 - k;
  buf[k + n] = '\n';
  ito__write_stderr(buf, (size_t)(k + n + 1));
  abort();
}

void ito__assert_fail(const char *file, int line, const char *cond) {
  ito__fatal("internal error: %s:%d: assertion %s failed", file, line, cond);
}

long ito__queue_signal(int tid, int sig, void *v) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  si.si_uid = getuid();
  si.si_value.sival_ptr = v;
  return ito__os.syscall(SYS_rt_tgsigqueueinfo, si.si_pid, tid, sig, &si);
}

long long ito__os_cpu_ns(int tid) {
  struct timespec ts;
  /* CPUCLOCK_SCHED of one thread: ~tid << 3 | 6 */
  clockid_t c = tid ? (clockid_t)((~(unsigned)tid << 3) | 6) : CLOCK_THREAD_CPUTIME_ID;
  if (ito__os.syscall(SYS_clock_gettime, c, &ts) != 0) return -1;
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void ito__os_sched(int out[2]) {
  struct {
    int prio;
  } sp = {0};
  long pol = ito__os.syscall(SYS_sched_getscheduler, 0);
  if (pol < 0 || ito__os.syscall(SYS_sched_getparam, 0, &sp) != 0) {
    out[0] = out[1] = 0;
    return;
  }
  out[0] = (int)(pol & ~0x40000000L); /* SCHED_RESET_ON_FORK */
  out[1] = sp.prio;
}

/* ---- a lock that does not come free -------------------------------------------------------- */

#define SPIN_LONG_S 10

void ito__spin_long(uint64_t *since) {
  static int said;
  void *where = __builtin_return_address(0);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
  if (!*since) {
    *since = now;
    return;
  }
  if (now - *since < SPIN_LONG_S * 1000000000ULL || __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
    return;
  char fn[160], buf[640];
  ito__elf_name(where, fn, sizeof fn);
  char *cold = strstr(fn, ".cold"); /* (the compiler's split of a function) */
  if (cold) *cold = 0;
  int n = snprintf(buf, sizeof buf,
                   "ito: a thread has waited %d s for a lock of the runtime (in %s); a signal "
                   "handler that calls ito while its thread is inside ito waits so for ever: "
                   "only the calls docs/api.md names async-signal-safe may be made there\n",
                   SPIN_LONG_S, fn);
  if (n > 0) ito__write_stderr(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* ---- the lock order's check (base.h; Debug and sanitizer builds) --------------------------- */

#if ITO_ASSERTS
#define HELD_MAX 16
/* The spin locks the code on this thread pointer holds: an ito thread's
 * own with TLS per thread, else the OS thread's (a holder never switches,
 * but for the queue lock a park hands to the scheduler). */
static __thread struct {
  int n;
  struct {
    const int *l;
    int rank;
  } e[HELD_MAX];
} held;

static void order_fail(const char *what, const int *l, int rank) {
  char buf[400];
  int n = snprintf(buf, sizeof buf,
                   "ito: lock order (docs/locks.md): %s: lock %p of rank %d; held:", what,
                   (const void *)l, rank);
  for (int i = 0; i < held.n && n > 0 && (size_t)n < sizeof buf - 40; i++)
    n += snprintf(buf + n, sizeof buf - (size_t)n, " %p (rank %d)", (const void *)held.e[i].l,
                  held.e[i].rank);
  if (n > 0 && (size_t)n < sizeof buf - 1) buf[n++] = '\n';
  if (n > 0) ito__write_stderr(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  abort();
}

int ito__lock_check = 1;

void ito__lock_order(const int *l, int rank) {
  if (!ito__lock_check) return;
  if (rank < LR_INIT || rank > LR_LEAF) order_fail("no such rank", l, rank);
  for (int i = 0; i < held.n; i++) {
    if (held.e[i].l == l) order_fail("taken again by its holder", l, rank);
    if (held.e[i].rank >= rank) order_fail("taken after one of the same or a higher rank", l, rank);
  }
}

void ito__lock_taken(const int *l, int rank) {
  if (!ito__lock_check) return;
  if (held.n == HELD_MAX) order_fail("too many held", l, rank);
  held.e[held.n].l = l;
  held.e[held.n].rank = rank;
  held.n++;
}

void ito__lock_given(const int *l) {
  for (int i = held.n - 1; i >= 0; i--)
    if (held.e[i].l == l) {
      for (; i + 1 < held.n; i++) held.e[i] = held.e[i + 1];
      held.n--;
      return;
    }
  /* not held here: the queue lock of a thread that parked, which the
   * scheduler lets go after the switch (ito__lock_handoff) */
}

void ito__lock_handoff(int post) {
  if (!ito__lock_check) return;
  /* a switch away from this code: nothing held but, where the scheduler
   * runs a post function, the one queue lock it lets go */
  if (held.n > (post ? 1 : 0) ||
      (held.n == 1 && held.e[0].rank != LR_QUEUE && held.e[0].rank != LR_QUEUE_OUTER))
    order_fail("held across a switch", held.e[held.n - 1].l, held.e[held.n - 1].rank);
  held.n = 0;
}
#endif
