/* libito-pthread.so: the pthread API on lightweight threads. Internal
 * header of the shim (docs/dropin.md). Every interposer starts with
 * ITO_PT_ENTER, which sets the shim up if a constructor of another library
 * got here first, and forwards to libc under ITO_PTHREAD=off. */
#ifndef ITO_SHIM_H
#define ITO_SHIM_H

#define _GNU_SOURCE
#include "../core/relax.h"
#include "../core/timespec.h"
#include "../dropin/ito_dropin.h"

#include <errno.h>
#include <link.h>
#include <poll.h>
#include <semaphore.h>
#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define ITO_PT_HIDDEN __attribute__((visibility("hidden")))
#define ITO_PT_EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* libc's definition of every function the shim interposes: the X list
 * names them, with their types, once. */
#define ITO_PT_REAL_LIST(X)                                                                       \
  X(pthread_create, int, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))        \
  X(pthread_join, int, (pthread_t, void **))                                                      \
  X(pthread_tryjoin_np, int, (pthread_t, void **))                                                \
  X(pthread_timedjoin_np, int, (pthread_t, void **, const struct timespec *))                     \
  X(pthread_clockjoin_np, int, (pthread_t, void **, clockid_t, const struct timespec *))          \
  X(pthread_detach, int, (pthread_t))                                                             \
  X(pthread_exit, void, (void *))                                                                 \
  X(pthread_self, pthread_t, (void))                                                              \
  X(pthread_equal, int, (pthread_t, pthread_t))                                                   \
  X(pthread_kill, int, (pthread_t, int))                                                          \
  X(pthread_sigqueue, int, (pthread_t, int, const union sigval))                                  \
  X(pthread_cancel, int, (pthread_t))                                                             \
  X(pthread_setcancelstate, int, (int, int *))                                                    \
  X(pthread_setcanceltype, int, (int, int *))                                                     \
  X(pthread_testcancel, void, (void))                                                             \
  X(pthread_getattr_np, int, (pthread_t, pthread_attr_t *))                                       \
  X(pthread_setname_np, int, (pthread_t, const char *))                                           \
  X(pthread_getname_np, int, (pthread_t, char *, size_t))                                         \
  X(pthread_setaffinity_np, int, (pthread_t, size_t, const cpu_set_t *))                          \
  X(pthread_getaffinity_np, int, (pthread_t, size_t, cpu_set_t *))                                \
  X(pthread_setschedparam, int, (pthread_t, int, const struct sched_param *))                     \
  X(pthread_getschedparam, int, (pthread_t, int *, struct sched_param *))                         \
  X(pthread_setschedprio, int, (pthread_t, int))                                                  \
  X(pthread_getcpuclockid, int, (pthread_t, clockid_t *))                                         \
  X(pthread_yield, int, (void))                                                                   \
  X(sched_yield, int, (void))                                                                     \
  X(pthread_once, int, (pthread_once_t *, void (*)(void)))                                        \
  X(pthread_key_create, int, (pthread_key_t *, void (*)(void *)))                                 \
  X(pthread_key_delete, int, (pthread_key_t))                                                     \
  X(pthread_getspecific, void *, (pthread_key_t))                                                 \
  X(pthread_setspecific, int, (pthread_key_t, const void *))                                      \
  X(pthread_mutex_init, int, (pthread_mutex_t *, const pthread_mutexattr_t *))                    \
  X(pthread_mutex_destroy, int, (pthread_mutex_t *))                                              \
  X(pthread_mutex_lock, int, (pthread_mutex_t *))                                                 \
  X(pthread_mutex_trylock, int, (pthread_mutex_t *))                                              \
  X(pthread_mutex_timedlock, int, (pthread_mutex_t *, const struct timespec *))                   \
  X(pthread_mutex_clocklock, int, (pthread_mutex_t *, clockid_t, const struct timespec *))        \
  X(pthread_mutex_unlock, int, (pthread_mutex_t *))                                               \
  X(pthread_mutex_consistent, int, (pthread_mutex_t *))                                           \
  X(pthread_mutex_getprioceiling, int, (const pthread_mutex_t *, int *))                          \
  X(pthread_mutex_setprioceiling, int, (pthread_mutex_t *, int, int *))                           \
  X(pthread_cond_init, int, (pthread_cond_t *, const pthread_condattr_t *))                       \
  X(pthread_cond_destroy, int, (pthread_cond_t *))                                                \
  X(pthread_cond_wait, int, (pthread_cond_t *, pthread_mutex_t *))                                \
  X(pthread_cond_timedwait, int, (pthread_cond_t *, pthread_mutex_t *, const struct timespec *))  \
  X(pthread_cond_clockwait, int,                                                                  \
    (pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *))                    \
  X(pthread_cond_signal, int, (pthread_cond_t *))                                                 \
  X(pthread_cond_broadcast, int, (pthread_cond_t *))                                              \
  X(pthread_rwlock_init, int, (pthread_rwlock_t *, const pthread_rwlockattr_t *))                 \
  X(pthread_rwlock_destroy, int, (pthread_rwlock_t *))                                            \
  X(pthread_rwlock_rdlock, int, (pthread_rwlock_t *))                                             \
  X(pthread_rwlock_tryrdlock, int, (pthread_rwlock_t *))                                          \
  X(pthread_rwlock_timedrdlock, int, (pthread_rwlock_t *, const struct timespec *))               \
  X(pthread_rwlock_clockrdlock, int, (pthread_rwlock_t *, clockid_t, const struct timespec *))    \
  X(pthread_rwlock_wrlock, int, (pthread_rwlock_t *))                                             \
  X(pthread_rwlock_trywrlock, int, (pthread_rwlock_t *))                                          \
  X(pthread_rwlock_timedwrlock, int, (pthread_rwlock_t *, const struct timespec *))               \
  X(pthread_rwlock_clockwrlock, int, (pthread_rwlock_t *, clockid_t, const struct timespec *))    \
  X(pthread_rwlock_unlock, int, (pthread_rwlock_t *))                                             \
  X(pthread_barrier_init, int, (pthread_barrier_t *, const pthread_barrierattr_t *, unsigned))    \
  X(pthread_barrier_destroy, int, (pthread_barrier_t *))                                          \
  X(pthread_barrier_wait, int, (pthread_barrier_t *))                                             \
  X(pthread_spin_init, int, (pthread_spinlock_t *, int))                                          \
  X(pthread_spin_destroy, int, (pthread_spinlock_t *))                                            \
  X(pthread_spin_lock, int, (pthread_spinlock_t *))                                               \
  X(pthread_spin_trylock, int, (pthread_spinlock_t *))                                            \
  X(pthread_spin_unlock, int, (pthread_spinlock_t *))                                             \
  X(__pthread_register_cancel, void, (__pthread_unwind_buf_t *))                                  \
  X(__pthread_unregister_cancel, void, (__pthread_unwind_buf_t *))                                \
  X(__pthread_unwind_next, void, (__pthread_unwind_buf_t *))                                      \
  X(flockfile, void, (FILE *))                                                                    \
  X(ftrylockfile, int, (FILE *))                                                                  \
  X(funlockfile, void, (FILE *))                                                                  \
  X(dlopen, void *, (const char *, int))                                                          \
  X(dlclose, int, (void *))                                                                       \
  X(dl_iterate_phdr, int, (int (*)(struct dl_phdr_info *, size_t, void *), void *))               \
  X(read, ssize_t, (int, void *, size_t))                                                         \
  X(write, ssize_t, (int, const void *, size_t))                                                  \
  X(readv, ssize_t, (int, const struct iovec *, int))                                             \
  X(writev, ssize_t, (int, const struct iovec *, int))                                            \
  X(recv, ssize_t, (int, void *, size_t, int))                                                    \
  X(send, ssize_t, (int, const void *, size_t, int))                                              \
  X(recvfrom, ssize_t, (int, void *, size_t, int, struct sockaddr *, socklen_t *))                \
  X(sendto, ssize_t, (int, const void *, size_t, int, const struct sockaddr *, socklen_t))        \
  X(recvmsg, ssize_t, (int, struct msghdr *, int))                                                \
  X(sendmsg, ssize_t, (int, const struct msghdr *, int))                                          \
  X(accept, int, (int, struct sockaddr *, socklen_t *))                                           \
  X(accept4, int, (int, struct sockaddr *, socklen_t *, int))                                     \
  X(connect, int, (int, const struct sockaddr *, socklen_t))                                      \
  X(close, int, (int))                                                                            \
  X(fcntl, int, (int, int, ...))                                                                  \
  X(fcntl64, int, (int, int, ...))                                                                \
  X(ioctl, int, (int, unsigned long, ...))                                                        \
  X(dup, int, (int))                                                                              \
  X(dup2, int, (int, int))                                                                        \
  X(dup3, int, (int, int, int))                                                                   \
  X(close_range, int, (unsigned, unsigned, int))                                                  \
  X(closefrom, void, (int))                                                                       \
  X(setsockopt, int, (int, int, int, const void *, socklen_t))                                    \
  X(poll, int, (struct pollfd *, nfds_t, int))                                                    \
  X(ppoll, int, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))             \
  X(__ppoll_chk, int,                                                                             \
    (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *, size_t))                 \
  X(select, int, (int, fd_set *, fd_set *, fd_set *, struct timeval *))                           \
  X(pselect, int, (int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *)) \
  X(epoll_wait, int, (int, struct epoll_event *, int, int))                                       \
  X(epoll_pwait, int, (int, struct epoll_event *, int, int, const sigset_t *))                    \
  X(epoll_pwait2, int,                                                                            \
    (int, struct epoll_event *, int, const struct timespec *, const sigset_t *))                  \
  X(sigwait, int, (const sigset_t *, int *))                                                      \
  X(pthread_sigmask, int, (int, const sigset_t *, sigset_t *))                                    \
  X(sigprocmask, int, (int, const sigset_t *, sigset_t *))                                        \
  X(sigaction, int, (int, const struct sigaction *, struct sigaction *))                          \
  X(signal, sighandler_t, (int, sighandler_t))                                                    \
  X(bsd_signal, sighandler_t, (int, sighandler_t))                                                \
  X(sysv_signal, sighandler_t, (int, sighandler_t))                                               \
  X(sigpending, int, (sigset_t *))                                                                \
  X(raise, int, (int))                                                                            \
  X(sigsuspend, int, (const sigset_t *))                                                          \
  X(pause, int, (void))                                                                           \
  X(siginterrupt, int, (int, int))                                                                \
  X(sighold, int, (int))                                                                          \
  X(sigrelse, int, (int))                                                                         \
  X(sigignore, int, (int))                                                                        \
  X(sigset, sighandler_t, (int, sighandler_t))                                                    \
  X(sigpause, int, (int))                                                                         \
  X(__sigpause, int, (int, int))                                                                  \
  X(__xpg_sigpause, int, (int))                                                                   \
  X(sigblock, int, (int))                                                                         \
  X(sigsetmask, int, (int))                                                                       \
  X(siggetmask, int, (void))                                                                      \
  X(sigaltstack, int, (const stack_t *, stack_t *))                                               \
  X(longjmp, void, (void *, int))                                                                 \
  X(_longjmp, void, (void *, int))                                                                \
  X(siglongjmp, void, (void *, int))                                                              \
  X(__longjmp_chk, void, (void *, int))                                                           \
  X(sched_setaffinity, int, (pid_t, size_t, const cpu_set_t *))                                   \
  X(sched_setscheduler, int, (pid_t, int, const struct sched_param *))                            \
  X(sched_getscheduler, int, (pid_t))                                                             \
  X(sched_setparam, int, (pid_t, const struct sched_param *))                                     \
  X(sched_getparam, int, (pid_t, struct sched_param *))                                           \
  X(clock_gettime, int, (clockid_t, struct timespec *))                                           \
  X(clock_getres, int, (clockid_t, struct timespec *))                                            \
  X(sched_getaffinity, int, (pid_t, size_t, cpu_set_t *))                                         \
  X(sigwaitinfo, int, (const sigset_t *, siginfo_t *))                                            \
  X(sigtimedwait, int, (const sigset_t *, siginfo_t *, const struct timespec *))                  \
  X(__poll_chk, int, (struct pollfd *, nfds_t, int, size_t))                                      \
  X(__read_chk, ssize_t, (int, void *, size_t, size_t))                                           \
  X(__recv_chk, ssize_t, (int, void *, size_t, size_t, int))                                      \
  X(__recvfrom_chk, ssize_t, (int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *))  \
  X(sem_init, int, (sem_t *, int, unsigned))                                                      \
  X(sem_destroy, int, (sem_t *))                                                                  \
  X(sem_post, int, (sem_t *))                                                                     \
  X(sem_wait, int, (sem_t *))                                                                     \
  X(sem_trywait, int, (sem_t *))                                                                  \
  X(sem_timedwait, int, (sem_t *, const struct timespec *))                                       \
  X(sem_clockwait, int, (sem_t *, clockid_t, const struct timespec *))                            \
  X(sem_getvalue, int, (sem_t *, int *))                                                          \
  X(nanosleep, int, (const struct timespec *, struct timespec *))                                 \
  X(clock_nanosleep, int, (clockid_t, int, const struct timespec *, struct timespec *))           \
  X(usleep, int, (useconds_t))                                                                    \
  X(sleep, unsigned, (unsigned))                                                                  \
  X(setuid, int, (uid_t))                                                                         \
  X(setgid, int, (gid_t))                                                                         \
  X(seteuid, int, (uid_t))                                                                        \
  X(setegid, int, (gid_t))                                                                        \
  X(setreuid, int, (uid_t, uid_t))                                                                \
  X(setregid, int, (gid_t, gid_t))                                                                \
  X(setresuid, int, (uid_t, uid_t, uid_t))                                                        \
  X(setresgid, int, (gid_t, gid_t, gid_t))                                                        \
  X(setgroups, int, (size_t, const gid_t *))

struct ito__pt_real {
#define ITO_PT_FIELD(name, ret, args) ret(*name) args;
  ITO_PT_REAL_LIST(ITO_PT_FIELD)
#undef ITO_PT_FIELD
};

extern struct ito__pt_real ito__pt_real ITO_PT_HIDDEN;
extern int ito__pt_state
    ITO_PT_HIDDEN; /* 0 not set up (or being set up), 1 on, 2 off (ITO_PTHREAD=off) */
extern pthread_t ito__pt_main_id ITO_PT_HIDDEN;
ITO_PT_HIDDEN void ito__pt_init(void);
/* Per ito thread: the innermost cleanup buffer and pthread_exit's value. */
extern ito_key_t ito__pt_cleanup_key ITO_PT_HIDDEN, ito__pt_exit_key ITO_PT_HIDDEN;

/* Must this call go straight to libc? Under ITO_PTHREAD=off, and while the
 * shim sets itself up on this OS thread: a call the set-up makes through
 * libc (an allocator's lock, taken inside a libc call) must not run the
 * set-up again (docs/dropin.md section 2). */
static inline int ito__pt_to_libc(void) {
  if (LIKELY(ito__pt_state == 1)) return 0;
  if (ito__pt_state == 0) ito__pt_init();
  return ito__pt_state != 1;
}

#define ITO_PT_ENTER(name, ...)                                             \
  do {                                                                      \
    if (UNLIKELY(ito__pt_to_libc())) return ito__pt_real.name(__VA_ARGS__); \
  } while (0)
/* The same for a function that returns nothing. */
#define ITO_PT_ENTER_VOID(name, ...)   \
  do {                                 \
    if (UNLIKELY(ito__pt_to_libc())) { \
      ito__pt_real.name(__VA_ARGS__);  \
      return;                          \
    }                                  \
  } while (0)

/* Cancellation points (thread.c): nothing until the first pthread_cancel
 * of the process; then the calling ito thread acts on a request it has
 * enabled (pthread_exit(PTHREAD_CANCELED)). */
ITO_PT_HIDDEN void ito__pt_cancel_check(void);
ITO_PT_HIDDEN void ito__pt_cancel_async(void); /* the handler's asynchronous cancellation */
/* Acts on a pending request when the type is asynchronous and the state
 * enabled: after a wait that is no cancellation point (a lock, a barrier)
 * ended for one. */
ITO_PT_HIDDEN void ito__pt_cancel_async_check(void);
/* Would ito__pt_cancel_async_check act now? */
ITO_PT_HIDDEN bool ito__pt_cancel_async_due(void);
static inline void ito__pt_testcancel(void) {
  if (UNLIKELY(__atomic_load_n(&ito__dropin_cancels, __ATOMIC_RELAXED))) ito__pt_cancel_check();
}
/* After a call that a request may have cut short (it failed with EINTR). */
static inline void ito__pt_testcancel_eintr(int failed_eintr) {
  if (UNLIKELY(failed_eintr)) ito__pt_testcancel();
}

/* Is t a lightweight thread's handle (bit 63 set; glibc's never have it)? */
static inline int is_ito(pthread_t t) { return ((uint64_t)t >> 63) != 0; }

/* The caller's id as the program sees it: the root answers main's own
 * pthread_t, any other ito thread its handle, other threads libc's value. */
ITO_PT_HIDDEN pthread_t ito__pt_self(void);

/* A refused call: prints one line, once per call name, and returns err. */
ITO_PT_HIDDEN int ito__pt_refuse(int *once, const char *call, const char *what, const char *hint,
                                 int err);
#define REFUSE(call, what, hint, err)              \
  ({                                               \
    static int once_;                              \
    ito__pt_refuse(&once_, call, what, hint, err); \
  })

/* A NULL test of an argument glibc's headers declare nonnull (the program
 * may still pass NULL; the test must not be optimised away). */
ITO_PT_HIDDEN int ito__pt_null(const void *p);

/* The clocks timed waits accept (others give EINVAL, as in glibc). */
static inline int ito__pt_clock_ok(clockid_t c) {
  return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC;
}
/* A clock-based wait's arguments that give EINVAL: no deadline, or a clock
 * other than those two. */
static inline int ito__pt_bad_clockwait(clockid_t c, const struct timespec *abs) {
  return ito__pt_null(abs) || !ito__pt_clock_ok(c);
}

/* Deadline arithmetic */
ITO_PT_HIDDEN int ito__pt_bad_time(const struct timespec *ts);

#endif
