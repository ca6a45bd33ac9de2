/* The libc calls of the runtime that a drop-in library interposes, as one
 * table (src/core/os.c). A standalone header: src/dropin/ito_dropin.h hands
 * the table over it, so it includes nothing of the runtime. */
#ifndef ITO_CORE_OS_TABLE_H
#define ITO_CORE_OS_TABLE_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

struct ito_os {
  int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  int (*pthread_join)(pthread_t, void **);
  pthread_t (*pthread_self)(void);
  int (*pthread_getattr_np)(pthread_t, pthread_attr_t *);
  int (*pthread_setaffinity_np)(pthread_t, size_t, const cpu_set_t *);
  int (*sched_yield)(void);
  int (*nanosleep)(const struct timespec *, struct timespec *);
  int (*clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
  ssize_t (*write)(int, const void *, size_t);
  long (*syscall)(long, ...);
  int (*sigaction)(int, const struct sigaction *, struct sigaction *);
};

#endif
