/* The System V and BSD signal calls, and sigaltstack, act per thread as
 * natively: glibc's sighold, sigrelse, sigset, sigignore, sigpause,
 * sigblock, sigsetmask and siggetmask change the mask and the action
 * through its internal calls, and sigaltstack is kept by the kernel per OS
 * thread; under libito-pthread.so each must be the calling thread's own.
 *  1. sighold in one thread keeps SIGUSR1 sent to it pending (sigpending
 *     shows it) while another thread, which does not hold it, takes one;
 *     sigrelse delivers it, in the holding thread.
 *  2. sigset: the previous disposition, SIG_HOLD blocks, a handler
 *     unblocks and reports SIG_HOLD; sigignore discards.
 *  3. sigblock, siggetmask and sigsetmask on the BSD mask.
 *  4. sigaltstack: set and read back in one thread, another thread's is
 *     its own (disabled), and the errors for bad flags and a small stack.
 *  5. siglongjmp out of a handler restores the mask sigsetjmp saved (the
 *     handler's own signal is unblocked again), in a thread.
 * Output is deterministic; both.sh compares it with the native run. */
#define _GNU_SOURCE
#define DROPIN_PROG "sysvsig"
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dropin.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* (the calls under test are) */
#define BIT(s) (1 << ((s)-1)) /* (the BSD mask of a signal: sigmask, deprecated too) */

static pthread_t holder, other;
static volatile int got_holder, got_other, got_wrong, got2;

static void on_usr1(int sig) {
  (void)sig;
  pthread_t me = pthread_self();
  if (pthread_equal(me, holder))
    got_holder++;
  else if (pthread_equal(me, other))
    got_other++;
  else
    got_wrong++;
}

static void on_usr2(int sig) {
  (void)sig;
  got2++;
}

static pthread_barrier_t bar;
static int pending_held, delivered_held, delivered_after, other_at_once;

static void *holder_main(void *p) {
  (void)p;
  if (sighold(SIGUSR1)) FAIL("sighold");
  pthread_barrier_wait(&bar); /* 1: held */
  pthread_barrier_wait(&bar); /* 2: both were sent SIGUSR1 */
  sigset_t pend;
  sigpending(&pend);
  pending_held = sigismember(&pend, SIGUSR1);
  delivered_held = got_holder;
  if (sigrelse(SIGUSR1)) FAIL("sigrelse");
  delivered_after = got_holder;
  return NULL;
}

static void *other_main(void *p) {
  (void)p;
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  /* (it was sent before the second barrier: it comes without sigrelse;
   * 60 s at most, for a loaded machine) */
  for (int i = 0; i < 60000 && !got_other; i++) usleep(1000);
  other_at_once = got_other == 1;
  return NULL;
}

static const char *disp_name(sighandler_t h) {
  if (h == SIG_DFL) return "SIG_DFL";
  if (h == SIG_IGN) return "SIG_IGN";
  if (h == SIG_HOLD) return "SIG_HOLD";
  if (h == SIG_ERR) return "SIG_ERR";
  if (h == on_usr2) return "on_usr2";
  return "another";
}

static void *alt_other(void *p) {
  (void)p;
  stack_t o;
  if (sigaltstack(NULL, &o)) FAIL("sigaltstack read");
  printf("altstack: another thread's is disabled: %s\n", (o.ss_flags & SS_DISABLE) ? "yes" : "no");
  return NULL;
}

static void *alt_main(void *p) {
  (void)p;
  size_t sz = 1 << 16;
  void *mem = malloc(sz);
  stack_t ss = {.ss_sp = mem, .ss_size = sz, .ss_flags = 0}, o;
  if (sigaltstack(&ss, NULL)) FAIL("sigaltstack set");
  if (sigaltstack(NULL, &o)) FAIL("sigaltstack read");
  printf("altstack: read back as set: %s\n",
         o.ss_sp == mem && o.ss_size == sz && o.ss_flags == 0 ? "yes" : "no");
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, alt_other, NULL));
  must("pthread_join", pthread_join(t, NULL));
  stack_t bad = {.ss_sp = mem, .ss_size = sz, .ss_flags = 12345};
  int rc = sigaltstack(&bad, NULL);
  int e = errno_now();
  printf("altstack: bad flags: %d %s\n", rc, e == EINVAL ? "EINVAL" : "other");
  stack_t small = {.ss_sp = mem, .ss_size = 64, .ss_flags = 0};
  rc = sigaltstack(&small, NULL);
  e = errno_now();
  printf("altstack: too small: %d %s\n", rc, e == ENOMEM ? "ENOMEM" : "other");
  stack_t off = {.ss_flags = SS_DISABLE};
  if (sigaltstack(&off, &o)) FAIL("sigaltstack disable");
  printf("altstack: the old one returned on disabling: %s\n", o.ss_sp == mem ? "yes" : "no");
  free(mem);
  return NULL;
}

static sigjmp_buf jb;
static volatile int jumps;
static void on_usr2_jump(int sig) {
  (void)sig;
  jumps++;
  siglongjmp(jb, 1);
}

static void *jumper(void *p) {
  (void)p;
  struct sigaction a;
  memset(&a, 0, sizeof a);
  a.sa_handler = on_usr2_jump; /* SIGUSR2 blocked while it runs */
  sigaction(SIGUSR2, &a, NULL);
  for (int round = 0; round < 2; round++) {
    if (sigsetjmp(jb, 1) == 0) {
      pthread_kill(pthread_self(), SIGUSR2);
      FAIL("the handler did not jump");
    }
    sigset_t now;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    printf("siglongjmp round %d: SIGUSR2 blocked after the jump: %s, jumps %d\n", round,
           sigismember(&now, SIGUSR2) ? "yes" : "no", jumps);
  }
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGUSR1, on_usr1);
  /* 1 */
  pthread_barrier_init(&bar, NULL, 3);
  must("pthread_create", pthread_create(&holder, NULL, holder_main, NULL));
  must("pthread_create", pthread_create(&other, NULL, other_main, NULL));
  pthread_barrier_wait(&bar);
  must("pthread_kill", pthread_kill(holder, SIGUSR1));
  must("pthread_kill", pthread_kill(other, SIGUSR1));
  pthread_barrier_wait(&bar);
  must("pthread_join", pthread_join(holder, NULL));
  must("pthread_join", pthread_join(other, NULL));
  printf("holder: SIGUSR1 pending while held: %s, delivered: %d\n", pending_held ? "yes" : "no",
         delivered_held);
  printf("holder: delivered after sigrelse: %d\n", delivered_after);
  printf("other: took SIGUSR1 at once: %s\n", other_at_once ? "yes" : "no");
  printf("handler ran in a thread it was not sent to: %d\n", got_wrong);

  /* 2 */
  sighandler_t h = sigset(SIGUSR2, on_usr2);
  printf("sigset: was %s\n", disp_name(h));
  h = sigset(SIGUSR2, SIG_HOLD);
  printf("sigset SIG_HOLD: was %s\n", disp_name(h));
  raise(SIGUSR2);
  printf("raised while held: delivered %d\n", got2);
  h = sigset(SIGUSR2, on_usr2);
  printf("sigset again: was %s, delivered %d\n", disp_name(h), got2);
  if (sigignore(SIGUSR2)) FAIL("sigignore");
  raise(SIGUSR2);
  h = sigset(SIGUSR2, SIG_DFL);
  printf("after sigignore: raised, delivered %d, disposition was %s\n", got2, disp_name(h));
  int rc = sighold(0);
  int e = errno_now();
  printf("sighold(0): %d %s\n", rc, e == EINVAL ? "EINVAL" : "other");

  /* 3 */
  int old = sigblock(BIT(SIGUSR1));
  printf("sigblock: SIGUSR1 was blocked: %s\n", (old & BIT(SIGUSR1)) ? "yes" : "no");
  printf("siggetmask: SIGUSR1 blocked now: %s\n", (siggetmask() & BIT(SIGUSR1)) ? "yes" : "no");
  raise(SIGUSR1);
  int before = got_wrong + got_holder + got_other;
  sigsetmask(old);
  printf("sigsetmask: SIGUSR1 blocked now: %s; the pending one delivered: %s\n",
         (siggetmask() & BIT(SIGUSR1)) ? "yes" : "no",
         got_wrong + got_holder + got_other > before ? "yes" : "no");

  /* 4 */
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, alt_main, NULL));
  must("pthread_join", pthread_join(t, NULL));

  /* 5 */
  must("pthread_create", pthread_create(&t, NULL, jumper, NULL));
  must("pthread_join", pthread_join(t, NULL));
  return 0;
}
