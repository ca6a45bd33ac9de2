/* A plain pthread program (no ito header) for the install check. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long sum;

static void *add(void *p) {
  pthread_mutex_lock(&m);
  sum += (long)p;
  pthread_mutex_unlock(&m);
  return NULL;
}

int main(void) {
  pthread_t t[1000];
  for (long i = 0; i < 1000; i++)
    if (pthread_create(&t[i], NULL, add, (void *)i)) return 1;
  for (int i = 0; i < 1000; i++) pthread_join(t[i], NULL);
  printf("pthread prog: sum=%ld\n", sum);
  return 0;
}
