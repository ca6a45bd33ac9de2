/* thread_memory [N]: resident memory per pthread and under churn. N
 * threads (default 20,000; 64 KiB stacks) wait on a condition variable:
 * the growth of VmRSS divided by N. Then 25 rounds of creating and joining
 * N threads that touch a __thread array: VmRSS after the first round,
 * after 5 more and after 20 more (bounded memory under churn). A plain
 * pthread program: run it under LD_PRELOAD=libito-pthread.so with
 * ITO_TLS=worker and ITO_TLS=thread (docs/tls.md, "Costs"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
  if (f) fclose(f);
  return v;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int go;
static __thread char scratch[64];

static void *waiter(void *p) {
  scratch[0] = (char)(long)p;
  pthread_mutex_lock(&m);
  while (!go) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  pthread_t *t = malloc((size_t)n * sizeof *t);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 65536);
  if (!t || pthread_create(&t[0], &a, waiter, NULL)) return 1; /* starts the runtime */
  long r0 = rss_kib();
  for (int i = 1; i < n; i++)
    if (pthread_create(&t[i], &a, waiter, (void *)(long)i)) {
      printf("pthread_create failed at %d\n", i);
      return 1;
    }
  long r1 = rss_kib();
  pthread_mutex_lock(&m);
  go = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("%d threads waiting: %.0f bytes of resident memory each\n", n - 1,
         (double)(r1 - r0) * 1024.0 / (n - 1));
  long c[3];
  int rounds[3] = {1, 5, 20};
  for (int k = 0; k < 3; k++) {
    for (int r = 0; r < rounds[k]; r++) {
      for (int i = 0; i < n; i++) pthread_create(&t[i], &a, waiter, (void *)(long)i);
      for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    }
    c[k] = rss_kib();
  }
  printf("churn: %ld KiB after 1 round of %d threads, %ld after 5 more, %ld after 20 more\n", c[0],
         n, c[1], c[2]);
  return 0;
}
