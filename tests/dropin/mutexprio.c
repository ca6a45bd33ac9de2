/* Drop-in test: the priority-ceiling and robustness calls on mutexes that
 * are neither, with glibc's answers: pthread_mutex_getprioceiling and
 * pthread_mutex_setprioceiling give EINVAL for a mutex whose protocol is
 * PTHREAD_PRIO_NONE or PTHREAD_PRIO_INHERIT, pthread_mutex_consistent
 * EINVAL for a mutex that is not robust, for every kind and for a
 * process-shared mutex; the attribute calls (glibc's own) answer as
 * glibc. Robust and priority-ceiling mutexes themselves are refused with
 * ENOTSUP under libito-pthread.so (docs/dropin.md section 6, refused.c).
 *
 * A plain pthread program (docs/dropin.md, section 8), run natively and
 * under libito-pthread.so; both.sh compares the outputs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#define DROPIN_PROG "mutexprio"
#include "dropin.h"

static void mutex_calls(const char *label, const pthread_mutexattr_t *ma) {
  pthread_mutex_t m;
  must("pthread_mutex_init", pthread_mutex_init(&m, ma));
  int c = -1, old = -1;
  int g = pthread_mutex_getprioceiling(&m, &c);
  int s = pthread_mutex_setprioceiling(&m, 10, &old);
  int s2 = pthread_mutex_setprioceiling(&m, 1000, &old);
  int k = pthread_mutex_consistent(&m);
  printf("%s: getprioceiling %s (%d), setprioceiling 10 %s (%d), 1000 %s, consistent %s\n", label,
         code_name(g), c, code_name(s), old, code_name(s2), code_name(k));
  /* still an ordinary mutex */
  must("pthread_mutex_lock", pthread_mutex_lock(&m));
  must("pthread_mutex_unlock", pthread_mutex_unlock(&m));
  must("pthread_mutex_destroy", pthread_mutex_destroy(&m));
}

static void *in_thread(void *p) {
  mutex_calls("in a thread", p);
  return NULL;
}

int main(void) {
  pthread_mutexattr_t ma;
  must("pthread_mutexattr_init", pthread_mutexattr_init(&ma));
  int v = -1;
  int rc = pthread_mutexattr_getprioceiling(&ma, &v);
  printf("attr: getprioceiling %s\n", code_name(rc));
  rc = pthread_mutexattr_setprioceiling(&ma, 10);
  v = -1;
  int rc2 = pthread_mutexattr_getprioceiling(&ma, &v);
  printf("attr: setprioceiling 10 %s, then %s %d\n", code_name(rc), code_name(rc2), v);
  printf("attr: setprioceiling 1000 %s\n", code_name(pthread_mutexattr_setprioceiling(&ma, 1000)));
  v = -1;
  rc = pthread_mutexattr_getprotocol(&ma, &v);
  printf("attr: getprotocol %s %s\n", code_name(rc), v == PTHREAD_PRIO_NONE ? "NONE" : "other");
  printf("attr: setprotocol 9 %s\n", code_name(pthread_mutexattr_setprotocol(&ma, 9)));
  v = -1;
  rc = pthread_mutexattr_getrobust(&ma, &v);
  printf("attr: getrobust %s %s\n", code_name(rc),
         v == PTHREAD_MUTEX_STALLED ? "STALLED" : "other");
  printf("attr: setrobust 7 %s\n", code_name(pthread_mutexattr_setrobust(&ma, 7)));

  mutex_calls("default", NULL);
  static const int kinds[] = {PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
                              PTHREAD_MUTEX_ERRORCHECK};
  static const char *names[] = {"normal", "recursive", "errorcheck"};
  for (int i = 0; i < 3; i++) {
    must("settype", pthread_mutexattr_settype(&ma, kinds[i]));
    mutex_calls(names[i], &ma);
  }
  must("settype", pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_NORMAL));
  must("setprotocol", pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT));
  mutex_calls("PRIO_INHERIT", &ma);
  must("setprotocol", pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_NONE));
  must("setpshared", pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED));
  mutex_calls("process-shared", &ma);
  /* with threads about */
  pthread_t t;
  must("pthread_create", pthread_create(&t, NULL, in_thread, NULL));
  must("pthread_join", pthread_join(t, NULL));
  pthread_mutexattr_destroy(&ma);
  return 0;
}
