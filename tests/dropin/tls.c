/* Drop-in test: thread-local storage belongs to the thread, not to the
 * worker that runs it.
 *  - __thread variables and errno per thread, through parks: each of 64
 *    threads keeps the address of its errno and of a __thread variable
 *    from before a condition wait and many sched_yield calls, and finds
 *    its own values there after (it may resume on another worker);
 *  - modules loaded with dlopen after threads exist, one with
 *    general-dynamic TLS and one with initial-exec (static) TLS: threads
 *    that existed before the load see the initial values, each its own;
 *  - uselocale in a thread that ends does not leak into a later thread;
 *  - the resolver state (__res_state) and sched_getcpu are per thread and
 *    work.
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. Argument: the
 * directory of the two modules. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <locale.h>
#include <ctype.h>
#include <pthread.h>
#include <resolv.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DROPIN_PROG "tls"
#include "dropin.h"

#define T 64
static __thread long mine;
static __thread char scratch[256];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int arrived, phase;
static int (*gd_bump)(int), (*ie_bump)(int);

static void wait_phase(int p) {
  pthread_mutex_lock(&m);
  while (phase < p) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
}

static void *thread_fn(void *p) {
  long id = (long)p;
  int *e = &errno;
  long *me = &mine;
  *me = id * 7;
  snprintf(scratch, sizeof scratch, "thread %ld", id);
  *e = (int)(1000 + id);
  pthread_mutex_lock(&m);
  arrived++;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  wait_phase(1); /* main loads the modules meanwhile */
  for (int i = 0; i < 50; i++) sched_yield();
  long bad = 0;
  if (e != &errno || *e != 1000 + id) bad |= 1;
  if (me != &mine || mine != id * 7) bad |= 2;
  char want[32];
  snprintf(want, sizeof want, "thread %ld", id);
  if (strcmp(scratch, want)) bad |= 4;
  /* the modules' TLS, first use in this thread */
  if (gd_bump(1) != 43 || gd_bump((int)id) != 43 + id) bad |= 8;
  if (ie_bump(2) != 44 || ie_bump((int)id) != 44 + id) bad |= 16;
  if (sched_getcpu() < 0) bad |= 32;
  return (void *)bad;
}

static void *set_locale(void *p) {
  (void)p;
  locale_t l = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  if (!l) FAIL("newlocale");
  uselocale(l);
  return NULL; /* (the locale object stays: the thread only ends) */
}

static void *read_locale(void *p) {
  (void)p;
  return (void *)(uselocale((locale_t)0) == LC_GLOBAL_LOCALE ? 1L : 0L);
}

static void *res_addr(void *p) {
  (void)p;
  wait_phase(3);
  return __res_state();
}

static pthread_barrier_t ctype_bar;
static void *ctype_user(void *p) {
  (void)p;
  pthread_barrier_wait(&ctype_bar);
  int ok = isspace(' ') && !isspace('x') && toupper('a') == 'A' && tolower('Q') == 'q' &&
           isdigit('7') && isalpha('z');
  return ok ? (void *)1 : NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) FAIL("usage: tls MODULE_DIR");
  pthread_t t[T];
  for (long i = 0; i < T; i++)
    if (pthread_create(&t[i], NULL, thread_fn, (void *)i)) FAIL("pthread_create");
  pthread_mutex_lock(&m);
  while (arrived < T) pthread_cond_wait(&c, &m);
  pthread_mutex_unlock(&m);
  char path[4096];
  snprintf(path, sizeof path, "%s/libtlsmod_gd.so", argv[1]);
  void *gd = dlopen(path, RTLD_NOW);
  snprintf(path, sizeof path, "%s/libtlsmod_ie.so", argv[1]);
  void *ie = dlopen(path, RTLD_NOW);
  if (!gd || !ie) FAIL("dlopen: %s", dlerror());
  gd_bump = (int (*)(int))dlsym(gd, "tlsmod_bump");
  ie_bump = (int (*)(int))dlsym(ie, "tlsmod_bump");
  if (!gd_bump || !ie_bump) FAIL("dlsym");
  pthread_mutex_lock(&m);
  phase = 1;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  long bad = 0;
  for (int i = 0; i < T; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad |= (long)r;
  }
  printf("%d threads: errno, __thread, modules loaded later: %s (%ld)\n", T,
         bad ? "WRONG" : "each its own", bad);
  printf("main's module TLS: %d %d\n", gd_bump(0), ie_bump(0));

  pthread_create(&t[0], NULL, set_locale, NULL);
  pthread_join(t[0], NULL);
  void *r;
  pthread_create(&t[0], NULL, read_locale, NULL);
  pthread_join(t[0], &r);
  printf("a later thread's locale: %s\n", r ? "the global one" : "leaked");

  pthread_create(&t[0], NULL, res_addr, NULL);
  pthread_create(&t[1], NULL, res_addr, NULL);
  pthread_mutex_lock(&m);
  phase = 3;
  pthread_cond_broadcast(&c);
  pthread_mutex_unlock(&m);
  void *r0, *r1;
  pthread_join(t[0], &r0);
  pthread_join(t[1], &r1);
  printf("resolver states: %s\n",
         r0 && r1 && r0 != r1 && r0 != __res_state() ? "one per thread" : "shared");

  /* 128 threads at once (new TLS blocks among them) use <ctype.h>, whose
   * tables glibc points to per thread at its start */
  pthread_t many[128];
  pthread_barrier_init(&ctype_bar, NULL, 128);
  for (int i = 0; i < 128; i++) pthread_create(&many[i], NULL, ctype_user, NULL);
  long good = 0;
  for (int i = 0; i < 128; i++) {
    void *ok;
    pthread_join(many[i], &ok);
    good += ok != NULL;
  }
  printf("<ctype.h> in 128 new threads: %ld right\n", good);
  return 0;
}
