/* Signals per lightweight thread (signal.c): each thread's mask, its own
 * pending signals, delivery in its own context, and waits a signal cuts
 * short. Off unless a drop-in library turns it on (ito__sig_on); the core
 * alone leaves signals to the OS threads. Design: docs/signals.md.
 *
 * Invariants:
 *  1. A worker's OS mask (w->os_sigmask) is the osmask of the thread it
 *     runs while a thread runs; in the scheduler it keeps the last one
 *     (lazy: no system call while masks are equal) until it sleeps. A
 *     worker that sleeps or has run no thread blocks every asynchronous
 *     signal.
 *  2. SIGKILL, SIGSTOP, glibc's two reserved signals (32, 33) and the
 *     synchronous ones (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS)
 *     are never blocked at the OS level by ito.
 *  3. A signal sent to a thread is in its pending set until it is
 *     delivered (its handler runs on that thread, in its context), taken
 *     by its sigwait, or discarded (ignored); it is never delivered while
 *     the thread's mask blocks it.
 *  4. A thread parked in an interruptible wait with a deliverable signal
 *     pending is woken with EINTR: the sender sets the pending bit before
 *     it reads the registration (both under the thread's ilock), and the
 *     parker registers before it reads the pending bits.
 *  5. A waiter's registration (intr) is only read under ilock, and the
 *     parker does not leave its wait while any interrupter works on it
 *     (iflight counts the interrupters that read it).
 *  6. The monitor takes exactly the signals ito takes (after a
 *     sigaction, once the monitor has run): those the program catches,
 *     and, once the runtime runs, those whose default action ends or
 *     stops the process, less the ones of these that no live thread takes
 *     (mon_held: each is pending in the kernel, and a thread that stops
 *     blocking one clears its bit and pokes the monitor). It takes them
 *     through its signalfd's mask (its OS mask blocks every one), or,
 *     where it has no descriptor, its OS mask lets them through to tramp.
 *     A signal of the process that every worker blocks reaches ito there,
 *     and is routed to a thread that takes it, as the kernel would; a
 *     default action is carried out there at once.
 *  7. A signal of the process is never lost: the monitor puts one that no
 *     thread takes where a thread that unblocks it or waits for it later
 *     looks (the process's pending set in ito's hands), then looks for a
 *     taker once more, so that one of the two sees the other; one routed
 *     to a thread that ends before it takes it goes back to the process
 *     (the thread's end closes it to routing under its ilock, and hands
 *     back its sigproc bits; so does a thread that blocks one again, or
 *     whose sigwait ends without it). Between the kernel and the inbox a
 *     signal is always in sight: the monitor marks (sig_rt.taking) before
 *     it reads its signalfd and unmarks once the inbox has what it read,
 *     so a thread that looks in the kernel's pending set, then at the
 *     mark and the inbox, sees one of the three (ito__sig_await). */
#ifndef ITO_CORE_SIGNAL_H
#define ITO_CORE_SIGNAL_H

#include "base.h"
#include "posix_hooks.h"

#include <signal.h>

struct worker;
struct ithread;
struct fiber;
struct waiter;

/* Set once ito's stack overflow handler (overflow.c) holds SIGSEGV and
 * SIGBUS: a program's handler for them set later is chained behind it. */
extern int ito__segv_installed HIDDEN;

/* glibc's own signals (SIGCANCEL and SIGSETXID, 32 and 33), which its
 * calls refuse to send or catch (EINVAL). */
#define SIG_GLIBC_OWN(s) ((s) == 32 || (s) == 33)

/* A signal number's bit in a 64-bit set (the kernel's layout). */
#define SIGBIT(s) (1ULL << ((s)-1))

/* Turns the machinery on, before the runtime starts (a drop-in library). */
HIDDEN void ito__sig_enable(void);

/* ---- for the runtime ---------------------------------------------------------------------- */
/* (A worker's OS thread starts: signal.c's observer sets its mask; the
 * adopted main thread keeps its mask, which becomes the root thread's.) */
/* (The runtime's start, before its monitor, observed in signal.c: the
 * default actions that end or stop the process become ito's to take,
 * invariant 6.) */
/* Sets the OS mask of w's thread to m (invariant 1). */
HIDDEN void ito__sig_apply(struct worker *w, uint64_t m);

/* After a wait a signal ended (EINTR): 1 if every handler that ran asked
 * for SA_RESTART (the call starts again), else 0. */
HIDDEN int ito__sig_restartable(void);

/* t must see a signal or a cancellation now: its interruptible wait ends
 * with EINTR, or the worker running it is nudged (signals only). */
HIDDEN void ito__sig_alert(struct ithread *t);

/* ---- interruptible waits (waitq.c) -------------------------------------------------------- */

/* ---- the calls a drop-in library makes ---------------------------------------------------- */
/* pthread_sigmask for the running ito thread: 0 or EINVAL. */
HIDDEN int ito__sig_mask(int how, const sigset_t *set, sigset_t *old);
/* pthread_kill / pthread_sigqueue to t (info NULL: SI_TKILL from us). */
HIDDEN int ito__sig_send(struct ithread *t, int sig, const union sigval *value);
/* sigaction: the program's action is kept; the kernel's handler is ito's. */
HIDDEN int ito__sig_action(int sig, const struct sigaction *act, struct sigaction *old);
/* The program's action for sig if it set one through ito__sig_action: 1
 * and *out; else 0. */
HIDDEN int ito__sig_prog_action(int sig, struct sigaction *out);
/* sigpending for the running ito thread. */
HIDDEN void ito__sig_pending(sigset_t *out);
/* A signal of set pending for the running thread or for the process as
 * ito holds it: taken, its number returned (info filled); 0 if none. */
HIDDEN int ito__sig_take(const sigset_t *set, siginfo_t *info);
/* The running thread waits in sigwait for set (NULL: the wait is over):
 * a signal of set sent to it or routed to the process wakes it. */
HIDDEN void ito__sig_waiting(const sigset_t *set);
/* sigsuspend for the running ito thread: -1 with EINTR once a signal was
 * delivered. */
HIDDEN int ito__sig_suspend(const sigset_t *mask);

#endif
