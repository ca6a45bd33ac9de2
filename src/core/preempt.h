/* Preemption of program threads (preempt.c): a pthread or an OpenMP team
 * member that has run one time slice without a scheduling point while
 * other threads wait to run is made to yield by a signal to its worker.
 * The monitor decides (monitor.c); this module says which threads are
 * preemptible, sends the signal, and yields in its handler when the
 * interrupted code is the program's own. Fork-join tasks and the native
 * API's threads are never preempted. Design: docs/monitor.md,
 * "Preemption".
 *
 * Invariants:
 *  1. A thread is preempted only in its own context: the handler runs on
 *     its stack (never an alternate one), on the worker that runs it, and
 *     only for the fiber the signal names.
 *  2. The interrupted instruction is the program's: never inside libc, the
 *     dynamic linker, libgcc_s, the vDSO, a sanitizer's runtime or ito's
 *     own libraries (their code may hold locks tied to the OS thread, or
 *     ito's own state mid-change). Elsewhere the signal is a no-op and the
 *     monitor retries at its next tick. One exception, for acting only: an
 *     asynchronous cancellation due for a thread inside a lock or barrier
 *     wait of glibc's that the drop-in announced (KWAIT_ASYNC, monitor.h):
 *     glibc's own asynchronous cancellation acts there, and those waits
 *     keep no cleanup of glibc's; the announcement ends before the thread
 *     exits.
 *  3. A pinned thread, one inside a kernel signal frame of ito's (tramp),
 *     and one whose OS mask is not the one ito set for it are not
 *     preempted.
 *  4. A preempted thread resumes with the OS state of the worker it lands
 *     on: the signal frame's saved alternate stack and mask are rewritten
 *     to that worker's before the handler returns. With worker TLS it
 *     lands on the worker it left (its code may hold a TLS address).
 *  5. The handler returns through ito's own restorer (x86-64 and AArch64),
 *     never through a trampoline of the kernel's or an emulator's that the
 *     table of invariant 2 may not hold: a second signal that lands
 *     between the handler's return and its rt_sigreturn (the handler has
 *     SA_NODEFER) finds ito's code and is refused. The first signal may
 *     have been refused in ito's code that holds a lock; a yield there
 *     would park the thread with the lock held.
 *  6. A thread inside a call the runtime made to another object's code
 *     while holding its own state (fiber.callout: the C++ runtime's
 *     __cxa_get_globals in a switch, whose caller may hold a wait queue's
 *     lock and be queued as a waiter) is not preempted, wherever that code
 *     lies. The table of invariant 2 holds the C++ runtimes and the
 *     allocator's object too. */
#ifndef ITO_CORE_PREEMPT_H
#define ITO_CORE_PREEMPT_H

#include "base.h"
#include "posix_hooks.h"

struct worker;
struct fiber;
struct ithread;

/* The signal that carries preemption: glibc's SIGCANCEL, which a program
 * cannot catch, block or send with glibc's calls (ito's pthread_cancel
 * does not use it); marked, so that glibc's own use still reaches
 * glibc's handler. */
#define ITO_PREEMPT_SIG 32

/* Set by a drop-in library before the runtime starts: enabled, preemption
 * and asynchronous cancellation are possible (the signal's handler is
 * installed at start; the native API alone leaves the signal to glibc);
 * threads, every thread that is not a task is preemptible (pthreads,
 * main). */
extern int ito__preempt_enabled HIDDEN;
extern int ito__preempt_threads HIDDEN;

/* A signal frame (uc: its context) whose handler resumed on another OS
 * thread than the one it began on takes this OS thread's alternate stack,
 * which its rt_sigreturn restores (invariant 4). */
HIDDEN void ito__frame_adopt_stack(void *uc);
/* The loaded objects changed (dlopen, dlclose): the table is rebuilt. */
HIDDEN void ito__preempt_modules_changed(void);
/* Asynchronous cancellation (a drop-in library): act(), which does not
 * return, runs in the handler for a thread whose cancellation is pending,
 * enabled and asynchronous, where the interrupted code is the program's.
 * ito__preempt_cancel sends the signal to the worker running t, if any;
 * the monitor also sends it at each tick while such a thread runs. */
HIDDEN void ito__preempt_on_cancel(void (*act)(void));
/* In the child of a fork (atfork.c). */
/* The signal's handler is installed (not under ThreadSanitizer, nor on an
 * architecture without one). */
HIDDEN bool ito__preempt_ready(void);
/* Preemptions done and refused (interrupted code not the program's, or
 * not preemptible at that instant), since the start. For tests. */
HIDDEN void ito__preempt_counts(unsigned long *done, unsigned long *refused);

#endif
