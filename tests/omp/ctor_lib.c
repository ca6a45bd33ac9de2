/* A library whose constructor uses OpenMP (ctor_probe.h): linked into
 * ctor.c (CTOR_WHO "linked library") and loaded by it with dlopen
 * (CTOR_WHO "dlopen'ed library"). The linked one also runs a region from a
 * thread of its own, joined before the constructor returns, and has a
 * large static TLS block. */
#include <pthread.h>

#include "ctor_probe.h"

#ifdef CTOR_THREAD
/* Static TLS larger than a stack the runtime asks for its own OS threads
 * (OpenBLAS has 60 KiB): glibc refuses a stack that cannot hold it. */
__thread char ctor_big_tls[320 << 10];

static void *thread_main(void *arg) {
  (void)arg;
  int n = 0, tls_ok = 0;
#pragma omp parallel num_threads(2) reduction(+ : n, tls_ok)
  {
    n++;
    volatile char *mine = &ctor_big_tls[sizeof ctor_big_tls - 1];
    *mine = (char)(omp_get_thread_num() + 1);
    tls_ok += *mine == omp_get_thread_num() + 1;
  }
  printf("linked library's thread: team %d, own thread-local copies %d\n", n, tls_ok);
  fflush(stdout);
  return NULL;
}
#endif

__attribute__((constructor)) static void lib_ctor(void) {
  ctor_probe(CTOR_WHO, CTOR_THREADS);
#ifdef CTOR_THREAD
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, NULL) == 0) pthread_join(t, NULL);
#endif
}

int ctor_lib_answer(void) {
  int n = 0;
#pragma omp parallel reduction(+ : n)
  n++;
  return n;
}
