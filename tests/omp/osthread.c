/* The program's threads keep their OS threads across OpenMP, as under
 * libgomp, where the thread that encounters a construct is the OS thread
 * that runs it to the end. CPython with OpenBLAS's OpenMP build does what
 * this program does: the main thread and a thread of its own hand a lock
 * to each other with sem_wait and sem_post (the interpreter's locks), and
 * each runs parallel regions (matrix products) while it holds it; at exit
 * the interpreter tells its main thread by pthread_self(), and waited for
 * ever on its own lock when that had changed. Each thread here checks
 * pthread_self() and gettid() after every region, task wait, lock, critical
 * section and sleep it encounters outside a region, and the program prints
 * how many checks failed (0 under libgomp). */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ROUNDS 300

static sem_t to_main, to_thread;
static omp_lock_t lock;

struct who {
  pthread_t self;
  long tid;
  int changes;
  long sum;
};

static void check(struct who *w) {
  if (!pthread_equal(pthread_self(), w->self) || syscall(SYS_gettid) != w->tid) w->changes++;
}

/* What one thread does while it holds the handed-over lock. */
static void work(struct who *w, int k) {
  long s = 0;
#pragma omp parallel reduction(+ : s)
  {
#pragma omp for
    for (int i = 0; i < 1000; i++) s += i % (k + 1);
#pragma omp single
    for (int t = 0; t < 8; t++) {
#pragma omp task
      {
#pragma omp atomic
        s += t;
      }
    }
  }
  check(w);
  /* a task of the thread itself, outside any region */
  long t = 0;
#pragma omp task shared(t)
  t = k;
#pragma omp taskwait
  check(w);
  omp_set_lock(&lock);
  omp_unset_lock(&lock);
#pragma omp critical
  t++;
  check(w);
  if (k % 16 == 0) {
    usleep(100);
    check(w);
  }
  w->sum += s + t;
}

static struct who thread_who;

static void *thread_main(void *arg) {
  (void)arg;
  struct who *w = &thread_who;
  w->self = pthread_self();
  w->tid = syscall(SYS_gettid);
  for (int k = 0; k < ROUNDS; k++) {
    sem_wait(&to_thread);
    check(w);
    work(w, k);
    sem_post(&to_main);
  }
  return NULL;
}

int main(void) {
  struct who m = {pthread_self(), syscall(SYS_gettid), 0, 0};
  sem_init(&to_main, 0, 0);
  sem_init(&to_thread, 0, 0);
  omp_init_lock(&lock);
  pthread_t th;
  if (pthread_create(&th, NULL, thread_main, NULL)) {
    fprintf(stderr, "osthread: pthread_create failed\n");
    return 1;
  }
  for (int k = 0; k < ROUNDS; k++) {
    work(&m, k);
    sem_post(&to_thread);
    sem_wait(&to_main);
    check(&m);
  }
  pthread_join(th, NULL);
  check(&m);
  omp_destroy_lock(&lock);
  printf("main thread: %d rounds, sum %ld, OS thread changed %d times\n", ROUNDS, m.sum, m.changes);
  printf("other thread: %d rounds, sum %ld, OS thread changed %d times\n", ROUNDS, thread_who.sum,
         thread_who.changes);
  return 0;
}
