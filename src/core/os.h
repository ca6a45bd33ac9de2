/* What the runtime asks of the kernel and libc: the table of libc calls a
 * drop-in library may interpose (struct ito_os), futexes, the process-wide
 * barrier of membarrier(2), the descriptors the runtime owns, and the
 * fatal-error path. Design: docs/architecture.md ("Rules every file
 * keeps"), docs/scheduler.md (why membarrier). */
#ifndef ITO_CORE_OS_H
#define ITO_CORE_OS_H

#include "base.h"
#include "os_table.h"

/* Holds the link-time addresses until a drop-in library installs libc's own
 * definitions (ito__os_install), so that the runtime's workers are OS
 * threads and its sleeps the kernel's even while pthread_create and
 * nanosleep are interposed. */
extern struct ito_os ito__os HIDDEN;
/* Replaces the entries os gives (non-NULL ones); only before the runtime
 * starts (the drop-in interface checks). */
HIDDEN void ito__os_install(const struct ito_os *os);

/* An OS thread of the runtime's own (a worker, the monitor) through the
 * table's pthread_create, on a stack of `stack` bytes; glibc refuses
 * (EINVAL) a stack that cannot hold the process's static TLS, which a
 * program's libraries may make large (OpenBLAS: 60 KiB), and the thread
 * then gets glibc's default size. quiet: the thread starts with every
 * signal blocked (it sets its own mask). pthread_create's result. */
HIDDEN int ito__os_thread(pthread_t *t, size_t stack, void *(*fn)(void *), void *arg, int quiet);

HIDDEN long ito__futex_wait(int *addr, int val, const struct timespec *rel);
HIDDEN long ito__futex_wake(int *addr, int n);

/* ---- the asymmetric barrier ----------------------------------------------------
 * With membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED) the rare side of a
 * store-load pair (a thief, a worker going to sleep, a joiner) makes every
 * running thread of the process execute a full fence, and the common side
 * (the deque's owner, a publisher of work, an ending thread) needs only a
 * compiler barrier. ito__asym_fence is 0 where membarrier is missing or
 * ITO_DEQUE_FENCE=symmetric asks so: both sides then fence. The assembly
 * fork reads the variable. */
extern int ito__asym_fence HIDDEN;
/* Registers the process for membarrier; returns whether it can be used. */
HIDDEN bool ito__membarrier_register(void);
/* The rare side's barrier. */
HIDDEN void ito__heavy_barrier(void);
/* The common side's barrier. */
static inline void owner_barrier(void) {
  if (LIKELY(ito__asym_fence))
    __asm__ volatile("" ::: "memory");
  else
    full_fence();
}

/* ---- descriptors the runtime owns -----------------------------------------------
 * The program must not close or replace them (the drop-in close_range and
 * dup2 leave them alone). At most ITO_OWN_FDS. */
#define ITO_OWN_FDS 8
HIDDEN void ito__own_fd_add(int fd);
HIDDEN bool ito__own_fd(int fd);
/* The lowest descriptor the runtime owns in [lo, hi], or -1. */
HIDDEN int ito__own_fd_first(unsigned lo, unsigned hi);
/* A descriptor moved out of the way of the program's small numbers (at or
 * above 1024, or near the top of a lower limit of descriptors; where there
 * is no room it keeps its number), close-on-exec, and recorded as the
 * runtime's. */
HIDDEN int ito__own_fd_take(int fd);
/* fd is no longer the runtime's (it was closed). */
HIDDEN void ito__own_fd_drop(int fd);
/* After fork, in the child: fresh (just made) replaces the runtime's
 * descriptor old, which the child closed first (so that even a full table
 * had room for fresh). It takes old's number where it can, else it is
 * taken as ito__own_fd_take does and old is dropped; returns its number. */
HIDDEN int ito__own_fd_renew(int old, int fresh);

/* Writes a whole message to stderr through the table (never an
 * interposer). */
HIDDEN void ito__write_stderr(const char *s, size_t n);

/* The CPU time in nanoseconds of OS thread tid of this process (0: the
 * calling one), from the kernel's clock of a thread; -1 if it cannot be
 * read (the thread has ended). */
HIDDEN long long ito__os_cpu_ns(int tid);

/* The calling OS thread's scheduling policy (SCHED_RESET_ON_FORK left
 * out) and priority, from the kernel: out[0], out[1] (0, 0 if unreadable). */
HIDDEN void ito__os_sched(int out[2]);

/* Queues signal sig to OS thread tid of this process (rt_tgsigqueueinfo):
 * SI_QUEUE, from this process, with value v, by which the runtime's
 * handlers know their own signals. 0, or -1 with errno (the thread has
 * ended, say). */
HIDDEN long ito__queue_signal(int tid, int sig, void *v);

#endif
