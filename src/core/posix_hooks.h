/* What the scheduler asks of the process semantics the drop-in libraries
 * turn on (signals per thread, TLS per thread, preemption, set*id): the
 * calls and flags it uses, declared here, in the scheduler's layer, and
 * defined by the modules above it (signal.c, sigcall.c, tls.c,
 * preempt.c, setxid.c), whose own headers include this one. The
 * scheduler includes this header, never theirs. Each is the defining
 * module's: its invariants are in that module's header. */
#ifndef ITO_CORE_POSIX_HOOKS_H
#define ITO_CORE_POSIX_HOOKS_H

#include "base.h"

struct worker;
struct ithread;
struct fiber;
struct waiter;
struct sig_intr;

/* ---- the switch's hook (posix.c) -----------------------------------------------------------
 * ito__posix_on (switch.h) is nonzero exactly when ITO_TLS=thread is in
 * force (ito__tls_mode) or signals per thread are on (ito__sig_on); it is
 * recomputed by ito__posix_update wherever either changes, before any
 * worker runs a thread under the new setting. */
HIDDEN void ito__posix_update(void);

/* ---- signals (signal.h) ------------------------------------------------------------------- */
extern int ito__sig_on HIDDEN;
/* Before the monitor thread starts: the descriptor (a signalfd, the
 * runtime's own) through which it will take the signals of the process
 * ito takes, or -1 (signals per thread off, or no descriptor to be had:
 * ito's handler takes them on the monitor then). Kept across fork (a
 * signalfd reads the reader's own process). */
HIDDEN int ito__sig_monitor_fd(void);
/* The monitor thread starts (invariant 6); by_fd: it takes signals
 * through ito__sig_monitor_fd's descriptor. */
HIDDEN void ito__sig_monitor_start(bool by_fd);
/* The monitor's descriptor is readable: it takes what is there into the
 * routing's inbox; the number taken. */
HIDDEN int ito__sig_monitor_take(void);
/* w goes to sleep: it blocks every asynchronous signal (invariant 1), so
 * that a signal of the process reaches a running thread or the monitor. */
HIDDEN void ito__sig_idle(struct worker *w);
/* A new thread: its mask is *mask if not NULL, else its creator's. A
 * program's thread (takes_proc) takes what the process has pending that
 * it does not block; its entry delivers it. */
HIDDEN void ito__sig_thread_begin(struct ithread *t, const uint64_t *mask, bool takes_proc);
/* The running thread t has run the last of its code: it takes no more
 * signals, and those of the process pending on it go back (signal.h,
 * invariant 7). */
HIDDEN void ito__sig_thread_end(struct ithread *t);
/* A thread is released: what it still had pending is dropped. */
HIDDEN void ito__sig_thread_release(struct ithread *t);
/* The monitor looks again at threads that had a signal to see while they
 * were not running: the number still waiting (look again soon). */
HIDDEN int ito__sig_late(void);
/* The monitor routes what the kernel's handler left for it. */
HIDDEN void ito__sig_route_inbox(void);
/* Delivers the running thread's deliverable pending signals (their
 * handlers run here). Returns 0 if none was delivered, 1 if every one
 * delivered had SA_RESTART, 2 otherwise. */
HIDDEN int ito__sig_deliver(void);
/* Under *reg->qlock with the waiter queued: registers the wait; nonzero
 * if a deliverable signal is already pending (the caller then leaves the
 * queue and returns EINTR). */
HIDDEN int ito__sig_park_begin(struct ithread *t, struct sig_intr *reg);
/* After the wait, before the registration goes away. */
HIDDEN void ito__sig_park_end(struct ithread *t);

/* An interruptible wait's registration (ito__sig_park_begin). */
struct sig_intr {
  int *qlock;
  void **head, **tail;
  struct waiter *wt;
};

/* ---- TLS per thread (tls.h) --------------------------------------------------------------- */
/* ITO_TLS: 1 when threads have blocks of their own (set at each start,
 * after the checks of ito__tls_setup). */
extern int ito__tls_mode HIDDEN;
/* At each start of the runtime, before the workers: mode from ITO_TLS (its
 * row in tls.c);
 * falls back to worker TLS, with one line on stderr, where glibc's layout
 * is not the verified one or a sanitizer or Valgrind runs. */
HIDDEN void ito__tls_setup(void);
/* A thread starts on fiber f: f gets its block (made or reset). 0 or
 * EAGAIN (no memory). */
HIDDEN int ito__tls_thread_begin(struct fiber *f);
/* The thread on f ends, on its own stack with its block in force: its
 * thread_local destructors and locale. */
HIDDEN void ito__tls_thread_end(struct fiber *f);
/* The thread on f was released: its block is reset for the next thread
 * and no longer in force for f (invariant 3). */
HIDDEN void ito__tls_thread_release(struct fiber *f);

/* ---- preemption (preempt.h) --------------------------------------------------------------- */
/* At each start of the runtime (monitor start), if enabled: the table of
 * code that is not the program's and the handler. Returns whether the
 * handler is there; *slice_ns gets ITO_PREEMPT_MS in nanoseconds (0: no
 * time slices). */
HIDDEN bool ito__preempt_setup(long long *slice_ns);
/* The monitor, before it sends: the table is rebuilt if the loader loaded
 * or unloaded anything since (libc's own dlopen of NSS modules, libgcc_s,
 * gconv, or a library's without the pthread library's dlopen). */
HIDDEN void ito__preempt_refresh(void);
/* May t ever be preempted (a program thread or a team member)? */
HIDDEN bool ito__preemptible(const struct ithread *t);
/* The monitor asks worker w to preempt fiber f (it may have moved on: the
 * handler checks). */
HIDDEN void ito__preempt_send(struct worker *w, struct fiber *f);
/* t's cancellation is pending, enabled and asynchronous. */
HIDDEN bool ito__preempt_cancel_due(const struct ithread *t);
HIDDEN void ito__preempt_cancel(struct ithread *t);

/* ---- set*id (setxid.h) -------------------------------------------------------------------- */
HIDDEN void ito__setxid_unrepresent(void);

#endif
