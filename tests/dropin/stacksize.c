/* Drop-in test: a thread gets a stack of the size it asked for, whether
 * smaller or larger than the library's default.
 *  - pthread_getattr_np reports the size asked for (page multiples);
 *  - a thread that stays within half its size runs, 200 times in a row
 *    (the stacks are reused);
 *  - a thread that writes below its stack's lowest address less the size
 *    asked for (past the size, by up to 8 KiB) dies of SIGSEGV, as
 *    natively: glibc puts a guard page below the size (its descriptor and
 *    TLS inside it), and a stack larger than asked for would let the
 *    overflow run on. Each such thread runs in a child process.
 *
 * The sizes start at the smallest the system accepts (16 KiB on x86-64,
 * 128 KiB on AArch64), then a page more, four and sixteen times it, 1 MiB,
 * in ascending order. Under an emulator (ITO_TEST_EMULATOR set) the
 * overrun is not tried: qemu-user aborts in the forked child.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define DROPIN_PROG "stacksize"
#include "dropin.h"

/* Uses about kib KiB of stack. */
static __attribute__((noinline)) long deep(int kib) {
  volatile char frame[1000];
  memset((char *)frame, kib & 0x7f, sizeof frame);
  if (kib <= 1) return frame[10];
  return deep(kib - 1) + frame[kib % 1000];
}

struct job {
  size_t asked;
  size_t reported;
  int kib;     /* recursion depth, or 0 */
  int overrun; /* write down to the top less the size asked for less 8 KiB */
  long result;
};

static void *run(void *p) {
  struct job *j = p;
  pthread_attr_t a;
  void *lo;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
    FAIL("pthread_getattr_np");
  pthread_attr_destroy(&a);
  j->reported = size;
  if (j->kib) j->result = deep(j->kib);
  if (j->overrun) {
    char *top = (char *)lo + size;
    char here;
    for (volatile char *q = &here - 256; q > top - j->asked - 8192; q -= 256) *q = 1;
  }
  return NULL;
}

static void start(struct job *j) {
  pthread_attr_t a;
  pthread_t t;
  must("pthread_attr_init", pthread_attr_init(&a));
  must("pthread_attr_setstacksize", pthread_attr_setstacksize(&a, j->asked));
  must("pthread_create", pthread_create(&t, &a, run, j));
  must("pthread_join", pthread_join(t, NULL));
  pthread_attr_destroy(&a);
}

/* In a child process: a thread of this size writes past it. */
static const char *overrun(size_t asked) {
  /* qemu-user 7.2 aborts in a forked child that creates a thread once the
   * parent has threads on other host threads (natively too) */
  const char *emu = getenv("ITO_TEST_EMULATOR");
  if (emu && *emu) return "not tried under an emulator";
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) FAIL("fork");
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    struct job j = {.asked = asked, .overrun = 1};
    start(&j);
    _exit(0);
  }
  int st;
  if (waitpid(pid, &st, 0) != pid) FAIL("waitpid");
  if (WIFEXITED(st)) return WEXITSTATUS(st) == 0 ? "ran on past its size" : "failed";
  return WTERMSIG(st) == SIGSEGV ? "SIGSEGV" : strsignal(WTERMSIG(st));
}

int main(void) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t low = (size_t)sysconf(_SC_THREAD_STACK_MIN);
  low = (low + page - 1) / page * page;
  size_t sizes[] = {low, low + page, 4 * low, 16 * low, 1u << 20};
  /* ascending: glibc's stack cache gives a request a cached stack up to
   * four times its size, which it then reports */
  for (size_t i = 1; i < sizeof sizes / sizeof sizes[0]; i++)
    for (size_t k = i; k > 0 && sizes[k - 1] > sizes[k]; k--) {
      size_t t = sizes[k];
      sizes[k] = sizes[k - 1];
      sizes[k - 1] = t;
    }
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t s = sizes[i];
    struct job j = {.asked = s, .kib = (int)(s / 1024 / 2)};
    start(&j);
    long sum = 0;
    for (int k = 0; k < 200; k++) {
      struct job r = {.asked = s, .kib = (int)(s / 1024 / 2)};
      start(&r);
      sum += r.result;
    }
    printf("%zu bytes asked: reported %s; half of it used: %ld; 200 more: %ld; past it: %s\n", s,
           j.reported == s ? "as asked" : "otherwise", j.result, sum, overrun(s));
  }
  return 0;
}
