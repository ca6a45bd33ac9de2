/* Process-shared objects between two processes, as natively: a mutex, a
 * condition variable, a rwlock, a barrier and a semaphore in shared
 * memory, used by two threads in each of a parent and a forked child.
 * Output is deterministic; both.sh compares it with the native run (the
 * child inherits the preload). */
#define _GNU_SOURCE
#define DROPIN_PROG "pshared"
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dropin.h"

#define ROUNDS 20000

struct shared {
  pthread_mutex_t m;
  pthread_cond_t c;
  pthread_rwlock_t rw;
  pthread_barrier_t b;
  sem_t s;
  long counter, rw_counter;
  int go, ready;
  int serial;
};
static struct shared *sh;

static void *worker(void *p) {
  (void)p;
  for (int i = 0; i < ROUNDS; i++) {
    if (pthread_mutex_lock(&sh->m)) FAIL("lock");
    sh->counter++;
    if (pthread_mutex_unlock(&sh->m)) FAIL("unlock");
    if (i % 100 == 0) {
      pthread_rwlock_wrlock(&sh->rw);
      sh->rw_counter++;
      pthread_rwlock_unlock(&sh->rw);
      pthread_rwlock_rdlock(&sh->rw);
      pthread_rwlock_unlock(&sh->rw);
    }
  }
  /* the four threads of both processes meet */
  int rc = pthread_barrier_wait(&sh->b);
  if (rc == PTHREAD_BARRIER_SERIAL_THREAD)
    __atomic_add_fetch(&sh->serial, 1, __ATOMIC_RELAXED);
  else if (rc)
    FAIL("barrier: %s", code_name(rc));
  return NULL;
}

static void run_two(void) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&t[i], NULL, worker, NULL)) FAIL("pthread_create");
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) FAIL("mmap");
  memset(sh, 0, sizeof *sh);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  printf("mutex init: %s\n", code_name(pthread_mutex_init(&sh->m, &ma)));
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  printf("cond init: %s\n", code_name(pthread_cond_init(&sh->c, &ca)));
  pthread_rwlockattr_t ra;
  pthread_rwlockattr_init(&ra);
  pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
  printf("rwlock init: %s\n", code_name(pthread_rwlock_init(&sh->rw, &ra)));
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  printf("barrier init: %s\n", code_name(pthread_barrier_init(&sh->b, &ba, 4)));
  printf("sem init: %d\n", sem_init(&sh->s, 1, 0));

  pid_t kid = fork();
  if (kid < 0) FAIL("fork");
  if (kid == 0) {
    /* the child waits for the parent's word on the condition variable */
    pthread_mutex_lock(&sh->m);
    sh->ready = 1;
    while (!sh->go) pthread_cond_wait(&sh->c, &sh->m);
    pthread_mutex_unlock(&sh->m);
    run_two();
    sem_post(&sh->s);
    _exit(0);
  }
  for (;;) {
    pthread_mutex_lock(&sh->m);
    int r = sh->ready;
    pthread_mutex_unlock(&sh->m);
    if (r) break;
    usleep(1000);
  }
  pthread_mutex_lock(&sh->m);
  sh->go = 1;
  pthread_cond_broadcast(&sh->c);
  pthread_mutex_unlock(&sh->m);
  run_two();
  if (sem_wait(&sh->s)) FAIL("sem_wait");
  int st;
  waitpid(kid, &st, 0);
  printf("child: %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "exited 0" : "failed");
  printf("counter %ld of %d, rwlock counter %ld, one serial thread: %s\n", sh->counter, 4 * ROUNDS,
         sh->rw_counter, sh->serial == 1 ? "yes" : "no");
  printf("destroy: %s %s %s %s\n", code_name(pthread_mutex_destroy(&sh->m)),
         code_name(pthread_cond_destroy(&sh->c)), code_name(pthread_rwlock_destroy(&sh->rw)),
         code_name(pthread_barrier_destroy(&sh->b)));
  return 0;
}
