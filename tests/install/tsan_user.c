/* A user's program built with -fsanitize=thread against ito's
 * ThreadSanitizer variant (tests/install/tsan_check.sh): lightweight
 * threads hand items over through an ito mutex and condition variable,
 * and a task group sums in parallel. Correct as written: the sanitizer
 * must find nothing. With -DRACE two more threads bump a counter with no
 * lock at all: the sanitizer must report that race, in this file. */
#include <ito/ito.h>

#include <stdio.h>
#include <stdlib.h>

#define ITEMS 2000
#define THREADS 4

static ito_mutex_t mu;
static ito_cond_t nonempty;
static int queue[64], head, tail, count;
static long consumed_sum;
#ifdef RACE
static long unlocked_count;
static int started;
/* Both run at once on the two workers: each waits (relaxed: no ordering
 * for the sanitizer to see) until the other has started, for at most about
 * a second, then bumps the counter. */
static void *bump(void *p) {
  __atomic_add_fetch(&started, 1, __ATOMIC_RELAXED);
  for (long spins = 0; __atomic_load_n(&started, __ATOMIC_RELAXED) < 2 && spins < 100000000;
       spins++) {
  }
  for (int i = 0; i < 100000; i++) unlocked_count++;
  return p;
}
#endif

static void *producer(void *p) {
  long base = (long)p;
  for (int i = 0; i < ITEMS; i++) {
    ito_mutex_lock(&mu);
    while (count == 64) {
      ito_mutex_unlock(&mu);
      ito_yield();
      ito_mutex_lock(&mu);
    }
    queue[tail] = (int)(base + i);
    tail = (tail + 1) % 64;
    count++;
    ito_cond_signal(&nonempty);
    ito_mutex_unlock(&mu);
  }
  return NULL;
}

static void *consumer(void *p) {
  (void)p;
  for (int i = 0; i < ITEMS; i++) {
    ito_mutex_lock(&mu);
    while (count == 0) ito_cond_wait(&nonempty, &mu);
    int v = queue[head];
    head = (head + 1) % 64;
    count--;
    consumed_sum += v;
    ito_mutex_unlock(&mu);
  }
  return NULL;
}

struct part {
  const long *a;
  long n, sum;
};
static void sum_part(void *p) {
  struct part *x = *(struct part **)p;
  for (long i = 0; i < x->n; i++) x->sum += x->a[i];
}

int main(void) {
  if (ito_init() != 0) return 1;
  ito_mutex_init(&mu);
  ito_cond_init(&nonempty);
  ito_thread_t t[2 * THREADS];
  for (long i = 0; i < THREADS; i++) ito_create(producer, (void *)(i * ITEMS), &t[i]);
  for (int i = 0; i < THREADS; i++) ito_create(consumer, NULL, &t[THREADS + i]);
  for (int i = 0; i < 2 * THREADS; i++) ito_join(t[i], NULL);
#ifdef RACE
  ito_thread_t r[2];
  for (int i = 0; i < 2; i++) ito_create(bump, NULL, &r[i]);
  for (int i = 0; i < 2; i++) ito_join(r[i], NULL);
#endif
  long want = 0;
  for (long i = 0; i < THREADS * ITEMS; i++) want += i;

  long *a = malloc(sizeof(long) * 100000);
  for (long i = 0; i < 100000; i++) a[i] = i;
  struct part parts[4];
  ito_tg_t tg;
  ito_tg_init(&tg);
  for (int k = 0; k < 4; k++) {
    parts[k] = (struct part){a + k * 25000, 25000, 0};
    struct part *pp = &parts[k];
    ito_tg_fork(&tg, sum_part, &pp, sizeof pp);
  }
  ito_tg_join(&tg);
  long total = 0;
  for (int k = 0; k < 4; k++) total += parts[k].sum;
  free(a);
  printf("tsan_user: handed over %ld (want %ld), summed %ld\n", consumed_sum, want, total);
  ito_finalize();
  return consumed_sum == want && total == 4999950000L ? 0 : 1;
}
