/* What libito-pthread.so refuses (docs/dropin.md section 6): each call
 * returns its errno, twice, and refused.sh checks that each refusal printed
 * its line once. Run preloaded only: natively most of these succeed. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DROPIN_PROG "refused"
#include "dropin.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go;

static void *waiter(void *p) {
  pthread_mutex_lock(&m);
  while (!go) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return p;
}

int main(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, waiter, NULL)) return 1;
  if (!((unsigned long)t >> 63)) {
    fprintf(stderr, "refused: not running under libito-pthread.so\n");
    return 1;
  }
  for (int round = 0; round < 2; round++) {
    pthread_mutexattr_t ma;
    pthread_mutex_t pm;
    printf("pthread_kill 0: %s\n", code_name(pthread_kill(t, 0)));
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    printf("robust mutex: %s\n", code_name(pthread_mutex_init(&pm, &ma)));
    pthread_mutexattr_destroy(&ma);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_PROTECT);
    printf("priority-ceiling mutex: %s\n", code_name(pthread_mutex_init(&pm, &ma)));
    pthread_mutexattr_destroy(&ma);
  }
  pthread_mutex_lock(&m);
  go = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  pthread_join(t, NULL);
  printf("pthread_kill 0 after join: %s\n", code_name(pthread_kill(t, 0)));
  return 0;
}
