/* Objects freed as soon as the last user is done with them, as programs
 * do: once a thread has unlocked a mutex or taken a semaphore's unit, the
 * object's memory may go, and no call of another thread may touch it after
 * that (glibc's unlock and post end with one store, then at most a futex
 * call on the address).
 *
 *  - mutex: THREADS threads take turns on a mutex in an object whose count
 *    of references they drop under the mutex, DROPS each; the last drop
 *    unlocks and frees the object. Contended, the unlocks take the slow way (the word
 *    at 2), where an unlocker that touched the mutex after its release
 *    would write into freed memory.
 *  - semaphore: a poster posts a semaphore that a taker polls with
 *    sem_trywait; the taker frees it as soon as it took the unit.
 *
 * "Freed" here is made visible: each object has a page of its own, and
 * freeing is mprotect(PROT_NONE), so a late touch is a SIGSEGV at once
 * rather than a silent write into reused memory. Prints the rounds and
 * exits 0. Usage: freeafter [ROUNDS] */
#define _GNU_SOURCE
#define DROPIN_PROG "freeafter"
#include "dropin.h"

#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define THREADS 4

struct obj {
  pthread_mutex_t m;
  int refs;
  sem_t s;
};

static long page;

static struct obj *obj_new(void) {
  void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) FAIL("mmap: %s", strerror(errno));
  return p;
}

static void obj_free(struct obj *o) {
  if (mprotect(o, (size_t)page, PROT_NONE)) FAIL("mprotect: %s", strerror(errno));
}

static void obj_unmap(struct obj *o) { munmap(o, (size_t)page); }

static pthread_barrier_t start;
static struct obj *volatile cur;
static int rounds;

#define DROPS 8 /* each thread drops this many references, one per lock */

static void *mutex_user(void *arg) {
  (void)arg;
  for (int r = 0; r < rounds; r++) {
    pthread_barrier_wait(&start);
    struct obj *o = cur;
    for (int i = 0; i < DROPS; i++) {
      must("pthread_mutex_lock", pthread_mutex_lock(&o->m));
      int last = --o->refs == 0;
      must("pthread_mutex_unlock", pthread_mutex_unlock(&o->m));
      if (last) obj_free(o); /* (every other thread has dropped all of its own) */
    }
    pthread_barrier_wait(&start);
  }
  return NULL;
}

static sem_t *volatile sem_cur;
static pthread_barrier_t pair;

static void *poster(void *arg) {
  (void)arg;
  for (int r = 0; r < rounds; r++) {
    pthread_barrier_wait(&pair);
    if (sem_post(sem_cur)) FAIL("sem_post: %s", strerror(errno));
    pthread_barrier_wait(&pair);
  }
  return NULL;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 2000;
  if (rounds <= 0) FAIL("usage: freeafter [ROUNDS > 0]");
  page = sysconf(_SC_PAGESIZE);

  /* the mutex: each round a new object with THREADS * DROPS references */
  struct obj **all = calloc((size_t)rounds, sizeof *all);
  if (!all) FAIL("out of memory");
  must("pthread_barrier_init", pthread_barrier_init(&start, NULL, THREADS + 1));
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    must("pthread_create", pthread_create(&t[i], NULL, mutex_user, NULL));
  for (int r = 0; r < rounds; r++) {
    struct obj *o = all[r] = obj_new();
    must("pthread_mutex_init", pthread_mutex_init(&o->m, NULL));
    o->refs = THREADS * DROPS;
    cur = o;
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&start);
  }
  for (int i = 0; i < THREADS; i++) must("pthread_join", pthread_join(t[i], NULL));
  must("pthread_barrier_destroy", pthread_barrier_destroy(&start));
  for (int r = 0; r < rounds; r++) obj_unmap(all[r]);
  printf("mutex: %d objects freed by their last user\n", rounds);

  /* the semaphore: the taker frees it once sem_trywait took the unit */
  must("pthread_barrier_init", pthread_barrier_init(&pair, NULL, 2));
  pthread_t p;
  must("pthread_create", pthread_create(&p, NULL, poster, NULL));
  for (int r = 0; r < rounds; r++) {
    struct obj *o = all[r] = obj_new();
    if (sem_init(&o->s, 0, 0)) FAIL("sem_init: %s", strerror(errno));
    sem_cur = &o->s;
    pthread_barrier_wait(&pair);
    while (sem_trywait(&o->s)) {
      if (errno != EAGAIN) FAIL("sem_trywait: %s", strerror(errno));
    }
    obj_free(o);
    pthread_barrier_wait(&pair);
  }
  must("pthread_join", pthread_join(p, NULL));
  must("pthread_barrier_destroy", pthread_barrier_destroy(&pair));
  for (int r = 0; r < rounds; r++) obj_unmap(all[r]);
  free(all);
  printf("semaphore: %d semaphores freed by their taker\n", rounds);
  return 0;
}
