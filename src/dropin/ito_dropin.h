/* The private interface of the drop-in libraries (libito-pthread.so,
 * libito-omp.so, and the libraries to come): what they need of the runtime
 * beyond the public C ABI. Not installed. Every function here is exported
 * from libito.so under the version node ITO_DROPIN_0.1 (src/libito.map),
 * so a library built from another version of ito fails at load instead of
 * misbehaving. The entry points are thin: each hands over to the core or
 * the I/O layer (the files of src/dropin/). Design: docs/dropin.md
 * section 1, docs/architecture.md. */
#ifndef ITO_DROPIN_API_H
#define ITO_DROPIN_API_H

#include <ito/ito.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#include "../core/config_row.h"
#include "../core/event.h"
#include "../core/os_table.h"
#include "../core/poll_source.h"

#define ITO_DROPIN_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* ---- set-up (setup.c) -------------------------------------------------------------------- */

/* Every drop-in library exports a function of this name (no version), which
 * sets the library up unless it is already (or is being, on the calling OS
 * thread: then it returns at once). The runtime calls each loaded object's
 * before it starts, so a library whose constructor has not run yet (a
 * constructor of another library started the runtime first) is set up
 * before the runtime's start, as the calls below require. Each library
 * also sets itself up from its constructor and from any entry point that
 * comes first (docs/dropin.md section 2). */
#define ITO_DROPIN_SETUP_SYM "__ito_dropin_setup"

/* libc's own definitions of the calls the runtime makes that a library
 * interposes (struct ito_os in src/core/os_table.h): installed before the
 * runtime starts, so that the runtime's workers are OS threads and its
 * sleeps are the kernel's. A later call stops the program with a message. */
ITO_DROPIN_API void ito__dropin_os_install(const struct ito_os *os);
/* The library interposes fcntl and ioctl, so the runtime sees every change
 * of O_NONBLOCK and may trust what it learned between changes. */
ITO_DROPIN_API void ito__dropin_fd_view_tracked(void);
/* The library routes the program's blocking I/O to the runtime: the I/O
 * layer is set up at each start of the runtime, while the program's table
 * of descriptors has room (where it has none, the calls block their worker
 * and the set-up is tried again later: docs/io.md). */
ITO_DROPIN_API void ito__dropin_io_early(void);
/* The library's configuration rows: parsed now by the runtime's one
 * checked parser (a bad value stops the program with one line naming the
 * variable, and exit status 2), and listed with the runtime's own. */
ITO_DROPIN_API void ito__dropin_config_read(const struct ito_cfg *rows, int n);
/* Every configuration row read so far (the runtime's and the libraries'). */
ITO_DROPIN_API void ito__dropin_config_each(void (*fn)(const struct ito_cfg *row, void *arg),
                                            void *arg);
/* The value an ITO_* variable takes when it is not set, checked now
 * (a bad one names `from`); before the runtime starts. 0, or EINVAL for a
 * variable the runtime does not read. */
ITO_DROPIN_API int ito__dropin_config_default(const char *name, const char *text, const char *from);
/* The worker count to use when ITO_NUM_WORKERS is not set (at most the
 * usable CPUs); before the runtime starts. 0: the usable CPUs. */
ITO_DROPIN_API void ito__dropin_default_workers(int n);
/* The value of core variable `name` (ITO_*) as the runtime reads it at
 * start, from the environment and the defaults given: a number, a size in
 * bytes, or the choice's word. 0, or EINVAL for a name the core does not
 * read. */
ITO_DROPIN_API int ito__dropin_config_value(const char *name, char *out, size_t len);
/* One whole number at *p by the rule of every numeric configuration row
 * (blanks, an optional sign, decimal digits, blanks): within [lo, hi] it
 * is stored in *out, *p moves past it and 1 is returned; else 0. */
ITO_DROPIN_API int ito__dropin_config_number(const char **p, long long lo, long long hi,
                                             long long *out);
/* Thread-specific data of the library itself: keys beyond the program's
 * ITO_KEYS_MAX (so the program keeps all of them), created once
 * (EAGAIN when the few there are are taken); get and set as
 * ito_getspecific and ito_setspecific. */
ITO_DROPIN_API int ito__dropin_key_create(ito_key_t *key, void (*destructor)(void *));
ITO_DROPIN_API void *ito__dropin_key_get(ito_key_t key);
ITO_DROPIN_API int ito__dropin_key_set(ito_key_t key, const void *value);
/* Words for a report of a stack overflow in code of this library: given
 * the overflowed stack's context word (ito__dropin_ctx), fn writes a
 * phrase naming the code ("an OpenMP task") into out, the function it runs
 * into *start, and returns 1; 0 leaves the report to the runtime. It runs
 * in the fault handler: it may only read. */
ITO_DROPIN_API void ito__dropin_overflow_describe(int (*fn)(void *ctx, char *out, size_t len,
                                                            void **start));
/* The C++ runtime's per-thread exception globals (__cxa_get_globals): kept
 * per lightweight thread across every switch. The runtime looks the
 * function up at start; a library hands it again after a dlopen. */
ITO_DROPIN_API void ito__dropin_set_eh(void *(*get_globals)(void));
/* A recorder of events (docs/hooks.md): fn runs on the worker, must not
 * block, park or call the runtime. Before the runtime starts: 0, EBUSY
 * after, EINVAL for NULL or a second recorder. */
ITO_DROPIN_API int ito__dropin_hooks_attach(void (*fn)(const struct ito_event *e, void *arg),
                                            void *arg);
/* A poll source (src/core/poll_source.h, docs/poll.md): 0, EINVAL or
 * EAGAIN. The source stays registered for the life of the process. */
ITO_DROPIN_API int ito__dropin_poll_register(struct ito_poll_source *s);
/* A thread will wait for s (before its last check whether it must), and
 * no longer waits. */
ITO_DROPIN_API void ito__dropin_poll_arrive(struct ito_poll_source *s);
ITO_DROPIN_API void ito__dropin_poll_leave(struct ito_poll_source *s);

/* libc's (or any object's) definition of name without the dynamic
 * linker's dlsym, which may allocate through the program's allocator and
 * so call back into a library not yet set up (src/core/elfsym.h): after
 * an address inside the caller's object, the objects that follow it
 * (dlsym(RTLD_NEXT)); NULL, all (RTLD_DEFAULT). version NULL: the default
 * definition. NULL when no object defines it. */
ITO_DROPIN_API void *ito__dropin_sym(const void *after, const char *name, const char *version);

/* The set*id system call nr on every OS thread of the process, as glibc's
 * set*id calls do, without glibc's broadcast (which acts on thread
 * descriptors: docs/tls.md, "set*id"). 0 or -errno. */
ITO_DROPIN_API long ito__dropin_setxid(long nr, long a, long b, long c);

/* Signals per lightweight thread (src/core/signal.h, docs/signals.md).
 * sig_enable: before the runtime starts. The others act for the calling
 * ito thread (mask, pending, suspend) or on thread h (send: h 0 is the
 * root; value NULL for pthread_kill); results as the POSIX calls' (error numbers, or
 * -1 with errno for suspend). */
ITO_DROPIN_API void ito__dropin_sig_enable(void);
ITO_DROPIN_API int ito__dropin_sigmask(int how, const sigset_t *set, sigset_t *old);
ITO_DROPIN_API int ito__dropin_sigsend(ito_thread_t h, int sig, const union sigval *value);
ITO_DROPIN_API int ito__dropin_sigaction(int sig, const struct sigaction *act,
                                         struct sigaction *old);
ITO_DROPIN_API void ito__dropin_sigpending(sigset_t *out);
ITO_DROPIN_API int ito__dropin_sigsuspend(const sigset_t *mask);
/* After an interruptible wait ended with EINTR on the calling thread: 1 if
 * every handler that ran had SA_RESTART (a restartable call goes on). */
ITO_DROPIN_API int ito__dropin_sig_restartable(void);
/* The calling ito thread jumped (siglongjmp): it is no longer inside a
 * handler's kernel frame (preemption may act again, src/core/preempt.h). */
ITO_DROPIN_API void ito__dropin_jumped(void);

/* Cancellation (docs/dropin.md section 6): cancel asks thread h (0: the
 * root) to act at its next cancellation point, ending its interruptible
 * wait if enabled; 0 or ESRCH. cancels becomes nonzero at the first
 * request (the library checks nothing before). cancel_word: the calling
 * ito thread's state (ITO_DROPIN_CANCEL_*), NULL for another thread. */
#define ITO_DROPIN_CANCEL_PENDING 1
#define ITO_DROPIN_CANCEL_DISABLED 2
#define ITO_DROPIN_CANCEL_ASYNC 4
#define ITO_DROPIN_CANCEL_ACTING 8
ITO_DROPIN_API extern int ito__dropin_cancels;
ITO_DROPIN_API int ito__dropin_cancel(ito_thread_t h);
ITO_DROPIN_API int *ito__dropin_cancel_word(void);
/* pthread_join, a cancellation point: ito_join, except that a cancellation
 * request (enabled) ends the wait of a parked joiner, which then returns
 * ECANCELED and leaves the thread joinable. */
ITO_DROPIN_API int ito__dropin_join(ito_thread_t h, void **result);
/* Around a call that waits in the kernel where ito cannot park the calling
 * ito thread (glibc's waits on process-shared objects): its worker counts
 * as blocked at once, and extra workers start for such waits past
 * ITO_EXTRA_WORKERS (docs/monitor.md). wake (may be NULL) ends the wait for
 * a deferred cancellation: the monitor calls wake(obj) while one is due.
 * No-ops off a worker. */
ITO_DROPIN_API void ito__dropin_kwait_begin(void (*wake)(void *), void *obj);
/* The same for a lock or barrier wait of glibc's (no cancellation point,
 * no cleanup of glibc's own inside): a thread with an asynchronous
 * cancellation due acts inside it, as under glibc. */
ITO_DROPIN_API void ito__dropin_kwait_begin_lock(void);
ITO_DROPIN_API void ito__dropin_kwait_end(void);

/* fork (src/core/atfork.h): the library registers these with
 * pthread_atfork before the program can, so that its prepare runs last
 * and its parent and child first. They act only for an ito thread. */
/* CPU affinity of thread h (0: the root): the thread gets a home worker
 * bound to a CPU of the set (every worker is then bound, as ITO_BIND=1
 * does); a set with every CPU of the process takes the home away. The
 * calling thread moves at once, another when it is next made ready. 0,
 * ESRCH, EINVAL (no CPU of the process) or ENODEV (CPUs of the process,
 * but no worker runs on one: fewer workers than CPUs). get:
 * the home's CPU, or the process's CPUs. */
ITO_DROPIN_API int ito__dropin_affinity_set(ito_thread_t h, size_t size, const cpu_set_t *set);
ITO_DROPIN_API int ito__dropin_affinity_get(ito_thread_t h, size_t size, cpu_set_t *set);
/* The process's CPUs when the runtime started (starts it); 0 or an errno. */
ITO_DROPIN_API int ito__dropin_process_cpus(cpu_set_t *out);

/* CPU clocks (src/core/signal.h): cpuclock gives thread h's clock id (0:
 * the root), and turns the accounting on; 0 or ESRCH. cpuclock_read reads
 * one of those or CLOCK_THREAD_CPUTIME_ID for the calling ito thread: 0,
 * EINVAL (its thread is gone), or ENOENT (not ito's: libc's clock). */
ITO_DROPIN_API int ito__dropin_cpuclock(ito_thread_t h, clockid_t *out);
ITO_DROPIN_API int ito__dropin_cpuclock_read(clockid_t c, struct timespec *ts);

ITO_DROPIN_API void ito__dropin_atfork_prepare(void);
ITO_DROPIN_API void ito__dropin_atfork_parent(void);
ITO_DROPIN_API void ito__dropin_atfork_child(void);

/* A module was loaded or unloaded (the library's dlopen, dlclose): with
 * ITO_TLS=thread a new module's static TLS is initialised in every
 * thread's block, and an unloaded one's forgotten (src/core/tls.h); the
 * table of code that preemption avoids is rebuilt (src/core/preempt.h). */
ITO_DROPIN_API void ito__dropin_modules_changed(void);

/* Preemption (src/core/preempt.h, docs/monitor.md), before the runtime
 * starts: preempt_enable turns it on; all_threads makes every thread that
 * is not a task preemptible (the pthread library); cancel (or NULL) is
 * called, and does not return, in a thread whose asynchronous
 * cancellation is due, interrupted in the program's own code. After:
 * preemptible marks the calling ito thread (an OpenMP team member)
 * preemptible or not, and returns what it was. */
ITO_DROPIN_API void ito__dropin_preempt_enable(int all_threads, void (*cancel)(void));
ITO_DROPIN_API int ito__dropin_preemptible(int on);

/* ---- threads (threads.c) -------------------------------------------------------------------- */

/* Creation with pthread attributes. stacksize 0: the runtime's default
 * (ITO_STACK_SIZE), a pool stack; any other: a stack of that size of its
 * own (a guard page below it), kept for reuse when the thread is released; stackaddr: the caller's
 * memory [stackaddr, stackaddr + stacksize), which ito never frees. Returns 0, EAGAIN or EINVAL (a
 * stack address region under 16 KiB). The handle is written before the thread runs. Errno and the
 * C++ exception globals of the creator are kept across the call. */
struct ito_dropin_attr {
  size_t stacksize;
  void *stackaddr;
  int detached;
  int explicit_sched, policy, prio; /* an explicit scheduling attribute, kept for reading back */
  int has_sigmask;                  /* pthread_attr_setsigmask_np: the child's mask */
  uint64_t sigmask;
};
ITO_DROPIN_API int ito__dropin_create(ito_thread_t *out, const struct ito_dropin_attr *a,
                                      void *(*fn)(void *), void *arg);
/* Is h a live handle of a thread that is not the root? 0, ESRCH (stale
 * handle) or EINVAL (the root: it cannot be joined). */
ITO_DROPIN_API int ito__dropin_check(ito_thread_t h);
/* The same for a join or a detach: EINVAL, as glibc, for the handle of a
 * detached thread that has ended (until its descriptor is released by
 * another thread after it: then ESRCH). */
ITO_DROPIN_API int ito__dropin_check_join(ito_thread_t h);
/* What a thread keeps for the program to read back (ito schedules none
 * of it): its name ("" when never set), its scheduling policy and
 * priority, whether its creation named them, whether it is detached. */
struct ito_dropin_tattr {
  char name[16];
  int policy, prio, explicit_sched, detached;
  void *stack_lo; /* its stack, as pthread_getattr_np reports it */
  size_t stack_size;
};
/* h 0: the root (the program's main thread). 0 or ESRCH. */
ITO_DROPIN_API int ito__dropin_tattr_get(ito_thread_t h, struct ito_dropin_tattr *out);
/* Sets the name (name not NULL; at most 15 bytes kept) and/or the policy
 * and priority (policy_prio[0], [1]); h 0: the root. 0 or ESRCH. */
ITO_DROPIN_API int ito__dropin_tattr_set(ito_thread_t h, const char *name, const int *policy_prio);
/* Nonblocking join: EBUSY while the thread runs. */
ITO_DROPIN_API int ito__dropin_tryjoin(ito_thread_t h, void **result);
/* Is the caller the root (the program's main thread, adopted)? */
ITO_DROPIN_API int ito__dropin_is_root(void);
/* The stack of the calling ito thread: [*lo, *lo + *size); the caller's whole
 * region for a stack it gave. 0 or ESRCH. */
ITO_DROPIN_API int ito__dropin_stack(void **lo, size_t *size);
/* Threads other than the root still alive (created and not yet ended). */
ITO_DROPIN_API long ito__dropin_live(void);
/* Threads made through ito__dropin_create since the start. */
ITO_DROPIN_API unsigned long ito__dropin_created(void);
/* Pinning: while the count is above zero, the calling ito thread stays on
 * its OS thread. Its waits block the worker, it does not yield, and its
 * creates queue the child. Nests. */
ITO_DROPIN_API void ito__dropin_pin(void);
ITO_DROPIN_API void ito__dropin_unpin(void);
/* May the caller park (an ito thread, not pinned)? */
ITO_DROPIN_API int ito__dropin_can_park(void);

/* ---- tasks (tasks.c) ---------------------------------------------------------------------- */

/* A detached task: fn runs on a copy of size bytes of arg (aligned to
 * align; made by cpy(dst, arg) when cpy is given), at once on a fresh stack
 * when the caller is an ito thread (the caller's continuation can be
 * stolen meanwhile), else queued. The new stack's context word
 * (ito__dropin_ctx) starts as ctx, or as the copy's address when ctx is
 * ITO_DROPIN_CTX_COPY. 0 or EAGAIN (no memory: nothing ran). */
#define ITO_DROPIN_CTX_COPY ((void *)1)
ITO_DROPIN_API int ito__dropin_spawn(void (*fn)(void *), const void *arg, size_t size, size_t align,
                                     void (*cpy)(void *, void *), void *ctx);
/* Placement by data (docs/numa.md): placement by node is on (more than
 * one NUMA node in use; the runtime runs). */
ITO_DROPIN_API int ito__dropin_numa_on(void);
/* Placement by data for work the calling ito thread runs as a call (an
 * OpenMP task run by a member's strand): while placement by node is on,
 * moves the thread to a worker of node (>= 0) first when it runs on
 * another node and may move (no home, not pinned); with count, counts the
 * work in the profiler's placement counts as a task with data on node
 * would be (-1: none known). Does nothing while placement is off. */
ITO_DROPIN_API void ito__dropin_run_on_node(int node, int count);
/* Places (src/core/places.h; docs/numa.md): how many the runtime uses (0:
 * none), the kernel's CPU numbers of place i (at most max of them into
 * cpus; returns how many it has, -1 for no such place), and the place of
 * worker id (-1: none). Each starts the runtime if it does not run. */
ITO_DROPIN_API int ito__dropin_place_count(void);
ITO_DROPIN_API int ito__dropin_place_cpus(int place, int *cpus, int max);
ITO_DROPIN_API int ito__dropin_worker_place(int worker);
/* ito__dropin_spawn, queued for worker `home` (0 <= home <
 * ito_num_workers(), else EINVAL), where the task stays: see
 * ito__dropin_home. */
ITO_DROPIN_API int ito__dropin_spawn_home(int home, void (*fn)(void *), const void *arg,
                                          size_t size, size_t align, void (*cpy)(void *, void *),
                                          void *ctx);
/* Gives the calling ito thread a home worker (moving it there): from then
 * on it runs only there. It parks and is woken as before, but waits for its
 * home to take it; its creates queue the child rather than run it first
 * (which would let its own continuation be stolen). A fork continuation
 * (ito_tg_fork) taken by a thief still moves. home < 0 clears the home.
 * 0, ESRCH (not an ito thread) or EINVAL. */
ITO_DROPIN_API int ito__dropin_home(int home);
/* Before the runtime starts: the program's main thread, when the runtime
 * adopts it as the root, gets its own OS thread's worker (0) as its home,
 * so that outside what the library lets it leave (ito__dropin_home(-1),
 * then back) it runs only there and keeps its OS thread's identity
 * (pthread_self, gettid, its thread-local storage under worker TLS), as a
 * program that does not know of ito expects. Not where a library gives the
 * program's threads identities of their own (libito-pthread.so: signals
 * per thread). ito__dropin_root_stays() says whether the root got it. */
ITO_DROPIN_API void ito__dropin_root_stay(void);
ITO_DROPIN_API int ito__dropin_root_stays(void);
/* The context word of the code running now: one per stack, NULL on a fresh
 * one; a stolen fork continuation starts with NULL. NULL (no word) on a
 * thread that is not an ito thread. */
ITO_DROPIN_API void **ito__dropin_ctx(void);
/* The same word without a call, for a library's hot paths: where the
 * worker's address sits relative to the thread pointer (static TLS, the
 * same offset in every thread and in every lightweight thread's own TLS
 * block), and the offsets of the worker's running fiber and of that
 * fiber's word. Fixed once libito.so is loaded; ito__dropin_ctx_where
 * fills it (any time, before or after the runtime starts). */
struct ito_dropin_where {
  long tp_off;
  unsigned long cur_off, ctx_off;
};
ITO_DROPIN_API void ito__dropin_ctx_where(struct ito_dropin_where *out);
/* ito__dropin_ctx()'s answer from a filled ito_dropin_where. The thread
 * pointer and the worker are read afresh at each call (asm volatile): a
 * lightweight thread may have moved to another worker since the last one. */
static inline void **ito_dropin_ctx_at(const struct ito_dropin_where *where) {
  char *w;
#if defined(__x86_64__)
  __asm__ volatile("movq %%fs:(%1), %0" : "=r"(w) : "r"(where->tp_off));
#elif defined(__aarch64__)
  char *tp;
  __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
  w = *(char *volatile *)(tp + where->tp_off);
#else
  (void)where;
  return ito__dropin_ctx();
#endif
  if (!w) return (void **)0;
  char *f = *(char *volatile *)(w + where->cur_off);
  return f ? (void **)(f + where->ctx_off) : (void **)0;
}
/* Gives the pages of the free thread stacks back to the system (each
 * keeps its header page): the global pool's (the ITO_STACK_CACHE bytes
 * kept resident), the larger stacks' free lists, and the calling worker's
 * own cache, which goes to the pool. The other workers' caches (up to 64
 * stacks each) are theirs alone and stay. Returns the bytes released. */
ITO_DROPIN_API size_t ito__dropin_release_stacks(void);

/* ---- thread-local storage lent per thread (tasks.c; src/core/tls.h, invariant 5) -------------
 * With ITO_TLS=thread, a library may hold TLS blocks and lend them to its
 * threads: libito-omp.so gives each team member one (its threadprivate
 * variables), and each deferred task a snapshot of its creator's
 * (docs/openmp.md, "threadprivate"). */

/* Does the program have thread-local storage of its own (the executable
 * or a library other than the language runtimes and ito's)? Also before
 * the runtime starts. */
ITO_DROPIN_API int ito__dropin_tls_program(void);
/* Is ITO_TLS=thread in force (the runtime started with it, and did not
 * fall back to worker TLS)? Starts the runtime. */
ITO_DROPIN_API int ito__dropin_tls_on(void);
/* A block: a spare one as its last holder left it, or a fresh one. NULL
 * with worker TLS or no memory. free: back to the spares. */
ITO_DROPIN_API void *ito__dropin_tls_block(void);
ITO_DROPIN_API void ito__dropin_tls_free(void *block);
/* The calling ito thread runs on block from now on, wherever it runs
 * (NULL: on its worker's); returns the block it had. Not the root. It
 * must give the block back (NULL) before it ends. */
ITO_DROPIN_API void *ito__dropin_tls_use(void *block);

/* ---- waits (waits.c) ---------------------------------------------------------------------------
 * A queue is a spinlock word and a head and tail pointer anywhere in the
 * caller's objects. Waiters are lightweight threads (parked) and OS threads
 * (blocked on a futex) side by side, in FIFO order (src/core/waitq.h). */

/* Called with *qlock held: queues the caller with a tag, calls
 * locked(arg) if given (still under *qlock; a nonzero return takes the
 * caller off the queue, releases *qlock and is returned), then releases
 * *qlock and waits until a wake takes it or the deadline (abstime on clock,
 * CLOCK_REALTIME or CLOCK_MONOTONIC; NULL: none) passes. Returns 0 when
 * woken, ETIMEDOUT at the deadline, EINTR when tag has ITO_DROPIN_WQ_INTR
 * and a signal for the thread ended it (its handler has run); off the
 * queue in every case. */
#define ITO_DROPIN_WQ_INTR (1 << 30)
ITO_DROPIN_API int ito__dropin_wq_wait(int *qlock, void **head, void **tail, int tag,
                                       clockid_t clock, const struct timespec *abstime,
                                       int (*locked)(void *), void *arg);
/* Under *qlock: takes up to n waiters (n < 0: all) off the queue and
 * returns them as a list for ito__dropin_wq_wake. */
ITO_DROPIN_API void *ito__dropin_wq_take(void **head, void **tail, int n);
/* Under *qlock: takes the leading waiters whose tag equals tag; *n gets
 * their number. */
ITO_DROPIN_API void *ito__dropin_wq_take_tag(void **head, void **tail, int tag, int *n);
/* Under *qlock: the first waiter's tag, or -1 for an empty queue. */
ITO_DROPIN_API int ito__dropin_wq_head_tag(void *const *head);
/* After releasing the lock: wakes a list from ito__dropin_wq_take*. */
ITO_DROPIN_API void ito__dropin_wq_wake(void *list);
/* A lock word (0 free, 1 locked, 2 locked and maybe waited on) with a wait
 * queue, as ito_mutex_t keeps them: the contended lock (after the caller's
 * own compare-and-swap from 0 to 1 failed), with an optional deadline
 * (0, ETIMEDOUT, or EINVAL for a malformed abs; ECANCELED when the
 * caller's cancellation type is asynchronous and a request ended the wait:
 * the caller acts on it), and the unlock of a word found at 2 (the word
 * freed under the queue lock: an unlock that frees it itself, 1 to 0,
 * then waits for that lock to be free before it returns, core/sync.h). */
ITO_DROPIN_API int ito__dropin_lock_slow(int *state, int *qlock, void **head, void **tail,
                                         clockid_t clock, const struct timespec *abs);
ITO_DROPIN_API void ito__dropin_unlock_slow(int *state, int *qlock, void **head, void **tail);
/* A spin lock of the runtime's kind, with its rank in the lock order
 * (docs/locks.md; the values are core/base.h's LR_*, which Debug builds
 * check). */
enum {
  ITO_DROPIN_LR_MPI_TABLE = 4,
  ITO_DROPIN_LR_OMP_RING = 7,
  ITO_DROPIN_LR_QUEUE_OUTER = 9,
  ITO_DROPIN_LR_QUEUE = 10,
  ITO_DROPIN_LR_LEAF = 24,
};
ITO_DROPIN_API void ito__dropin_lock(int *qlock, int rank);
ITO_DROPIN_API void ito__dropin_unlock(int *qlock);
/* Sleeps until abstime on clock (CLOCK_REALTIME or CLOCK_MONOTONIC); an ito
 * thread parks on a timer. 0 or EINVAL. */
ITO_DROPIN_API int ito__dropin_sleep_until(clockid_t clock, const struct timespec *abstime);
/* libc's nanosleep, clock_nanosleep, usleep and sleep, for the calling
 * ito thread when it can park (ito__dropin_can_park; clock_nanosleep:
 * CLOCK_REALTIME and CLOCK_MONOTONIC only): it parks on a timer and its
 * worker runs other work. Arguments and results as libc's (nanosleep and
 * usleep: 0, or -1 with errno; clock_nanosleep: 0 or an error number;
 * sleep: the seconds left); a zero time yields; a signal handled by the
 * thread ends the sleep with EINTR and the time left. Every library that
 * interposes these calls (libito-pthread.so, libito-omp.so) hands them
 * here, so that with both loaded the program's call behaves the same
 * whichever definition it reaches. They are cancellation points, tested
 * by the interposer itself (ito__dropin_cancel_check) before the call and
 * after one a signal cut short. */
ITO_DROPIN_API int ito__dropin_nanosleep(const struct timespec *req, struct timespec *rem);
ITO_DROPIN_API int ito__dropin_clock_nanosleep(clockid_t clock, int flags,
                                               const struct timespec *req, struct timespec *rem);
ITO_DROPIN_API int ito__dropin_usleep(useconds_t us);
ITO_DROPIN_API unsigned ito__dropin_sleep(unsigned s);
/* The pthread library's cancellation point, set at its start (NULL
 * before, and without it): acts on a pending request the calling thread
 * has enabled, and then does not return. Another library's interposer of
 * a call that is a cancellation point (libito-omp.so's sleeps, when the
 * program's calls reach them first) calls it from its own frame, once
 * ito__dropin_cancels is set: the forced unwind of a cancellation ends at
 * the first frame of libito.so it meets. */
ITO_DROPIN_API extern void (*ito__dropin_cancel_check)(void);

/* ---- the program's view of its fds (fds.c; src/io/view.h, docs/io.md) -------------------
 * A library's fcntl, ioctl, dup, dup2, dup3, close_range and closefrom:
 * the call itself (made with syscall(2)), plus what the fd records need.
 * All return as libc does: the result, or -1 with errno. */
ITO_DROPIN_API int ito__dropin_getfl(int fd);
ITO_DROPIN_API int ito__dropin_setfl(int fd, int flags);
ITO_DROPIN_API int ito__dropin_fionbio(int fd, const int *on);
ITO_DROPIN_API int ito__dropin_dupfd(int oldfd, int cmd, int minfd);
ITO_DROPIN_API int ito__dropin_dup3(int oldfd, int newfd, int flags, int dup2);
ITO_DROPIN_API int ito__dropin_close_range(unsigned first, unsigned last, int flags);

#ifdef __cplusplus
}
#endif
#endif
