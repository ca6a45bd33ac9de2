/* ito: a task-parallel runtime of lightweight threads (C11 ABI).
 *
 * Every function returning int returns 0 on success or an errno value.
 * The runtime starts implicitly on first use; ito_init() starts it explicitly.
 * See docs/api.md for the semantics of each call. */
#ifndef ITO_ITO_H
#define ITO_ITO_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ITO_API __attribute__((visibility("default")))
#else
#define ITO_API
#endif

/* Hot entry points are called through the GOT rather than a PLT stub on
 * x86-64 (one indirect jump less per call). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ITO_NOPLT __attribute__((noplt))
#else
#define ITO_NOPLT
#endif

#define ITO_VERSION_MAJOR 0
#define ITO_VERSION_MINOR 1

/* ---- runtime ---------------------------------------------------------- */
ITO_API int ito_init(void);
ITO_API int ito_finalize(void);
ITO_API int ito_num_workers(void);
/* Index of the worker running the caller, or -1 on a thread that is not a worker. */
ITO_API int ito_worker_id(void);

/* ---- the profiler (ITO_PROFILE; docs/profile.md) ------------------------ */
/* Figures of the run, or of a tagged region (summed over its instances).
 * Times in seconds; worker time (work, overhead, idle, idle_ready, blocked
 * and descheduled) adds up to about workers x elapsed. */
struct ito_profile {
  double elapsed;               /* Tp: wall time */
  double work;                  /* T1: time in the program's own code, all workers */
  double span;                  /* Tinf: the longest path of the recorded graph */
  double parallelism;           /* T1 / Tinf */
  double burdened_span;         /* Tinf with each fork on the path charged the steal and
                                   sync cost measured in this run */
  double burdened_parallelism;  /* T1 / burdened span */
  double bound;                 /* T1 / P + Tinf */
  double overhead;              /* worker time in the runtime's code */
  double idle;                  /* worker time idle while no work existed */
  double idle_ready;            /* worker time idle while work was ready somewhere */
  double blocked;               /* worker time idle while threads were blocked */
  double descheduled;           /* worker time off the CPU in the program's or the runtime's
                                   code: preempted by the OS, taken by the hypervisor, or
                                   blocked in a system call ito does not see */
  double stretch;               /* work / work of the ITO_PROFILE_BASELINE run; 0: none */
  int workers;                  /* P */
  unsigned long long instances; /* a region's begin/end pairs (1 for the run) */
  unsigned long long spawns, steals, steal_fails, creates, parks, sleeps, wakes;
  /* tasks started with data (dependences, or ito_create_near), with more
   * than one NUMA node in use: run on their data's node, on another node,
   * with data on no known node */
  unsigned long long tasks_local, tasks_remote, tasks_unknown;
  /* subtrees of fine tasks the profiler collapsed (ITO_PROFILE_COLLAPSE),
   * and the forks inside them: their spans are estimated, not recorded */
  unsigned long long collapsed, collapsed_forks;
};
/* A region named tag (up to 63 bytes) begins and ends on the calling
 * thread; regions of different tags may nest and overlap. 0; EINVAL for a
 * NULL or empty tag, an end without a begin, or a begin of an open tag;
 * ENOSPC past 64 tags. Without ITO_PROFILE both do nothing and return 0. */
ITO_API int ito_profile_begin(const char *tag);
ITO_API int ito_profile_end(const char *tag);
/* The figures so far of region tag, or of the run for NULL or "": 0;
 * ENOENT for a tag never ended; ENOTSUP when ITO_PROFILE is not set. */
ITO_API int ito_profile_get(const char *tag, struct ito_profile *out);

/* ---- NUMA (ITO_NUMA; docs/numa.md) ------------------------------------ */
/* Nodes are numbered 0 .. ito_numa_num_nodes()-1. Memory of size bytes
 * (whole pages) on one node, interleaved page by page over all nodes, or
 * block-cyclic: blocks of `block` bytes (rounded up to pages) on nodes 0,
 * 1, .. nodes-1, 0, ... NULL with errno (EINVAL: a size of 0, a node out
 * of range, a block of 0, nodes out of 1 .. ito_numa_num_nodes()). */
ITO_API void *ito_numa_alloc(size_t size, int node);
ITO_API void *ito_numa_alloc_interleaved(size_t size);
ITO_API void *ito_numa_alloc_blocked(size_t size, size_t block, int nodes);
/* Frees a block of ito_numa_alloc* with the size it was asked for; any
 * other pointer is reported (one line on stderr; stops a Debug build) and
 * nothing is freed. */
ITO_API void ito_numa_free(void *p, size_t size);
/* The node of the page at p: from ito's own blocks, else from the kernel;
 * -1 when unknown (a page never touched). */
ITO_API int ito_numa_node_of(const void *p);
/* The nodes in use: 1 with ITO_NUMA=off or on a machine of one node. */
ITO_API int ito_numa_num_nodes(void);
/* The node of the worker running the caller, or -1 outside the workers. */
ITO_API int ito_numa_node(void);
/* An access of a task to memory: where, how many bytes, and how. */
enum { ITO_ACCESS_IN = 1, ITO_ACCESS_OUT = 2, ITO_ACCESS_INOUT = 3 };
struct ito_access {
  const void *addr;
  size_t size;
  int mode; /* ITO_ACCESS_* */
};
/* The node ito places a task with these n accesses on: the one holding
 * most of their bytes, out and inout counted double, ties going to the
 * caller's node. -1 when none of the addresses' nodes is known, or with
 * one node in use. */
ITO_API int ito_numa_node_for(const struct ito_access *acc, int n);

/* ---- lightweight threads ---------------------------------------------- */
/* A handle: nonzero, comparable with ==; stale handles are detected. */
typedef uint64_t ito_thread_t;

ITO_API ITO_NOPLT int ito_create(void *(*fn)(void *), void *arg, ito_thread_t *out);
/* ito_create for a thread that works on the data of acc (n accesses; one
 * access of any size is a hint "near this address"): it starts on a
 * worker of the node ito_numa_node_for gives (at once, work-first, when
 * that is the caller's node; else queued there), or of its creator's node
 * when the data's node is unknown. With one node in use it is ito_create.
 * 0, EINVAL (fn NULL, n < 0, acc NULL with n > 0, a mode out of range),
 * EAGAIN. */
ITO_API int ito_create_near(void *(*fn)(void *), void *arg, const struct ito_access *acc, int n,
                            ito_thread_t *out);
ITO_API ITO_NOPLT int ito_join(ito_thread_t t, void **result);
ITO_API int ito_detach(ito_thread_t t);
ITO_API int ito_yield(void);
/* The calling thread sleeps for *req (CLOCK_MONOTONIC); an ito thread's
 * worker runs other work meanwhile. 0, or EINVAL for a NULL or malformed
 * req (tv_nsec outside [0, 1e9), tv_sec < 0). Signals do not cut it short. */
ITO_API int ito_nanosleep(const struct timespec *req);
/* The calling lightweight thread, or 0 on a thread that is not an ito thread. */
ITO_API ito_thread_t ito_self(void);
/* Ends the calling ito thread with a result (like returning it from fn). */
ITO_API void ito_exit(void *result) __attribute__((noreturn));

/* ---- synchronisation --------------------------------------------------
 * Blocking suspends the lightweight thread and its worker runs other work.
 * On a plain OS thread that is not a worker, the OS thread blocks. */
typedef struct ito_mutex {
  int state; /* 0 free, 1 locked, 2 locked with waiters */
  int qlock;
  void *head, *tail;
} ito_mutex_t;
#define ITO_MUTEX_INITIALIZER \
  { 0, 0, 0, 0 }

ITO_API int ito_mutex_init(ito_mutex_t *m);
ITO_API int ito_mutex_lock(ito_mutex_t *m);
ITO_API int ito_mutex_trylock(ito_mutex_t *m);
ITO_API int ito_mutex_unlock(ito_mutex_t *m);
ITO_API int ito_mutex_destroy(ito_mutex_t *m);

typedef struct ito_cond {
  int qlock;
  int pad_;
  void *head, *tail;
} ito_cond_t;
#define ITO_COND_INITIALIZER \
  { 0, 0, 0, 0 }

ITO_API int ito_cond_init(ito_cond_t *c);
ITO_API int ito_cond_wait(ito_cond_t *c, ito_mutex_t *m);
/* abstime is on CLOCK_REALTIME, as for pthread_cond_timedwait. */
ITO_API int ito_cond_timedwait(ito_cond_t *c, ito_mutex_t *m, const struct timespec *abstime);
/* The same on a chosen clock, CLOCK_REALTIME or CLOCK_MONOTONIC (others:
 * EINVAL), as glibc's pthread_cond_clockwait. */
ITO_API int ito_cond_clockwait(ito_cond_t *c, ito_mutex_t *m, clockid_t clock,
                               const struct timespec *abstime);
ITO_API int ito_cond_signal(ito_cond_t *c);
ITO_API int ito_cond_broadcast(ito_cond_t *c);
ITO_API int ito_cond_destroy(ito_cond_t *c);

typedef struct ito_barrier {
  int qlock;
  unsigned count, total, phase;
  void *head, *tail;
} ito_barrier_t;
/* Returned by ito_barrier_wait to exactly one of the threads released. */
#define ITO_BARRIER_SERIAL_THREAD (-1)

ITO_API int ito_barrier_init(ito_barrier_t *b, unsigned count);
ITO_API int ito_barrier_wait(ito_barrier_t *b);
/* EBUSY while a round is under way; otherwise waits until every waiter of
 * the last round has left (one may still be in a signal's handler), so
 * that the barrier may be freed when it returns. */
ITO_API int ito_barrier_destroy(ito_barrier_t *b);

/* Thread-specific data, per lightweight thread. Destructors run at thread exit. */
typedef unsigned ito_key_t;
#define ITO_KEYS_MAX 1024
ITO_API int ito_key_create(ito_key_t *key, void (*destructor)(void *));
ITO_API int ito_key_delete(ito_key_t key);
ITO_API void *ito_key_getspecific(ito_key_t key);
ITO_API int ito_key_setspecific(ito_key_t key, const void *value);
/* The same, under the pthread-style names. */
ITO_API void *ito_getspecific(ito_key_t key);
ITO_API int ito_setspecific(ito_key_t key, const void *value);

/* ---- blocking I/O that parks the thread, not the worker --------------------
 * libc's signatures and results (-1 and errno). On a socket or a pipe, a call
 * that would block parks the calling ito thread until epoll reports the fd
 * ready; its worker runs other work. Other files, plain OS threads and fds
 * the program made non-blocking get libc's behaviour. SO_RCVTIMEO and
 * SO_SNDTIMEO are honoured (read when the fd is first waited on; set them
 * with ito_setsockopt for a change to be seen later). Close such fds with
 * ito_close: threads parked on them wake with EBADF. Writes to a stream send
 * everything (parking as needed), as blocking writes do. A signal never
 * interrupts a parked thread (the calls behave as under SA_RESTART).
 * See docs/io.md. */
ITO_API ssize_t ito_read(int fd, void *buf, size_t n);
ITO_API ssize_t ito_write(int fd, const void *buf, size_t n);
ITO_API ssize_t ito_readv(int fd, const struct iovec *iov, int cnt);
ITO_API ssize_t ito_writev(int fd, const struct iovec *iov, int cnt);
ITO_API ssize_t ito_recv(int fd, void *buf, size_t n, int flags);
ITO_API ssize_t ito_send(int fd, const void *buf, size_t n, int flags);
ITO_API ssize_t ito_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
                             socklen_t *alen);
ITO_API ssize_t ito_sendto(int fd, const void *buf, size_t n, int flags,
                           const struct sockaddr *addr, socklen_t alen);
ITO_API ssize_t ito_recvmsg(int fd, struct msghdr *msg, int flags);
ITO_API ssize_t ito_sendmsg(int fd, const struct msghdr *msg, int flags);
ITO_API int ito_accept(int fd, struct sockaddr *addr, socklen_t *alen);
ITO_API int ito_accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags);
ITO_API int ito_connect(int fd, const struct sockaddr *addr, socklen_t alen);
ITO_API int ito_close(int fd);
/* libc's setsockopt; a change of SO_RCVTIMEO or SO_SNDTIMEO is seen by the
 * next wait on the socket (through any of its numbers). */
ITO_API int ito_setsockopt(int fd, int level, int opt, const void *val, socklen_t len);
/* libc's poll; an ito thread parks until one of the fds is ready or the
 * timeout passes. */
struct pollfd;
ITO_API int ito_poll(struct pollfd *fds, unsigned long nfds, int timeout_ms);
/* The program's own event loops, with libc's signatures: an ito thread
 * parks until something is ready or the timeout passes. An epoll
 * descriptor is waited on as a pollable fd (readable while its set has
 * events), select's sets become a poll list (fds at and above FD_SETSIZE
 * included), and poll or select with no fds is a sleep. With a signal
 * mask (ppoll, pselect, epoll_pwait, epoll_pwait2), the mask must hold
 * exactly while the call waits, which only the kernel can do: libc's call,
 * which blocks the worker (the monitor runs an extra one meanwhile). */
struct epoll_event;
ITO_API int ito_ppoll(struct pollfd *fds, unsigned long nfds, const struct timespec *timeout,
                      const sigset_t *mask);
ITO_API int ito_select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout);
ITO_API int ito_pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex,
                        const struct timespec *timeout, const sigset_t *mask);
ITO_API int ito_epoll_wait(int epfd, struct epoll_event *events, int max, int timeout_ms);
ITO_API int ito_epoll_pwait(int epfd, struct epoll_event *events, int max, int timeout_ms,
                            const sigset_t *mask);
ITO_API int ito_epoll_pwait2(int epfd, struct epoll_event *events, int max,
                             const struct timespec *timeout, const sigset_t *mask);
/* Waits for one of set's signals, which the caller must have blocked (as
 * POSIX asks): an ito thread parks until one is pending for the process
 * (or for its current OS thread). libc's signatures and results. */
/* (siginfo_t is POSIX's: these two need a POSIX environment, which
 * <signal.h> gives unless the program asks for strict ISO C, -std=c11.) */
#ifdef __USE_POSIX199309
ITO_API int ito_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout);
ITO_API int ito_sigwaitinfo(const sigset_t *set, siginfo_t *info);
#endif
ITO_API int ito_sigwait(const sigset_t *set, int *sig);

/* ---- fork-join with lazy task creation ----------------------------------
 * A task group runs children child-first on the caller's own stack; a stack
 * and a context switch are paid only when an idle worker steals the parent's
 * continuation. The group must be initialised, forked from and joined in the
 * same function activation for the fast path (ito_tg_init records the frame);
 * forks from other frames take a slower, always-correct path. The function
 * that forks must not return or let an exception escape between a fork and
 * the join; with ito_tg_init, a return before the join after a steal stops
 * the program with a message (without a steal nothing is wrong yet). See
 * docs/lazy-tasks.md. */
typedef struct ito_tg {
  void *home_fp; /* frame of the activation that owns the fast path */
  void *home_sp; /* stack pointer of that frame, set at the first steal */
  void *home_fiber;
  /* pending and stolen are adjacent and 8-byte aligned: the inline join
   * check reads both with one load (idle: pending 1, stolen 0) */
  int pending;         /* 1 + children of taken forks and slow-path children running */
  int stolen;          /* a continuation of this group was taken */
  void *waiter;        /* bit 0 set (ito_tg_init): the home frame's return before the
                          join stops the program with a message */
  void *home_ret;      /* a checked group's true return address from the home frame,
                          while a trap stands in its slot (a stolen continuation) */
  uintptr_t span_word; /* the profiler's word: the longest span of the children so far */
} ito_tg_t;

/* fn receives a pointer to a private copy of size bytes of arg (size 0: arg
 * itself, which must then stay valid and unchanged until the join). */
typedef void (*ito_task_fn)(void *arg);
/* A child that is also given its task group (the sized entries below). */
typedef void (*ito_task2_fn)(void *arg, ito_tg_t *tg);
/* A child whose closure (at most two words) comes in registers. */
typedef void (*ito_task_r2_fn)(uintptr_t w0, ito_tg_t *tg, uintptr_t w1);

ITO_API void ito_tg_init_(ito_tg_t *tg, void *frame);
ITO_API ITO_NOPLT void ito_tg_fork_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size);
ITO_API void ito_tg_spawn_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size);
/* ito_tg_spawn_ for a child with data on node (ito_numa_node_for; -1:
 * none known), placed as ito_create_near places its thread. */
ITO_API void ito_tg_spawn_node_(ito_tg_t *tg, ito_task_fn fn, void *arg, size_t size, int node);
ITO_API ITO_NOPLT void ito_tg_join_(ito_tg_t *tg, void *frame);
/* ito_tg_fork_ for an argument of exactly 8, 16, 24 or 32 bytes, with a
 * child that receives the task group as its second argument. */
ITO_API ITO_NOPLT void ito_tg_fork_w1_(ito_tg_t *tg, ito_task2_fn fn, void *arg);
ITO_API ITO_NOPLT void ito_tg_fork_w2_(ito_tg_t *tg, ito_task2_fn fn, void *arg);
ITO_API ITO_NOPLT void ito_tg_fork_w3_(ito_tg_t *tg, ito_task2_fn fn, void *arg);
ITO_API ITO_NOPLT void ito_tg_fork_w4_(ito_tg_t *tg, ito_task2_fn fn, void *arg);
/* The fork for a closure of at most two words, passed by value: nothing is
 * copied through memory. The child is called as fn(w0, tg, w1). */
ITO_API ITO_NOPLT void ito_tg_fork_r2_(ito_tg_t *tg, ito_task_r2_fn fn, uintptr_t w0, uintptr_t w1);

/* The inline halves of init and join: the common case makes no call. */
static inline void ito_tg_init_inline_(ito_tg_t *tg, void *frame) {
  tg->home_fp = frame;
  tg->pending = 1;
  tg->stolen = 0;
  tg->waiter = 0;
}
/* ito_tg_init: also checks that the function does not return before its
 * join (a C task group has no destructor that would join it). */
static inline void ito_tg_init_checked_(ito_tg_t *tg, void *frame) {
  ito_tg_init_inline_(tg, frame);
  tg->waiter = (void *)1;
}
static inline int ito_tg_busy_(ito_tg_t *tg) {
  unsigned long long both = __atomic_load_n((unsigned long long *)&tg->pending, __ATOMIC_ACQUIRE);
  return both != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 1ULL : 1ULL << 32);
}

#define ito_tg_init(tg) ito_tg_init_checked_((tg), __builtin_frame_address(0))
/* Runs fn on a copy of *arg (size bytes) as a child of tg. */
#define ito_tg_fork(tg, fn, arg, size)                   \
  do {                                                   \
    ito_tg_t *ito_tg__ = (tg);                           \
    if (ito_tg__->home_fp == __builtin_frame_address(0)) \
      ito_tg_fork_(ito_tg__, (fn), (arg), (size));       \
    else                                                 \
      ito_tg_spawn_(ito_tg__, (fn), (arg), (size));      \
  } while (0)
#define ito_tg_join(tg)                                                             \
  do {                                                                              \
    ito_tg_t *ito_tg__ = (tg);                                                      \
    if (ito_tg_busy_(ito_tg__)) ito_tg_join_(ito_tg__, __builtin_frame_address(0)); \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
