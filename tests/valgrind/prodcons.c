/* Producers and consumers on a bounded buffer (ito_mutex, two ito_conds):
 * threads park and resume on other workers' stacks all the time, the case
 * memcheck reported about 800,000 errors on before ito registered its
 * stacks with Valgrind (tests/valgrind/memcheck.sh). Checks the sum. */
#define _GNU_SOURCE
#include <ito/ito.h>
#include <stdio.h>
#include <stdlib.h>

#define N 64
#define ITEMS 20000
#define PAIRS 4

static ito_mutex_t m = ITO_MUTEX_INITIALIZER;
static ito_cond_t not_full = ITO_COND_INITIALIZER, not_empty = ITO_COND_INITIALIZER;
static int buf[N], head, tail, count;

static void *producer(void *a) {
  for (int i = 0; i < ITEMS; i++) {
    ito_mutex_lock(&m);
    while (count == N) ito_cond_wait(&not_full, &m);
    buf[tail] = i;
    tail = (tail + 1) % N;
    count++;
    ito_cond_signal(&not_empty);
    ito_mutex_unlock(&m);
  }
  return a;
}

static void *consumer(void *a) {
  long s = 0;
  (void)a;
  for (int i = 0; i < ITEMS; i++) {
    ito_mutex_lock(&m);
    while (count == 0) ito_cond_wait(&not_empty, &m);
    s += buf[head];
    head = (head + 1) % N;
    count--;
    ito_cond_signal(&not_full);
    ito_mutex_unlock(&m);
  }
  return (void *)s;
}

int main(void) {
  ito_thread_t p[PAIRS], c[PAIRS];
  for (int i = 0; i < PAIRS; i++)
    if (ito_create(producer, NULL, &p[i]) || ito_create(consumer, NULL, &c[i])) return 1;
  long total = 0;
  for (int i = 0; i < PAIRS; i++) {
    void *r;
    if (ito_join(p[i], NULL) || ito_join(c[i], &r)) return 1;
    total += (long)r;
  }
  long want = (long)PAIRS * ITEMS * (ITEMS - 1) / 2;
  printf("prodcons: sum %ld\n", total);
  if (total != want) {
    fprintf(stderr, "prodcons: sum %ld, expected %ld\n", total, want);
    return 1;
  }
  return 0;
}
