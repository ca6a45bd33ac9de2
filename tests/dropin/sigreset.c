/* Handlers with SA_RESETHAND arrive while the thread they land on is
 * inside sigaction(). Under libito-pthread.so the runtime's handler resets
 * such an action under the lock that sigaction() holds: a signal that
 * lands on a thread holding that lock must not find it spinning on its
 * own lock for ever (the previous library hung 3 runs in 3). And each
 * signal runs the handler once, then the action is the default: the
 * previous library passed SA_RESETHAND to the kernel, which reset its own
 * action while ito routed the signal on, and the process ended by
 * SIGUSR1's default action in the first round.
 *
 * Main arms SIGUSR1 (SA_RESETHAND), lets the sender (which blocks
 * SIGUSR1, so that the kernel picks main) kill() the process, and calls
 * sigaction() on SIGUSR2 in a loop until the handler ran; ROUNDS times.
 * Prints the rounds; a hang is caught by alarm(90).
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DROPIN_PROG "sigreset"
#include "dropin.h"

#define ROUNDS 1000

static atomic_int handled, armed, stop;

static void on_usr1(int sig) {
  (void)sig;
  atomic_fetch_add(&handled, 1);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "sigreset: FAILED: still running after 90 s (a hang)\n";
  ssize_t k = write(2, msg, sizeof msg - 1);
  (void)k;
  _exit(1);
}

static void *sender(void *arg) {
  (void)arg;
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  must("pthread_sigmask", pthread_sigmask(SIG_BLOCK, &s, NULL));
  while (!atomic_load(&stop)) {
    if (atomic_exchange(&armed, 0))
      kill(getpid(), SIGUSR1);
    else
      sched_yield();
  }
  return NULL;
}

int main(void) {
  signal(SIGALRM, on_alarm);
  alarm(90);
  struct sigaction once, other;
  memset(&once, 0, sizeof once);
  once.sa_handler = on_usr1;
  once.sa_flags = SA_RESETHAND;
  sigemptyset(&once.sa_mask);
  memset(&other, 0, sizeof other);
  other.sa_handler = SIG_IGN;
  sigemptyset(&other.sa_mask);
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, sender, NULL));
  int rounds = 0;
  for (; rounds < ROUNDS; rounds++) {
    int before = atomic_load(&handled);
    if (sigaction(SIGUSR1, &once, NULL) != 0) FAIL("sigaction SIGUSR1");
    atomic_store(&armed, 1);
    for (int k = 1; atomic_load(&handled) == before; k++) {
      if (sigaction(SIGUSR2, &other, NULL) != 0) FAIL("sigaction SIGUSR2");
      if (k % 16 == 0) sched_yield(); /* (on one worker the sender runs then) */
    }
    struct sigaction now;
    if (sigaction(SIGUSR1, NULL, &now) != 0) FAIL("sigaction SIGUSR1 (read)");
    if (now.sa_handler != SIG_DFL) FAIL("round %d: SA_RESETHAND left the handler", rounds);
  }
  atomic_store(&stop, 1);
  must("pthread_join", pthread_join(t, NULL));
  alarm(0);
  printf("%d rounds: the handler ran once each and was reset\n", rounds);
  return 0;
}
