/* percall [N]: the thread-per-call pattern. fib(N) (default 20) where every
 * call with n >= 2 creates a pthread for fib(n-1), computes fib(n-2)
 * itself, takes the child's value through a mutex and a condition variable,
 * and joins the child: fib(N+1) - 1 threads in all. A plain pthread
 * program: run it natively and under LD_PRELOAD=libito-pthread.so (the
 * ratio of the two times is the figure of docs/dropin.md, section 11, "Thread per
 * call"). Prints the value and the seconds taken. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct job {
  int n, done;
  long result;
  pthread_mutex_t m;
  pthread_cond_t c;
};

static long fib(int n);

static void *fib_thread(void *p) {
  struct job *j = p;
  long r = fib(j->n);
  pthread_mutex_lock(&j->m);
  j->result = r;
  j->done = 1;
  pthread_cond_signal(&j->c);
  pthread_mutex_unlock(&j->m);
  return NULL;
}

static long fib(int n) {
  if (n < 2) return n;
  struct job j = {n - 1, 0, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
  pthread_t t;
  if (pthread_create(&t, NULL, fib_thread, &j)) {
    perror("pthread_create");
    exit(1);
  }
  long y = fib(n - 2);
  pthread_mutex_lock(&j.m);
  while (!j.done) pthread_cond_wait(&j.c, &j.m);
  pthread_mutex_unlock(&j.m);
  pthread_join(t, NULL);
  return j.result + y;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  long r = fib(n);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("fib(%d) = %ld, %.4f s\n", n, r,
         (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
  return 0;
}
