/* Drop-in test: thread-specific data and destructor rounds, stack
 * attributes, pthread_exit from a nested call with cleanup handlers,
 * detach, self/equal and getattr_np.
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DROPIN_PROG "tsd"
#include "dropin.h"

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

/* Does the calling thread's stack, as pthread_getattr_np reports it, hold p? */
static int own_stack_holds(const void *p) {
  pthread_attr_t a;
  void *addr;
  size_t size;
  must("pthread_getattr_np", pthread_getattr_np(pthread_self(), &a));
  must("pthread_attr_getstack", pthread_attr_getstack(&a, &addr, &size));
  must("pthread_attr_destroy", pthread_attr_destroy(&a));
  uintptr_t lo = (uintptr_t)addr, q = (uintptr_t)p;
  return q >= lo && q < lo + size;
}

/* ---- 1. keys with destructors */
#define KEY_THREADS 16
#define KEYS 3
#define RESET_TWICE_CALLS 3 /* the destructor sets the value again in its first 2 calls */

static pthread_key_t keys[KEYS], unused_key, reset_twice_key, reset_always_key;
static atomic_int dtor_calls[KEYS];
static atomic_int unused_calls;

struct per_thread {
  int slot[KEYS]; /* the values are &slot[k] */
  /* Atomic: ThreadSanitizer does not order destructors before the join. */
  atomic_int reset_twice_calls, reset_always_calls;
};
static struct per_thread per[KEY_THREADS];

static void slot_dtor(void *v) {
  /* v is &per[t].slot[k]: find k from the slot's contents. */
  int *slot = v;
  int k = *slot;
  if (k < 0 || k >= KEYS) FAIL("a key destructor got a value with slot %d", k);
  if (pthread_getspecific(keys[k]) != NULL)
    FAIL("the key's value was not cleared before its destructor");
  atomic_fetch_add(&dtor_calls[k], 1);
}

static void unused_dtor(void *v) {
  (void)v;
  atomic_fetch_add(&unused_calls, 1);
}

static void reset_twice_dtor(void *v) {
  struct per_thread *p = v;
  if (atomic_fetch_add(&p->reset_twice_calls, 1) + 1 < RESET_TWICE_CALLS)
    must("pthread_setspecific in a destructor", pthread_setspecific(reset_twice_key, p));
}

static void reset_always_dtor(void *v) {
  struct per_thread *p = v;
  atomic_fetch_add(&p->reset_always_calls, 1);
  must("pthread_setspecific in a destructor", pthread_setspecific(reset_always_key, p));
}

static void *key_thread(void *arg) {
  struct per_thread *p = arg;
  for (int k = 0; k < KEYS; k++) {
    p->slot[k] = k;
    if (pthread_getspecific(keys[k]) != NULL) FAIL("a new thread's key value is not NULL");
    must("pthread_setspecific", pthread_setspecific(keys[k], &p->slot[k]));
  }
  /* Set and cleared again: no destructor call. */
  must("pthread_setspecific", pthread_setspecific(unused_key, p));
  must("pthread_setspecific NULL", pthread_setspecific(unused_key, NULL));
  must("pthread_setspecific", pthread_setspecific(reset_twice_key, p));
  must("pthread_setspecific", pthread_setspecific(reset_always_key, p));
  pause_ms(2); /* let the other threads run and set theirs */
  for (int k = 0; k < KEYS; k++)
    if (pthread_getspecific(keys[k]) != &p->slot[k])
      FAIL("a key's value changed while the thread slept");
  if (pthread_getspecific(reset_twice_key) != p)
    FAIL("a key's value changed while the thread slept");
  return NULL;
}

static void keys_test(void) {
  for (int k = 0; k < KEYS; k++)
    must("pthread_key_create", pthread_key_create(&keys[k], slot_dtor));
  must("pthread_key_create", pthread_key_create(&unused_key, unused_dtor));
  must("pthread_key_create", pthread_key_create(&reset_twice_key, reset_twice_dtor));
  must("pthread_key_create", pthread_key_create(&reset_always_key, reset_always_dtor));

  pthread_t t[KEY_THREADS];
  for (int i = 0; i < KEY_THREADS; i++)
    must("pthread_create", pthread_create(&t[i], NULL, key_thread, &per[i]));
  for (int i = 0; i < KEY_THREADS; i++) must("pthread_join", pthread_join(t[i], NULL));

  int total = 0;
  for (int k = 0; k < KEYS; k++) {
    int n = atomic_load(&dtor_calls[k]);
    if (n != KEY_THREADS) FAIL("key %d: %d destructor calls, expected %d", k, n, KEY_THREADS);
    total += n;
  }
  if (atomic_load(&unused_calls) != 0) FAIL("a destructor ran for a NULL value");
  int twice = atomic_load(&per[0].reset_twice_calls),
      always = atomic_load(&per[0].reset_always_calls);
  for (int i = 0; i < KEY_THREADS; i++) {
    if (atomic_load(&per[i].reset_twice_calls) != twice ||
        atomic_load(&per[i].reset_always_calls) != always)
      FAIL("threads 0 and %d saw different destructor rounds", i);
  }
  /* POSIX: destructors are called again while values remain, for at least
   * PTHREAD_DESTRUCTOR_ITERATIONS rounds. A destructor that sets its value
   * again twice is therefore called 3 times (3 <= 4 rounds). */
  if (twice != RESET_TWICE_CALLS)
    FAIL("re-set twice: %d destructor calls, expected %d", twice, RESET_TWICE_CALLS);
  if (always < PTHREAD_DESTRUCTOR_ITERATIONS)
    FAIL("re-set always: %d destructor calls, fewer than PTHREAD_DESTRUCTOR_ITERATIONS (%d)",
         always, PTHREAD_DESTRUCTOR_ITERATIONS);
  printf("keys: %d threads x %d keys: %d destructor calls; a key set back to NULL: %d calls\n",
         KEY_THREADS, KEYS, total, atomic_load(&unused_calls));
  printf("keys: a destructor that sets its value again twice: %d calls per thread\n", twice);
  printf(
      "keys: a destructor that always sets its value again: %d calls per thread "
      "(PTHREAD_DESTRUCTOR_ITERATIONS %d)\n",
      always, PTHREAD_DESTRUCTOR_ITERATIONS);

  for (int k = 0; k < KEYS; k++) must("pthread_key_delete", pthread_key_delete(keys[k]));
  must("pthread_key_delete", pthread_key_delete(unused_key));
  must("pthread_key_delete", pthread_key_delete(reset_twice_key));
  must("pthread_key_delete", pthread_key_delete(reset_always_key));
}

/* ---- 2. stack size: a 1 MiB local array on a 2 MiB stack */
#define BIG_STACK (2u << 20)
#define BIG_ARRAY (1u << 20)

static void *big_array_thread(void *arg) {
  (void)arg;
  volatile unsigned char buf[BIG_ARRAY];
  for (unsigned i = 0; i < BIG_ARRAY; i++) buf[i] = (unsigned char)(i * 31u + (i >> 8));
  uint32_t sum = 2166136261u; /* FNV-1a */
  for (unsigned i = 0; i < BIG_ARRAY; i++) sum = (sum ^ buf[i]) * 16777619u;
  if (!own_stack_holds((const void *)&buf[0]) ||
      !own_stack_holds((const void *)&buf[BIG_ARRAY - 1]))
    FAIL("the 1 MiB array lies outside the stack pthread_getattr_np reports");
  return (void *)(uintptr_t)sum;
}

static void stack_size_test(void) {
  pthread_attr_t a;
  size_t size = 0;
  must("pthread_attr_init", pthread_attr_init(&a));
  must("pthread_attr_setstacksize", pthread_attr_setstacksize(&a, BIG_STACK));
  must("pthread_attr_getstacksize", pthread_attr_getstacksize(&a, &size));
  if (size != BIG_STACK) FAIL("pthread_attr_getstacksize gave %zu", size);
  pthread_t t;
  void *ret;
  must("pthread_create (2 MiB stack)", pthread_create(&t, &a, big_array_thread, NULL));
  must("pthread_join", pthread_join(t, &ret));
  must("pthread_attr_destroy", pthread_attr_destroy(&a));
  printf("stack size %zu: a 1 MiB local array, FNV-1a %08lx\n", size,
         (unsigned long)(uintptr_t)ret);
}

/* ---- 3. stack address: a 256 KiB malloc'd, page-aligned buffer (4 MiB
 * under ThreadSanitizer, which needs more than 256 KiB of it) */
#if defined(__SANITIZE_THREAD__)
#define OWN_STACK (4u << 20)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OWN_STACK (4u << 20)
#endif
#endif
#ifndef OWN_STACK
#define OWN_STACK (256u << 10)
#endif

struct range {
  uintptr_t lo, hi;
  int in_buffer, in_getattr;
};

static void *own_stack_thread(void *arg) {
  struct range *r = arg;
  volatile int local = 7;
  uintptr_t p = (uintptr_t)&local;
  r->in_buffer = p >= r->lo && p < r->hi;
  r->in_getattr = own_stack_holds((const void *)&local);
  return (void *)(uintptr_t)local;
}

static void stack_address_test(void) {
  long page = sysconf(_SC_PAGESIZE);
  void *mem = NULL;
  must("posix_memalign", posix_memalign(&mem, (size_t)page, OWN_STACK));
  memset(mem, 0, OWN_STACK);
  pthread_attr_t a;
  must("pthread_attr_init", pthread_attr_init(&a));
  must("pthread_attr_setstack", pthread_attr_setstack(&a, mem, OWN_STACK));
  void *got_addr;
  size_t got_size;
  must("pthread_attr_getstack", pthread_attr_getstack(&a, &got_addr, &got_size));
  if (got_addr != mem || got_size != OWN_STACK)
    FAIL("pthread_attr_getstack does not give back the buffer");
  struct range r = {(uintptr_t)mem, (uintptr_t)mem + OWN_STACK, 0, 0};
  pthread_t t;
  void *ret;
  must("pthread_create (own stack)", pthread_create(&t, &a, own_stack_thread, &r));
  must("pthread_join", pthread_join(t, &ret));
  must("pthread_attr_destroy", pthread_attr_destroy(&a));
  if ((uintptr_t)ret != 7) FAIL("the own-stack thread returned %p", ret);
  if (!r.in_buffer) FAIL("a local of the thread with an own stack lies outside the buffer");
  if (!r.in_getattr)
    FAIL("a local of the thread with an own stack lies outside pthread_getattr_np's stack");
  free(mem);
  printf(
      "stack address: a %u KiB buffer; a local inside it: yes; inside pthread_getattr_np's stack: "
      "yes\n",
      OWN_STACK >> 10);
}

/* ---- 4. pthread_exit from a nested call: cleanup handlers, then key
 * destructors, and the value arrives at join */
#define EXIT_VALUE 4660
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static char order[64];
static pthread_key_t exit_key;

static void note(const char *what) {
  pthread_mutex_lock(&order_lock);
  if (order[0]) strncat(order, " ", sizeof order - strlen(order) - 1);
  strncat(order, what, sizeof order - strlen(order) - 1);
  pthread_mutex_unlock(&order_lock);
}

static void cleanup_handler(void *arg) { note(arg); }
static void exit_key_dtor(void *v) {
  (void)v;
  note("destructor");
}

static int nested_calls;
static volatile int exit_now = 1;
static __attribute__((noinline)) void nested(int depth) {
  nested_calls++;
  if (depth > 0) {
    nested(depth - 1);
  } else if (exit_now) {
    pause_ms(1); /* the thread may resume elsewhere before it exits */
    pthread_exit((void *)(uintptr_t)EXIT_VALUE);
  }
  note("returned"); /* never reached */
}

static void *exit_thread(void *arg) {
  (void)arg;
  must("pthread_setspecific", pthread_setspecific(exit_key, &nested_calls));
  pthread_cleanup_push(cleanup_handler, "outer");
  pthread_cleanup_push(cleanup_handler, "inner");
  nested(3);
  pthread_cleanup_pop(0);
  pthread_cleanup_pop(0);
  note("fell through");
  return NULL;
}

static void exit_test(void) {
  must("pthread_key_create", pthread_key_create(&exit_key, exit_key_dtor));
  pthread_t t;
  void *ret = NULL;
  must("pthread_create", pthread_create(&t, NULL, exit_thread, NULL));
  must("pthread_join", pthread_join(t, &ret));
  if ((uintptr_t)ret != EXIT_VALUE)
    FAIL("pthread_exit value %p arrived at join, expected %d", ret, EXIT_VALUE);
  if (strcmp(order, "inner outer destructor") != 0) FAIL("exit order \"%s\"", order);
  must("pthread_key_delete", pthread_key_delete(exit_key));
  printf("pthread_exit from depth %d: join got %lu; then ran: %s\n", nested_calls - 1,
         (unsigned long)(uintptr_t)ret, order);
}

/* ---- 5. detach of a running thread */
static pthread_mutex_t det_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t det_cond = PTHREAD_COND_INITIALIZER;
static int det_started, det_go, det_done;

static void *detached_thread(void *arg) {
  (void)arg;
  pthread_mutex_lock(&det_lock);
  det_started = 1;
  pthread_cond_broadcast(&det_cond);
  while (!det_go) pthread_cond_wait(&det_cond, &det_lock);
  det_done = 1;
  pthread_cond_broadcast(&det_cond);
  pthread_mutex_unlock(&det_lock);
  return NULL;
}

static void detach_test(void) {
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, detached_thread, NULL));
  pthread_mutex_lock(&det_lock);
  while (!det_started) pthread_cond_wait(&det_cond, &det_lock);
  pthread_mutex_unlock(&det_lock);
  int rc = pthread_detach(t); /* it is running: waiting for det_go */
  if (rc != 0) FAIL("pthread_detach of a running thread gave %s", code_name(rc));
  pthread_mutex_lock(&det_lock);
  det_go = 1;
  pthread_cond_broadcast(&det_cond);
  while (!det_done) pthread_cond_wait(&det_cond, &det_lock);
  pthread_mutex_unlock(&det_lock);
  printf("pthread_detach of a running thread: %s; it finished\n", code_name(rc));
}

/* ---- 6. pthread_self and pthread_equal */
#define SELF_THREADS 4
static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t id_cond = PTHREAD_COND_INITIALIZER;
static int id_go;
static pthread_t ids[SELF_THREADS], selves[SELF_THREADS], main_id;
static int matched[SELF_THREADS];

static void *self_thread(void *arg) {
  int i = (int)(intptr_t)arg;
  pthread_t me = pthread_self();
  pthread_mutex_lock(&id_lock); /* the creator holds it until ids[i] is written */
  matched[i] = pthread_equal(me, ids[i]) && !pthread_equal(me, main_id);
  selves[i] = me;
  while (!id_go) pthread_cond_wait(&id_cond, &id_lock);
  pthread_mutex_unlock(&id_lock);
  if (!pthread_equal(pthread_self(), me)) FAIL("pthread_self changed after a wait");
  return NULL;
}

static void self_test(void) {
  main_id = pthread_self();
  if (!pthread_equal(main_id, pthread_self())) FAIL("pthread_equal(self, self) is false");
  for (int i = 0; i < SELF_THREADS; i++) {
    pthread_mutex_lock(&id_lock);
    must("pthread_create", pthread_create(&ids[i], NULL, self_thread, (void *)(intptr_t)i));
    pthread_mutex_unlock(&id_lock);
  }
  /* All alive: the ids differ from each other and from main's. */
  for (int i = 0; i < SELF_THREADS; i++) {
    if (pthread_equal(ids[i], main_id)) FAIL("a thread's id equals main's");
    for (int j = 0; j < i; j++)
      if (pthread_equal(ids[i], ids[j])) FAIL("threads %d and %d have the same id", i, j);
  }
  pthread_mutex_lock(&id_lock);
  id_go = 1;
  pthread_cond_broadcast(&id_cond);
  pthread_mutex_unlock(&id_lock);
  int n = 0;
  for (int i = 0; i < SELF_THREADS; i++) {
    must("pthread_join", pthread_join(ids[i], NULL));
    if (!matched[i]) FAIL("thread %d: pthread_self differs from its creator's id", i);
    if (!pthread_equal(selves[i], ids[i]))
      FAIL("thread %d: pthread_self differs from its creator's id", i);
    n++;
  }
  printf("pthread_self: %d threads equal the ids their creator got\n", n);
}

/* ---- 7. pthread_getattr_np of self */
static void *getattr_thread(void *arg) {
  (void)arg;
  volatile int local = 1;
  return (void *)(intptr_t)own_stack_holds((const void *)&local);
}

static void getattr_test(void) {
  volatile int local = 1;
  int main_ok = own_stack_holds((const void *)&local);
  pthread_t t;
  void *ret;
  must("pthread_create", pthread_create(&t, NULL, getattr_thread, NULL));
  must("pthread_join", pthread_join(t, &ret));
  if (!main_ok) FAIL("pthread_getattr_np: main's stack does not hold a local");
  if (!ret) FAIL("pthread_getattr_np: a thread's stack does not hold a local");
  printf("pthread_getattr_np: the stack holds a local: main yes, a thread yes\n");
}

/* Every key a program may have: as many as glibc gives (PTHREAD_KEYS_MAX,
 * none kept back for the library's own), and with all of them taken the
 * calls that keep per-thread values of the library's own (cleanup
 * handlers, pthread_exit, sigaltstack) still work. */
static int all_cleanups;
static void all_cleanup(void *p) { all_cleanups += (int)(intptr_t)p; }

static void *all_keys_thread(void *arg) {
  (void)arg;
  stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16}, old;
  if (!ss.ss_sp) FAIL("malloc");
  must("sigaltstack", sigaltstack(&ss, NULL));
  must("sigaltstack", sigaltstack(NULL, &old));
  if (old.ss_sp != ss.ss_sp || old.ss_size != ss.ss_size) FAIL("sigaltstack: not the stack set");
  ss.ss_flags = SS_DISABLE;
  must("sigaltstack", sigaltstack(&ss, NULL));
  pthread_cleanup_push(all_cleanup, (void *)1);
  pthread_cleanup_push(all_cleanup, (void *)2);
  pthread_exit((void *)7);
  pthread_cleanup_pop(0);
  pthread_cleanup_pop(0);
  return NULL;
}

static void all_keys_test(void) {
  static pthread_key_t all[PTHREAD_KEYS_MAX + 1];
  int n = 0;
  while (n <= PTHREAD_KEYS_MAX && pthread_key_create(&all[n], NULL) == 0) n++;
  int rc = n <= PTHREAD_KEYS_MAX ? pthread_key_create(&all[n], NULL) : 0;
  printf("keys: %d created (PTHREAD_KEYS_MAX %d), then %s\n", n, PTHREAD_KEYS_MAX,
         rc == EAGAIN ? "EAGAIN" : "another error");
  if (n != PTHREAD_KEYS_MAX) FAIL("%d keys where PTHREAD_KEYS_MAX is %d", n, PTHREAD_KEYS_MAX);
  for (int k = 0; k < n; k++) must("pthread_setspecific", pthread_setspecific(all[k], &all[k]));
  pthread_t t;
  void *res;
  must("pthread_create", pthread_create(&t, NULL, all_keys_thread, NULL));
  must("pthread_join", pthread_join(t, &res));
  printf("keys: all taken: a thread's sigaltstack, cleanup handlers (%d) and pthread_exit (%ld)\n",
         all_cleanups, (long)(intptr_t)res);
  if (all_cleanups != 3 || res != (void *)7) FAIL("cleanup handlers or exit value lost");
  for (int k = 0; k < n; k++)
    if (pthread_getspecific(all[k]) != &all[k]) FAIL("key %d lost its value", k);
  for (int k = 0; k < n; k++) must("pthread_key_delete", pthread_key_delete(all[k]));
}

int main(void) {
  keys_test();
  all_keys_test();
  stack_size_test();
  stack_address_test();
  exit_test();
  detach_test();
  self_test();
  getattr_test();
  return 0;
}
