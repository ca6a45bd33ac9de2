/* Unnamed semaphores between threads: a bounded buffer guarded by two
 * counting semaphores and a mutex, 4 producers and 4 consumers, 200,000
 * items; sem_trywait on an empty semaphore (EAGAIN), sem_timedwait on an
 * empty one (ETIMEDOUT, not early), sem_getvalue. Under libito-pthread.so
 * with one worker, a sem_wait that blocked the worker would hang. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "semaphores"
#include "dropin.h"

#define SLOTS 16
#define ITEMS 200000
#define P 4
static long buf[SLOTS];
static int head, tail;
static sem_t empty, full;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *producer(void *p) {
  long id = (long)p;
  for (long i = id; i < ITEMS; i += P) {
    if (sem_wait(&empty)) FAIL("sem_wait empty");
    pthread_mutex_lock(&m);
    buf[tail] = i;
    tail = (tail + 1) % SLOTS;
    pthread_mutex_unlock(&m);
    sem_post(&full);
  }
  return NULL;
}

static void *consumer(void *p) {
  (void)p;
  long sum = 0;
  for (int i = 0; i < ITEMS / P; i++) {
    if (sem_wait(&full)) FAIL("sem_wait full");
    pthread_mutex_lock(&m);
    sum += buf[head];
    head = (head + 1) % SLOTS;
    pthread_mutex_unlock(&m);
    sem_post(&empty);
  }
  pthread_mutex_lock(&m);
  total += sum;
  pthread_mutex_unlock(&m);
  return NULL;
}

int main(void) {
  sem_init(&empty, 0, SLOTS);
  sem_init(&full, 0, 0);
  pthread_t t[2 * P];
  for (long i = 0; i < P; i++) {
    pthread_create(&t[i], NULL, producer, (void *)i);
    pthread_create(&t[P + i], NULL, consumer, NULL);
  }
  for (int i = 0; i < 2 * P; i++) pthread_join(t[i], NULL);
  int v = -1;
  sem_getvalue(&empty, &v);
  printf("items %d sum %ld; empty slots at the end %d\n", ITEMS, total, v);
  sem_t s;
  sem_init(&s, 0, 0);
  int rc = sem_trywait(&s);
  printf("sem_trywait on 0: %s\n", rc == -1 && errno == EAGAIN ? "EAGAIN" : "unexpected");
  struct timespec d, b;
  deadline_in(CLOCK_REALTIME, 30, &d);
  rc = sem_timedwait(&s, &d);
  clock_gettime(CLOCK_REALTIME, &b);
  if (ts_before(&b, &d)) FAIL("sem_timedwait returned early");
  printf("sem_timedwait on 0: %s\n", rc == -1 && errno == ETIMEDOUT ? "ETIMEDOUT" : "unexpected");
  sem_post(&s);
  sem_post(&s);
  sem_getvalue(&s, &v);
  printf("two posts: value %d\n", v);
  sem_destroy(&s);
  sem_destroy(&empty);
  sem_destroy(&full);
  return 0;
}
