/* What signal.c, sigcall.c and sigroute.c share: the module's state and
 * helpers (signals per lightweight thread; invariants in signal.h).
 * Private to those files. */
#ifndef ITO_CORE_SIGNAL_INT_H
#define ITO_CORE_SIGNAL_INT_H

#include "signal.h"

#include "os.h"
#include "thread.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#define NSIG_K 64
#define NEVER_BLOCKED (SIGBIT(SIGKILL) | SIGBIT(SIGSTOP) | SIGBIT(32) | SIGBIT(33))
#define SYNCHRONOUS                                                                       \
  (SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) | SIGBIT(SIGILL) | SIGBIT(SIGTRAP) | \
   SIGBIT(SIGSYS))
#define ALL_ASYNC (~(NEVER_BLOCKED | SYNCHRONOUS))
/* A nudge: the signal ito sends to a worker to reach the thread it runs,
 * SI_QUEUE from our pid with the thread's address (64-byte aligned: its
 * fiber's start) and these low bits as its value (qemu-user drops
 * si_errno, so the mark is in the value) */
#define NUDGE_BITS 0x15UL
#define NUDGE_MASK 0x3fUL

static inline uint64_t set_bits(const sigset_t *s) {
  uint64_t m;
  memcpy(&m, s, sizeof m);
  return m;
}
static inline void bits_set(sigset_t *s, uint64_t m) {
  sigemptyset(s);
  memcpy(s, &m, sizeof m);
}
static inline int sys_mask(int how, uint64_t m, uint64_t *old) {
  return (int)ito__os.syscall(SYS_rt_sigprocmask, how, &m, old, (size_t)8);
}

/* What the program set through sigaction/signal; the kernel holds tramp
 * for each signal caught. Readers in a handler read the record whose
 * index is current (a signal changes its action rarely: two records,
 * written under its lock, switched by the index). */
struct sig_acts {
  struct sigaction rec[NSIG_K + 1][2];
  int cur[NSIG_K + 1];
  int known[NSIG_K + 1];
  /* signals whose kernel action is tramp: a handler's, and (once the
   * runtime runs) the default action's where it ends or stops the process;
   * the monitor takes them (invariant 6) */
  uint64_t taken;
  int dfl_on; /* the default actions that end or stop the process are taken */
  int lock;
};
extern struct sig_acts ito__sig_acts HIDDEN;

/* A thread's infos of its pending signals, one per signal (a second
 * instance of a real-time signal replaces the first's info: the bit is
 * what counts), allocated on first need and kept with the descriptor. */
struct sig_infos {
  siginfo_t info[NSIG_K + 1];
};

struct sig_route {
  uint64_t inbox; /* signals left by tramp for the monitor to route */
  siginfo_t info[NSIG_K + 1];
  uint64_t proc; /* pending for the process, in ito's hands */
  siginfo_t pinfo[NSIG_K + 1];
  int lock;             /* proc, pinfo, back, binfo, the sigwaiters */
  ithread *waiters[64]; /* threads in sigwait */
  int nwaiters;
  uint64_t back; /* signals of the process threads handed back, to route again */
  siginfo_t binfo[NSIG_K + 1];
  int in_tramp; /* handlers of ito's running now (sigpending waits) */
  int taking;   /* the monitor reads its signalfd (ito__sig_monitor_take) */
  int routing;  /* the monitor routes what it took */
};
extern struct sig_route ito__sig_rt HIDDEN;

/* Signals taken for their default action that no thread takes now (every
 * live thread blocks them): the monitor blocks them, and the kernel keeps
 * them pending for the process, where sigwait, a signalfd and sigpending
 * find them, until a thread that does not block one appears (it clears
 * the bit and pokes the monitor: invariant 6). */
extern uint64_t ito__sig_mon_held HIDDEN;

/* A thread does not block the signals of open: what the monitor holds back
 * among them it takes again. */
HIDDEN void ito__sig_unhold(uint64_t open);
/* The signals of the process among bits pending on t that t no longer
 * takes (it blocks them now, or its sigwait is over) go back to the
 * monitor, to be routed again (invariant 7). */
HIDDEN void ito__sig_give_back(struct ithread *t, uint64_t bits);
/* A signal of want (of those ito takes) sent to the process may be on its
 * way to ito: pending in the kernel, or taken by ito's handler and not yet
 * routed by the monitor. Waits for the monitor to route it, as the kernel
 * has a signal pending the moment kill returns. (One the kernel has
 * handed to a thread whose handler has not yet begun is not seen: that
 * thread may be preempted in between; docs/signals.md, "Limits".) */
HIDDEN void ito__sig_await(uint64_t want);
/* The signals of want pending for the process in ito's hands become t's.
 * Called once t published that it takes them (its mask, sig_live): with
 * the monitor's second look (route), one of the two sees the other. */
HIDDEN void ito__sig_claim_proc(struct ithread *t, uint64_t want);
/* t's infos of its pending signals, allocated on first need (NULL: no
 * memory; the bits still count). */
HIDDEN struct sig_infos *ito__sig_infos_of(struct ithread *t);
/* The program's action for sig (the kernel's where never set through
 * ito). */
HIDDEN void ito__sig_prog_rec(int sig, struct sigaction *out);
/* sig is asynchronous and its default action ends or stops the process. */
HIDDEN int ito__sig_dfl_acts(int sig);
/* Carries out sig's default action on this OS thread (async-signal-safe). */
HIDDEN void ito__sig_default_action(int sig);
/* This OS thread is the monitor; its mask then follows what ito takes
 * (invariant 6), which ito__sig_monitor_mask applies. */
extern __thread int ito__sig_on_monitor HIDDEN;
HIDDEN void ito__sig_monitor_mask(void);
/* Takes sig off t's pending set if it is there; the info into *si. */
HIDDEN int ito__sig_take_pending(struct ithread *t, int sig, siginfo_t *si);

#endif
