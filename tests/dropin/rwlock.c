/* Drop-in test: read-write locks. Readers and writers check exclusion on
 * every entry; then the try, timed and clock calls, on a lock with default
 * attributes and on one made by the writers-first static initialiser.
 *
 * A plain pthread program (docs/dropin.md, section 8): it runs natively and
 * under libito-pthread.so, and both.sh compares the outputs. The output is
 * deterministic; a failed check prints a line on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DROPIN_PROG "rwlock"
#include "dropin.h"

#define READERS 4
#define WRITERS 2
#define READS_EACH 50000L
#define WRITES_EACH 20000L

static void expect(const char *label, int rc, int want) {
  if (rc != want) FAIL("%s gave %s, expected %s", label, code_name(rc), code_name(want));
  printf("%s: %s\n", label, code_name(rc));
}

/* ---- exclusion under load */
struct shared {
  pthread_rwlock_t *lock;
  atomic_int readers_in;
  atomic_int writers_in;
  long a, b; /* writers keep a == b; readers check it */
  atomic_long reads, writes;
};

static void *reader(void *arg) {
  struct shared *s = arg;
  for (long i = 0; i < READS_EACH; i++) {
    must("pthread_rwlock_rdlock", pthread_rwlock_rdlock(s->lock));
    atomic_fetch_add(&s->readers_in, 1);
    if (atomic_load(&s->writers_in) != 0) FAIL("a reader entered while a writer was in");
    long a = s->a;
    if ((i & 63) == 0) sched_yield(); /* stay inside for a while */
    long b = s->b;
    if (a != b || a != s->a) FAIL("a reader saw a write in progress (%ld, %ld)", a, b);
    if (atomic_load(&s->writers_in) != 0) FAIL("a writer entered while a reader was in");
    atomic_fetch_sub(&s->readers_in, 1);
    atomic_fetch_add(&s->reads, 1);
    must("pthread_rwlock_unlock (reader)", pthread_rwlock_unlock(s->lock));
  }
  return NULL;
}

static void *writer(void *arg) {
  struct shared *s = arg;
  for (long i = 0; i < WRITES_EACH; i++) {
    must("pthread_rwlock_wrlock", pthread_rwlock_wrlock(s->lock));
    if (atomic_fetch_add(&s->writers_in, 1) != 0) FAIL("two writers were in at once");
    if (atomic_load(&s->readers_in) != 0) FAIL("a writer entered while a reader was in");
    s->a++;
    if ((i & 63) == 0) sched_yield();
    s->b++;
    if (atomic_load(&s->readers_in) != 0) FAIL("a reader entered while a writer was in");
    atomic_fetch_sub(&s->writers_in, 1);
    atomic_fetch_add(&s->writes, 1);
    must("pthread_rwlock_unlock (writer)", pthread_rwlock_unlock(s->lock));
  }
  return NULL;
}

static void exclusion(const char *name, pthread_rwlock_t *lock) {
  struct shared s = {.lock = lock};
  pthread_t t[READERS + WRITERS];
  for (int i = 0; i < READERS + WRITERS; i++)
    must("pthread_create", pthread_create(&t[i], NULL, i < READERS ? reader : writer, &s));
  for (int i = 0; i < READERS + WRITERS; i++) must("pthread_join", pthread_join(t[i], NULL));
  long reads = atomic_load(&s.reads), writes = atomic_load(&s.writes);
  if (reads != READERS * READS_EACH) FAIL("%s: %ld reads", name, reads);
  if (writes != WRITERS * WRITES_EACH) FAIL("%s: %ld writes", name, writes);
  if (s.a != writes || s.b != writes)
    FAIL("%s: value %ld/%ld after %ld writes", name, s.a, s.b, writes);
  printf("%s: %d readers %d writers: reads %ld writes %ld value %ld\n", name, READERS, WRITERS,
         reads, writes, s.a);
}

/* ---- a holder thread keeps the lock (read or write) until released */
static pthread_mutex_t hs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hs_cond = PTHREAD_COND_INITIALIZER;
static int hs_held, hs_release;

struct holder {
  pthread_rwlock_t *lock;
  int write;
  pthread_t thread;
};

static void *holder_main(void *arg) {
  struct holder *h = arg;
  if (h->write)
    must("holder: pthread_rwlock_wrlock", pthread_rwlock_wrlock(h->lock));
  else
    must("holder: pthread_rwlock_rdlock", pthread_rwlock_rdlock(h->lock));
  pthread_mutex_lock(&hs_lock);
  hs_held = 1;
  pthread_cond_broadcast(&hs_cond);
  while (!hs_release) pthread_cond_wait(&hs_cond, &hs_lock);
  pthread_mutex_unlock(&hs_lock);
  must("holder: pthread_rwlock_unlock", pthread_rwlock_unlock(h->lock));
  return NULL;
}

static void hold(struct holder *h, pthread_rwlock_t *lock, int write) {
  h->lock = lock;
  h->write = write;
  hs_held = hs_release = 0;
  must("pthread_create holder", pthread_create(&h->thread, NULL, holder_main, h));
  pthread_mutex_lock(&hs_lock);
  while (!hs_held) pthread_cond_wait(&hs_cond, &hs_lock);
  pthread_mutex_unlock(&hs_lock);
}

static void release(struct holder *h) {
  pthread_mutex_lock(&hs_lock);
  hs_release = 1;
  pthread_cond_broadcast(&hs_cond);
  pthread_mutex_unlock(&hs_lock);
  must("pthread_join holder", pthread_join(h->thread, NULL));
}

static void check_not_early(const char *what, int rc, clockid_t clock,
                            const struct timespec *deadline) {
  struct timespec now;
  clock_gettime(clock, &now);
  if (rc == ETIMEDOUT && ts_before(&now, deadline))
    FAIL("%s returned ETIMEDOUT before its deadline", what);
}

enum timed { TIMED_RD, TIMED_WR, CLOCK_RD, CLOCK_WR };

static int timed(pthread_rwlock_t *l, enum timed kind, clockid_t clock) {
  struct timespec d;
  int rc;
  switch (kind) {
    case TIMED_RD:
      deadline_in(CLOCK_REALTIME, 50, &d);
      rc = pthread_rwlock_timedrdlock(l, &d);
      check_not_early("pthread_rwlock_timedrdlock", rc, CLOCK_REALTIME, &d);
      break;
    case TIMED_WR:
      deadline_in(CLOCK_REALTIME, 50, &d);
      rc = pthread_rwlock_timedwrlock(l, &d);
      check_not_early("pthread_rwlock_timedwrlock", rc, CLOCK_REALTIME, &d);
      break;
    case CLOCK_RD:
      deadline_in(clock, 50, &d);
      rc = pthread_rwlock_clockrdlock(l, clock, &d);
      check_not_early("pthread_rwlock_clockrdlock", rc, clock, &d);
      break;
    default:
      deadline_in(clock, 50, &d);
      rc = pthread_rwlock_clockwrlock(l, clock, &d);
      check_not_early("pthread_rwlock_clockwrlock", rc, clock, &d);
      break;
  }
  if (rc == 0) pthread_rwlock_unlock(l);
  return rc;
}

/* A writer that blocks on a lock main holds for reading. */
static void *blocked_writer(void *arg) {
  pthread_rwlock_t *l = arg;
  must("writer: pthread_rwlock_wrlock", pthread_rwlock_wrlock(l));
  must("writer: pthread_rwlock_unlock", pthread_rwlock_unlock(l));
  return NULL;
}

static void calls(const char *name, pthread_rwlock_t *l, int prefers_readers) {
  char label[160];
  struct holder h;

  hold(&h, l, 0);
#define E(what, call, want)                              \
  do {                                                   \
    snprintf(label, sizeof label, "%s: %s", name, what); \
    expect(label, call, want);                           \
  } while (0)
  E("read-held by another thread: trywrlock", pthread_rwlock_trywrlock(l), EBUSY);
  E("read-held by another thread: timedwrlock (CLOCK_REALTIME)", timed(l, TIMED_WR, 0), ETIMEDOUT);
  E("read-held by another thread: clockwrlock (CLOCK_MONOTONIC)",
    timed(l, CLOCK_WR, CLOCK_MONOTONIC), ETIMEDOUT);
  E("read-held by another thread: tryrdlock", pthread_rwlock_tryrdlock(l), 0);
  E("read-held by another thread: unlock", pthread_rwlock_unlock(l), 0);
  E("read-held by another thread: timedrdlock (CLOCK_REALTIME)", timed(l, TIMED_RD, 0), 0);
  release(&h);

  hold(&h, l, 1);
  E("write-held by another thread: tryrdlock", pthread_rwlock_tryrdlock(l), EBUSY);
  E("write-held by another thread: clockrdlock (CLOCK_MONOTONIC)",
    timed(l, CLOCK_RD, CLOCK_MONOTONIC), ETIMEDOUT);
  E("write-held by another thread: clockrdlock (CLOCK_REALTIME)",
    timed(l, CLOCK_RD, CLOCK_REALTIME), ETIMEDOUT);
  E("write-held by another thread: timedrdlock (CLOCK_REALTIME)", timed(l, TIMED_RD, 0), ETIMEDOUT);
  E("write-held by another thread: trywrlock", pthread_rwlock_trywrlock(l), EBUSY);
  E("write-held by another thread: timedwrlock (CLOCK_REALTIME)", timed(l, TIMED_WR, 0), ETIMEDOUT);
  release(&h);

  E("free: trywrlock", pthread_rwlock_trywrlock(l), 0);
  E("write-held by self: wrlock", pthread_rwlock_wrlock(l), EDEADLK);
  E("write-held by self: unlock", pthread_rwlock_unlock(l), 0);

  if (prefers_readers) {
    /* Readers first: a reader may lock again while a writer waits. The writer
     * may or may not be waiting yet; the second read lock succeeds either way. */
    pthread_t w;
    E("prefers readers: rdlock", pthread_rwlock_rdlock(l), 0);
    must("pthread_create writer", pthread_create(&w, NULL, blocked_writer, l));
    struct timespec pause = {0, 20 * 1000000L};
    nanosleep(&pause, NULL);
    E("prefers readers: rdlock again with a writer waiting", pthread_rwlock_rdlock(l), 0);
    E("prefers readers: unlock", pthread_rwlock_unlock(l), 0);
    E("prefers readers: unlock again", pthread_rwlock_unlock(l), 0);
    must("pthread_join writer", pthread_join(w, NULL));
  } else {
    /* Writers first: once a writer waits behind a reader, a new reader does
     * not get in. Polls tryrdlock (1 ms apart) until the writer waits. */
    pthread_t w;
    hold(&h, l, 0);
    must("pthread_create writer", pthread_create(&w, NULL, blocked_writer, l));
    int rc = 0;
    for (int i = 0; i < 10000; i++) {
      rc = pthread_rwlock_tryrdlock(l);
      if (rc != 0) break;
      pthread_rwlock_unlock(l);
      struct timespec pause = {0, 1000000L};
      nanosleep(&pause, NULL);
    }
    E("prefers writers: tryrdlock with a writer waiting behind a reader", rc, EBUSY);
    E("prefers writers: timedrdlock (CLOCK_REALTIME) with a writer waiting", timed(l, TIMED_RD, 0),
      ETIMEDOUT);
    release(&h);
    must("pthread_join writer", pthread_join(w, NULL));
    E("prefers writers: tryrdlock after the writer left", pthread_rwlock_tryrdlock(l), 0);
    E("prefers writers: unlock", pthread_rwlock_unlock(l), 0);
  }
#undef E
}

static pthread_rwlock_t writers_first = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

int main(void) {
  pthread_rwlock_t def;
  pthread_rwlockattr_t a;
  must("pthread_rwlockattr_init", pthread_rwlockattr_init(&a));
  must("pthread_rwlock_init", pthread_rwlock_init(&def, &a));
  must("pthread_rwlockattr_destroy", pthread_rwlockattr_destroy(&a));

  exclusion("default", &def);
  exclusion("writers-first initialiser", &writers_first);
  calls("default", &def, 1);
  calls("writers-first initialiser", &writers_first, 0);
  must("pthread_rwlock_destroy", pthread_rwlock_destroy(&def));
  return 0;
}
