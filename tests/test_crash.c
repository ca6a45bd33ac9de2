/* Fatal-error tests. Run without arguments this is a driver: it re-executes
 * itself ("test_crash --child MODE") with a chosen environment, captures the
 * child's stderr and checks how the child ended and what it printed. */
#define _GNU_SOURCE
#include <ito/ito.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "../src/dropin/ito_dropin.h"

extern char **environ;

/* ---- child side ---------------------------------------------------------- */
enum { OUT_MAX_CHILD = 1 << 16 };
static volatile int never = -1;

static __attribute__((noinline)) int recurse(int depth) {
  volatile char buf[512];
  buf[0] = (char)depth;
  buf[sizeof buf - 1] = (char)depth;
  if (depth == never) return 0;
  return recurse(depth + 1) + buf[depth & 511]; /* not a tail call */
}

static void *overflow_fn(void *p) {
  (void)p;
  return (void *)(intptr_t)recurse(0);
}

static void *echo_fn(void *p) { return p; }

/* "noreturn" and "joined": a function forks a child that spins until the
 * function's continuation has run elsewhere (stolen by the second worker),
 * then returns without ito_tg_join (the runtime must stop the program) or
 * after it (all is well). */
static volatile int continued;

static void spin_child(void *p) {
  (void)p;
  while (!continued) {
  }
}

static __attribute__((noinline)) void fork_and_return(int join) {
  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_fork(&tg, spin_child, NULL, 0);
  continued = 1;
  if (join) ito_tg_join(&tg);
}

/* "badhandle": handles the runtime never returned, and stale ones. */
static int bad_handles(void) {
  static const ito_thread_t forged[] = {0x8000000012345678ULL, 0x8000000000000001ULL,
                                        0xFFFFFFFFFFFFFFFFULL, 0x8000000100000000ULL,
                                        0x7FFFFFFFFFFFFFFFULL};
  for (size_t i = 0; i < sizeof forged / sizeof forged[0]; i++) {
    int j = ito_join(forged[i], NULL), d = ito_detach(forged[i]);
    if (j != EINVAL || d != EINVAL) {
      fprintf(stderr, "child: handle %#llx: join %d, detach %d (expected EINVAL)\n",
              (unsigned long long)forged[i], j, d);
      return 3;
    }
  }
  ito_thread_t t;
  if (ito_join(0, NULL) != ESRCH || ito_create(echo_fn, NULL, &t) != 0 || ito_join(t, NULL) != 0)
    return 3;
  if (ito_join(t, NULL) != EINVAL || ito_detach(t) != EINVAL) {
    fprintf(stderr, "child: a joined thread's handle still joins or detaches\n");
    return 3;
  }
  return 0;
}

/* "nostack": a thief that cannot get a stack for a continuation leaves it
 * to its owner. The address space is capped right after start-up, so no
 * new stack mapping can be made; a recorder counts the thief's attempts. */
static long steals;
static void count_steals(const struct ito_event *e, void *arg) {
  (void)arg;
  if (e->kind == ITO_EV_STEAL) __atomic_add_fetch(&steals, 1, __ATOMIC_RELAXED);
}

static void wait_for_thief(void *p) {
  long long *x = p;
  /* (no bound of its own: the driver ends a child after CHILD_TIMEOUT_MS) */
  while (!__atomic_load_n(&steals, __ATOMIC_RELAXED)) usleep(1000);
  *x = 42;
}

static void cap_address_space(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long pages = 0;
  if (!f || fscanf(f, "%lu", &pages) != 1) exit(3);
  fclose(f);
  struct rlimit r = {pages * 4096 + (64UL << 20), RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &r) != 0) exit(3);
}

static int no_stack(void) {
  setenv("ITO_NUM_WORKERS", "2", 1); /* a thief */
  if (ito__dropin_hooks_attach(count_steals, NULL) != 0 || ito_init() != 0) return 3;
  cap_address_space(); /* ITO_STACK_SIZE=256M: a stack mapping no longer fits */
  long long x = 0;
  ito_tg_t tg;
  ito_tg_init(&tg);
  ito_tg_fork(&tg, wait_for_thief, &x, 0);
  ito_tg_join(&tg);
  if (x != 42 || !steals) {
    fprintf(stderr, "child: x %lld, %ld steal attempts\n", x, steals);
    return 3;
  }
  return 0;
}

/* "blockcap" and "spinwait": the watchdog's messages. Both workers run
 * threads that never let the main thread's continuation run: blocked in
 * raw read(2) calls with no extra worker allowed (ITO_EXTRA_WORKERS=0), or
 * spinning on a flag that main would set. The messages come after 2 s; an
 * OS thread outside the runtime, which passes the child's stderr on to the
 * driver, ends the stall once it has seen the message's words (the state,
 * not a time: a loaded machine may run the watchdog late; the driver ends
 * a child that never prints them after CHILD_TIMEOUT_MS). The child exits
 * 0 and its stderr must hold the message. */
static int stall_pipes[2][2];
static int stall_flag;
static int stall_err[2], stall_saved_err = -1; /* the pipe fd 2 writes to; the real stderr */
static const char *stall_words[2];

static void *stall_read(void *p) {
  char c;
  return (void *)syscall(SYS_read, stall_pipes[(long)p][0], &c, 1);
}

static void *stall_spin(void *p) {
  (void)p;
  while (!__atomic_load_n(&stall_flag, __ATOMIC_ACQUIRE)) {
  }
  return NULL;
}

/* Passes the child's stderr on until EOF; releases the stalled threads
 * once both words have gone by. */
static void *stall_release(void *p) {
  (void)p;
  static char seen[OUT_MAX_CHILD + 1];
  size_t len = 0;
  int released = 0;
  for (;;) {
    char buf[4096];
    ssize_t k = read(stall_err[0], buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    for (ssize_t off = 0; off < k;) {
      ssize_t w = write(stall_saved_err, buf + off, (size_t)(k - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(3);
      off += w;
    }
    size_t take = (size_t)k < OUT_MAX_CHILD - len ? (size_t)k : OUT_MAX_CHILD - len;
    memcpy(seen + len, buf, take);
    len += take;
    seen[len] = 0;
    if (!released && strstr(seen, stall_words[0]) && strstr(seen, stall_words[1])) {
      released = 1;
      __atomic_store_n(&stall_flag, 1, __ATOMIC_RELEASE);
      for (int i = 0; i < 2; i++)
        if (write(stall_pipes[i][1], "x", 1) != 1) _exit(3);
    }
  }
  return NULL;
}

static int stall(int spin) {
  setenv("ITO_NUM_WORKERS", "2", 1);
  stall_words[0] = spin ? "not preempted" : "blocked"; /* (as in the driver's cases) */
  stall_words[1] = spin ? "yield" : "ITO_EXTRA_WORKERS";
  for (int i = 0; i < 2; i++)
    if (pipe(stall_pipes[i])) return 3;
  if (pipe(stall_err) || (stall_saved_err = dup(2)) < 0 || dup2(stall_err[1], 2) < 0) return 3;
  close(stall_err[1]);
  pthread_t rel;
  if (ito_init() != 0 || pthread_create(&rel, NULL, stall_release, NULL)) return 3;
  ito_thread_t t[2];
  for (long i = 0; i < 2; i++)
    if (ito_create(spin ? stall_spin : stall_read, (void *)i, &t[i])) return 3;
  __atomic_store_n(&stall_flag, 1, __ATOMIC_RELEASE); /* (main runs here only once released) */
  for (int i = 0; i < 2; i++) ito_join(t[i], NULL);
  dup2(stall_saved_err, 2); /* the pipe's last write end: stall_release reads to its end */
  pthread_join(rel, NULL);
  return 0;
}

/* "initfail": ito_init (and a call that starts the runtime implicitly)
 * return an error when the workers' memory cannot be mapped, and the
 * runtime starts once it can. */
static int init_fail(void) {
  struct rlimit old;
  if (getrlimit(RLIMIT_AS, &old) != 0) return 3;
  cap_address_space();
  struct rlimit r;
  getrlimit(RLIMIT_AS, &r);
  r.rlim_cur -= 60UL << 20; /* not even a worker's deque fits */
  if (setrlimit(RLIMIT_AS, &r) != 0) return 3;
  int a = ito_init();
  ito_thread_t t;
  int b = ito_create(echo_fn, NULL, &t);
  int c = ito_num_workers();
  if (setrlimit(RLIMIT_AS, &old) != 0) return 3;
  int d = ito_init();
  void *res = NULL;
  int e = d ? d : ito_create(echo_fn, (void *)(intptr_t)9, &t);
  int f = e ? e : ito_join(t, &res);
  if ((a != ENOMEM && a != EAGAIN) || (b != ENOMEM && b != EAGAIN) || c != -1 || d || e || f ||
      (intptr_t)res != 9) {
    fprintf(stderr,
            "child: capped: ito_init %d, ito_create %d, ito_num_workers %d; then: "
            "ito_init %d, ito_create %d, ito_join %d\n",
            a, b, c, d, e, f);
    return 3;
  }
  return 0;
}

static int child(const char *mode) {
  int rc;
  ito_thread_t t;
  if (strcmp(mode, "nostack") == 0) return no_stack();
  if (strcmp(mode, "initfail") == 0) return init_fail();
  if (strcmp(mode, "noreturn") == 0 || strcmp(mode, "joined") == 0) {
    if ((rc = ito_init()) != 0) return 3;
    fork_and_return(mode[0] == 'j');
    return 0;
  }
  if (strcmp(mode, "badhandle") == 0) return bad_handles();
  if (strcmp(mode, "blockcap") == 0) return stall(0);
  if (strcmp(mode, "spinwait") == 0) return stall(1);
  if (strcmp(mode, "overflow") == 0) {
    if ((rc = ito_create(overflow_fn, NULL, &t)) != 0) {
      fprintf(stderr, "child: ito_create returned %d\n", rc);
      return 3;
    }
    ito_join(t, NULL);
    fprintf(stderr, "child: the unbounded recursion returned\n");
    return 0;
  }
  if (strcmp(mode, "init") == 0 && (rc = ito_init()) != 0) {
    fprintf(stderr, "child: ito_init returned %d\n", rc);
    return 3;
  }
  /* mode "implicit": this first call starts the runtime. */
  if ((rc = ito_create(echo_fn, (void *)(intptr_t)7, &t)) != 0) {
    fprintf(stderr, "child: ito_create returned %d\n", rc);
    return 3;
  }
  void *r = NULL;
  if ((rc = ito_join(t, &r)) != 0 || (intptr_t)r != 7) {
    fprintf(stderr, "child: ito_join returned %d, result %p\n", rc, r);
    return 3;
  }
  return 0;
}

/* ---- driver side ---------------------------------------------------------- */
typedef struct {
  const char *mode;
  const char *env;      /* one NAME=VALUE added to the child's environment */
  int expect_failure;   /* 0: must exit 0; 1: must exit nonzero or die by a signal */
  const char *words[3]; /* must all occur in the child's stderr */
  int native_only;      /* an emulator does not honour the child's RLIMIT_AS */
} crash_case;

static const crash_case cases[] = {
    /* Controls: a valid environment works, so the failures below are real. */
    {"init", "ITO_NUM_WORKERS=2", 0, {NULL, NULL}},
    {"implicit", "ITO_NUM_WORKERS=2", 0, {NULL, NULL}},
    {"overflow",
     "ITO_NUM_WORKERS=2",
     1,
     {"stack overflow in lightweight thread", "started at overflow_fn (", "raise ITO_STACK_SIZE"}},
    {"init", "ITO_NUM_WORKERS=abc", 1, {"ITO_NUM_WORKERS", NULL}},
    {"implicit", "ITO_NUM_WORKERS=abc", 1, {"ITO_NUM_WORKERS", NULL}},
    {"init", "ITO_NUM_WORKERS=0", 1, {"ITO_NUM_WORKERS", NULL}},
    {"implicit", "ITO_NUM_WORKERS=0", 1, {"ITO_NUM_WORKERS", NULL}},
    {"init", "ITO_NUM_WORKERS=100000000", 1, {"ITO_NUM_WORKERS", NULL}},
    {"implicit", "ITO_NUM_WORKERS=100000000", 1, {"ITO_NUM_WORKERS", NULL}},
    {"init", "ITO_STACK_SIZE=12", 1, {"ITO_STACK_SIZE", NULL}},
    {"implicit", "ITO_STACK_SIZE=12", 1, {"ITO_STACK_SIZE", NULL}},
    {"init", "ITO_STACK_SIZE=xyz", 1, {"ITO_STACK_SIZE", NULL}},
    {"implicit", "ITO_STACK_SIZE=xyz", 1, {"ITO_STACK_SIZE", NULL}},
    {"init", "ITO_BIND=7", 1, {"ITO_BIND", NULL}},
    {"implicit", "ITO_BIND=7", 1, {"ITO_BIND", NULL}},
    {"init", "ITO_WAIT_POLICY=active", 0, {NULL, NULL}},
    {"init", "ITO_WAIT_POLICY=Passive", 0, {NULL, NULL}},
    {"init", "ITO_WAIT_POLICY=lazy", 1, {"ITO_WAIT_POLICY", "passive"}},
    {"implicit", "ITO_WAIT_POLICY=lazy", 1, {"ITO_WAIT_POLICY", "active"}},
    {"init", "ITO_SPIN_US=0", 0, {NULL, NULL}},
    {"init", "ITO_SPIN_US=-5", 1, {"ITO_SPIN_US", NULL}},
    {"implicit", "ITO_SPIN_US=10ms", 1, {"ITO_SPIN_US", NULL}},
    {"init", "ITO_SPIN_US=99999999999", 1, {"ITO_SPIN_US", NULL}},
    /* sizes: the documented forms only, and the bounds as documented */
    {"init", "ITO_STACK_SIZE=1G", 0, {NULL, NULL}},
    {"init", "ITO_STACK_SIZE=64k", 0, {NULL, NULL}},
    {"init", "ITO_STACK_SIZE=65536", 0, {NULL, NULL}},
    {"init", "ITO_STACK_SIZE=64KB", 1, {"ITO_STACK_SIZE", "16K to 1G"}},
    {"init", "ITO_STACK_SIZE=64KiB", 1, {"ITO_STACK_SIZE", "16K to 1G"}},
    {"init", "ITO_STACK_SIZE=1GiB", 1, {"ITO_STACK_SIZE", NULL}},
    {"init", "ITO_STACK_SIZE=2G", 1, {"ITO_STACK_SIZE", "16K to 1G"}},
    {"init", "ITO_STACK_CACHE=0", 0, {NULL, NULL}},
    {"init", "ITO_STACK_CACHE=40M", 0, {NULL, NULL}},
    {"init", "ITO_STACK_CACHE=lots", 1, {"ITO_STACK_CACHE", NULL}},
    /* words in any letter case */
    {"init", "ITO_DEQUE_FENCE=Symmetric", 0, {NULL, NULL}},
    {"init", "ITO_STACK_GUARD=ALWAYS", 0, {NULL, NULL}},
    {"init", "ITO_STACK_GUARD=sometimes", 1, {"ITO_STACK_GUARD", "never"}},
    {"init", "ITO_DEQUE_FENCE=none", 1, {"ITO_DEQUE_FENCE", "symmetric"}},
    {"init", "ITO_IO_PIPE_NOWAIT=maybe", 1, {"ITO_IO_PIPE_NOWAIT", NULL}},
    /* the watchdog: blocked workers with no extra allowed, spinning threads */
    {"blockcap", "ITO_EXTRA_WORKERS=0", 0, {"blocked", "ITO_EXTRA_WORKERS"}},
    {"spinwait", "ITO_NUM_WORKERS=2", 0, {"not preempted", "yield"}},
    {"init", "ITO_EXTRA_WORKERS=-1", 1, {"ITO_EXTRA_WORKERS", NULL}},
    /* handles the runtime never returned fail with EINVAL, not a crash */
    {"badhandle", "ITO_NUM_WORKERS=2", 0, {NULL, NULL}},
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
    /* (the sanitizers' shadow memory does not fit under a capped address space) */
    {"initfail", "ITO_NUM_WORKERS=2", 0, {NULL, NULL}, 1},
    {"nostack", "ITO_STACK_SIZE=256M", 0, {NULL, NULL}, 1},
#endif
#if !defined(__SANITIZE_THREAD__)
    /* (ThreadSanitizer builds give every child a thread: nothing is stolen) */
    {"joined", "ITO_NUM_WORKERS=2", 0, {NULL, NULL}},
    {"noreturn", "ITO_NUM_WORKERS=2", 1, {"returned between ito_tg_fork", "ito_tg_join"}},
#endif
};

enum { MAX_ENV = 4096, OUT_MAX = 1 << 16, CHILD_TIMEOUT_MS = 30000 };

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The child's environment: ours without any ITO_* variable, plus c->env. If
 * the tests are built with ASan, let the runtime install its own SIGSEGV
 * handler (which reports the stack overflow) instead of ASan's. */
static char **child_env(const crash_case *c, char *asan_buf, size_t asan_len) {
  static char *env[MAX_ENV];
  int n = 0;
  const char *asan = "";
  for (char **e = environ; *e && n < MAX_ENV - 4; e++) {
    if (strncmp(*e, "ITO_", 4) == 0) continue;
    if (strncmp(*e, "ASAN_OPTIONS=", 13) == 0) {
      asan = *e + 13;
      continue;
    }
    env[n++] = *e;
  }
  snprintf(asan_buf, asan_len, "ASAN_OPTIONS=%s%sallow_user_segv_handler=1", asan,
           *asan ? ":" : "");
  env[n++] = asan_buf;
  env[n++] = (char *)c->env;
  env[n] = NULL;
  return env;
}

/* Runs one case; returns 1 when it behaved as expected. */
static int run_case(const char *self, const crash_case *c) {
  static char out[OUT_MAX + 1];
  const char *emulator = getenv("TEST_CRASH_EMULATOR");
  if (c->native_only && emulator && *emulator) {
    printf("SKIPPED: %s %s: under an emulator, which does not honour the child's RLIMIT_AS\n",
           c->env, c->mode);
    return 1;
  }
  char asan_buf[1024];
  char **env = child_env(c, asan_buf, sizeof asan_buf);
  int fds[2];
  CHECK_EQ(pipe(fds), 0);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    /* When cross compiling, ctest runs this driver under an emulator, which
     * the child needs as well: TEST_CRASH_EMULATOR holds its command line
     * (words separated by spaces). */
    char *argv[64];
    int argc = 0;
    static char emu[1024];
    const char *e = getenv("TEST_CRASH_EMULATOR");
    if (e && *e) {
      snprintf(emu, sizeof emu, "%s", e);
      for (char *w = strtok(emu, " "); w && argc < 60; w = strtok(NULL, " ")) argv[argc++] = w;
    }
    argv[argc++] = (char *)self;
    argv[argc++] = (char *)"--child";
    argv[argc++] = (char *)c->mode;
    argv[argc] = NULL;
    execvpe(argv[0], argv, env);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  size_t len = 0;
  int timed_out = 0;
  long deadline = now_ms() + CHILD_TIMEOUT_MS;
  for (;;) {
    long left = deadline - now_ms();
    if (left <= 0) {
      timed_out = 1;
      kill(pid, SIGKILL);
      break;
    }
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int pr = poll(&pfd, 1, (int)left);
    if (pr < 0 && errno == EINTR) continue;
    CHECK(pr >= 0);
    if (pr == 0) continue;
    char tmp[4096];
    ssize_t k = read(fds[0], tmp, sizeof tmp);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break; /* EOF: every copy of the write end is closed */
    size_t take = (size_t)k < OUT_MAX - len ? (size_t)k : OUT_MAX - len;
    memcpy(out + len, tmp, take);
    len += take;
  }
  close(fds[0]);
  out[len] = '\0';
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) CHECK_EQ(errno, EINTR);

  int ok = !timed_out;
  char how[64];
  if (WIFSIGNALED(status))
    snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
  else
    snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(status));
  int failed = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
  if (failed != c->expect_failure) ok = 0;
  for (int i = 0; i < 3 && c->words[i]; i++) {
    const char *w = c->words[i];
    /* The prose is matched without regard to case; variable names exactly. */
    if (!(strncmp(w, "ITO_", 4) == 0 ? strstr(out, w) : strcasestr(out, w))) {
      printf("  missing \"%s\" in stderr\n", w);
      ok = 0;
    }
  }
  printf("%s: %s %s: %s%s\n", ok ? "PASS" : "FAIL", c->env, c->mode, timed_out ? "timed out, " : "",
         how);
  if (!ok || c->expect_failure) printf("  stderr: %s\n", len ? out : "(empty)");
  fflush(stdout);
  return ok;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child") == 0) return child(argv[2]);
  const char *self = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe";
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (!run_case(self, &cases[i])) failures++;
  if (failures) {
    fprintf(stderr, "test_crash: %d case(s) failed\n", failures);
    return 1;
  }
  puts("test_crash: OK");
  return 0;
}
