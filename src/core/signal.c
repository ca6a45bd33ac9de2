/* Signals per lightweight thread (invariants at the top of signal.h;
 * design in docs/signals.md).
 *
 * The kernel sees only OS threads. ito keeps per lightweight thread what
 * POSIX keeps per thread: the mask (applied to the worker's OS thread
 * while the thread runs), the signals sent to it (pthread_kill), and
 * delivery in its own context. For every signal the program catches the
 * kernel's handler is ito's (tramp): where the signal lands in a thread
 * that does not block it, the program's handler runs right there, as it
 * would natively; where it lands in a scheduler (a worker between
 * threads, or a thread whose mask the OS thread has not caught up with),
 * it is routed as the kernel would route it to a thread that wants it: a
 * thread in sigwait for it, else the main thread if it does not block it,
 * else it stays pending for the process, in ito's hands. Routing takes
 * locks, so the handler only leaves the signal in an inbox and pokes the
 * monitor thread, which routes it. */
#define _GNU_SOURCE
#include "signal_int.h"

#include "forkpart.h"
#include "observe.h"
#include "fiber.h"
#include "handle.h"
#include "monitor.h"
#include "os.h"
#include "preempt.h"
#include "runtime.h"
#include "sched.h"
#include "thread.h"
#include "wait.h"
#include "worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

int ito__sig_on;
int ito__segv_installed;

/* ---- the program's actions ------------------------------------------------------------- */

struct sig_acts ito__sig_acts;

static void tramp(int sig, siginfo_t *si, void *uc);

static int default_ignored(int sig) {
  return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}

/* An asynchronous signal whose default action ends or stops the process:
 * ito takes it once the runtime runs, so that the process ends or stops
 * whatever its threads are doing (a parked thread has no OS thread for
 * the kernel to act through). */
int ito__sig_dfl_acts(int sig) { return (SIGBIT(sig) & ALL_ASYNC) && !default_ignored(sig); }

static int is_handler(const struct sigaction *a) {
  return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* Whether ito's handler is the kernel's for the program's action a. */
static int takes(int sig, const struct sigaction *a) {
  return is_handler(a) ||
         (a->sa_handler == SIG_DFL && LOAD_ACQ(&ito__sig_acts.dfl_on) && ito__sig_dfl_acts(sig));
}

/* The kernel's action for a program's action a that ito takes: tramp with
 * the handler's flags and mask (a default action: restarting, so that a
 * signal routed away from an OS thread does not cut its call short). */
static void kernel_action(int sig, const struct sigaction *a, struct sigaction *k) {
  *k = *a;
  if (!is_handler(a)) {
    memset(k, 0, sizeof *k);
    k->sa_flags = SA_RESTART;
    sigemptyset(&k->sa_mask);
  }
  (void)sig;
  k->sa_sigaction = tramp;
  /* SA_RESETHAND is carried out by run_action, for the program's record
   * and the kernel's action at once: the kernel's own reset would leave
   * SIG_DFL in the kernel while ito still routes the signal (a signal
   * routed to another OS thread then ends the process) */
  k->sa_flags = (k->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
}

void ito__sig_prog_rec(int sig, struct sigaction *out) {
  /* never set through ito: the kernel's is the program's */
  if (!LOAD_ACQ(&ito__sig_acts.known[sig])) {
    ito__os.sigaction(sig, NULL, out);
    return;
  }
  *out = ito__sig_acts.rec[sig][LOAD_ACQ(&ito__sig_acts.cur[sig])];
}

static void set_prog_action(int sig, const struct sigaction *a) {
  int next = !ito__sig_acts.cur[sig];
  ito__sig_acts.rec[sig][next] = *a;
  STORE_REL(&ito__sig_acts.cur[sig], next);
  STORE_REL(&ito__sig_acts.known[sig], 1);
  uint64_t c = LOAD_RLX(&ito__sig_acts.taken);
  if (takes(sig, a))
    c |= SIGBIT(sig);
  else
    c &= ~SIGBIT(sig);
  STORE_REL(&ito__sig_acts.taken, c);
}

/* The actions' lock is held with every asynchronous signal blocked on the
 * OS thread: ito's handler takes it too (an action with SA_RESETHAND), and
 * a signal landing on the thread that holds it would spin for ever on its
 * own lock. Returns the mask to restore. */
static uint64_t acts_lock(void) {
  uint64_t old = 0;
  sys_mask(SIG_BLOCK, ALL_ASYNC, &old);
  spin_lock(&ito__sig_acts.lock, LR_SIG_ACTS);
  return old;
}

static void acts_unlock(uint64_t old) {
  spin_unlock(&ito__sig_acts.lock);
  sys_mask(SIG_SETMASK, old, NULL);
}

int ito__sig_action(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig < 1 || sig > NSIG_K || SIG_GLIBC_OWN(sig) || (act && (sig == SIGKILL || sig == SIGSTOP)))
    return EINVAL;
  uint64_t mask = acts_lock();
  struct sigaction prev;
  ito__sig_prog_rec(sig, &prev);
  if (act && (sig == SIGSEGV || sig == SIGBUS) && LOAD_ACQ(&ito__segv_installed)) {
    /* ito's overflow handler stays first and chains to this one */
    set_prog_action(sig, act);
    act = NULL;
  }
  if (act) {
    struct sigaction k = *act;
    if (takes(sig, act)) kernel_action(sig, act, &k);
    if (ito__os.sigaction(sig, &k, NULL) != 0) {
      int e = errno;
      acts_unlock(mask);
      return e;
    }
    set_prog_action(sig, act);
  }
  acts_unlock(mask);
  if (old) *old = prev;
  if (act && ito__running()) ito__monitor_poke(); /* it takes what is taken (invariant 6) */
  return 0;
}

static void sig_runtime_start(void) {
  if (!ito__sig_on || LOAD_ACQ(&ito__sig_acts.dfl_on)) return;
  uint64_t mask = acts_lock();
  STORE_REL(&ito__sig_acts.dfl_on, 1);
  for (int sig = 1; sig <= NSIG_K; sig++) {
    if (!ito__sig_dfl_acts(sig)) continue;
    struct sigaction a, k;
    ito__sig_prog_rec(sig, &a);
    if (a.sa_handler != SIG_DFL) continue;
    kernel_action(sig, &a, &k);
    if (ito__os.sigaction(sig, &k, NULL) == 0) set_prog_action(sig, &a);
  }
  acts_unlock(mask);
}
ITO_OBSERVE(sig_at_launched, OBSERVE_LAUNCHED, OBS_SIGNALS, sig_runtime_start);

int ito__sig_prog_action(int sig, struct sigaction *out) {
  if (sig < 1 || sig > NSIG_K || !LOAD_ACQ(&ito__sig_acts.known[sig])) return 0;
  *out = ito__sig_acts.rec[sig][LOAD_ACQ(&ito__sig_acts.cur[sig])];
  return 1;
}

/* The default action of sig, for a signal a thread takes (it was not
 * blocked there): nothing, stop the process, or end it as the kernel
 * would: the signal raised on this OS thread with the kernel's default
 * action and unblocked, so that the process ends (with a core where the
 * action says so) or stops by that very signal. A stop comes back here
 * at SIGCONT, and ito's handler is the kernel's again. Async-signal-safe. */
void ito__sig_default_action(int sig) {
  if (default_ignored(sig)) return;
  struct sigaction d, mine;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  ito__os.sigaction(sig, &d, &mine);
  uint64_t old = 0;
  sys_mask(SIG_UNBLOCK, SIGBIT(sig), &old);
  ito__os.syscall(SYS_tgkill, getpid(), ito__os.syscall(SYS_gettid), sig);
  /* a stop, continued (or a signal the kernel discarded: a stop for an
   * orphaned process group) */
  sys_mask(SIG_SETMASK, old, NULL);
  struct sigaction a;
  ito__sig_prog_rec(sig, &a);
  if (a.sa_handler == SIG_DFL && (SIGBIT(sig) & LOAD_ACQ(&ito__sig_acts.taken)))
    ito__os.sigaction(sig, &mine, NULL);
}

/* ---- per-thread state -------------------------------------------------------------------- */

struct sig_infos *ito__sig_infos_of(ithread *t) {
  struct sig_infos *p = LOAD_ACQ(&t->siginfo);
  if (p) return p;
  p = calloc(1, sizeof *p);
  if (!p) return NULL;
  struct sig_infos *none = NULL;
  if (!__atomic_compare_exchange_n(&t->siginfo, &none, p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    free(p);
    return none;
  }
  return p;
}

void ito__sig_enable(void) {
  ito__sig_on = 1;
  ito__posix_update();
}

void ito__sig_apply(worker *w, uint64_t m) {
  ITO_ASSERT(w == cur_worker()); /* invariant 1: the mask is this OS thread's */
  m &= ~NEVER_BLOCKED;
  sys_mask(SIG_SETMASK, m, NULL);
  w->os_sigmask = m;
}

__thread int ito__sig_on_monitor;
static uint64_t monitor_lets; /* what the monitor's mask lets through now */
uint64_t ito__sig_mon_held;
static int mon_sfd = -1; /* the monitor's signalfd (the runtime's descriptor), or -1 */
static int mon_by_fd;    /* the monitor takes signals through it, not through tramp */

static uint64_t monitor_lets_now(void) {
  return LOAD_ACQ(&ito__sig_acts.taken) & ~__atomic_load_n(&ito__sig_mon_held, __ATOMIC_SEQ_CST);
}

/* What the monitor takes follows what ito takes (invariant 6): its
 * signalfd's mask (its OS mask blocks them all), or its OS mask. */
static void monitor_lets_apply(uint64_t l) {
  if (mon_by_fd)
    ito__os.syscall(SYS_signalfd4, mon_sfd, &l, (size_t)8, SFD_CLOEXEC | SFD_NONBLOCK);
  else
    sys_mask(SIG_SETMASK, ALL_ASYNC & ~l, NULL);
}

void ito__sig_monitor_mask(void) {
  uint64_t l = monitor_lets_now();
  if (l == monitor_lets) return;
  monitor_lets = l;
  monitor_lets_apply(l);
}

int ito__sig_monitor_fd(void) {
  if (!ito__sig_on) return -1;
  if (mon_sfd < 0) {
    uint64_t none = 0;
    int fd = (int)ito__os.syscall(SYS_signalfd4, -1, &none, (size_t)8, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd >= 0) mon_sfd = ito__own_fd_take(fd);
  }
  return mon_sfd;
}

/* A signalfd's record as the siginfo_t a handler gets: the fields of the
 * signal's kind (a timer's, a child's, I/O's, else a sender's). */
static void info_of(const struct signalfd_siginfo *r, siginfo_t *si) {
  memset(si, 0, sizeof *si);
  si->si_signo = (int)r->ssi_signo;
  si->si_errno = r->ssi_errno;
  si->si_code = r->ssi_code;
  if (r->ssi_code == SI_TIMER) {
    si->si_timerid = (int)r->ssi_tid;
    si->si_overrun = (int)r->ssi_overrun;
    si->si_value.sival_ptr = (void *)(uintptr_t)r->ssi_ptr;
  } else if (r->ssi_signo == SIGCHLD && r->ssi_code > 0) {
    si->si_pid = (pid_t)r->ssi_pid;
    si->si_uid = (uid_t)r->ssi_uid;
    si->si_status = r->ssi_status;
    si->si_utime = (clock_t)r->ssi_utime;
    si->si_stime = (clock_t)r->ssi_stime;
  } else if (r->ssi_signo == SIGIO && r->ssi_code > 0) {
    si->si_band = r->ssi_band;
    si->si_fd = r->ssi_fd;
  } else {
    si->si_pid = (pid_t)r->ssi_pid;
    si->si_uid = (uid_t)r->ssi_uid;
    si->si_value.sival_ptr = (void *)(uintptr_t)r->ssi_ptr;
  }
}

int ito__sig_monitor_take(void) {
  if (!mon_by_fd) return 0;
  /* invariant 7: marked before the kernel hands a signal over, unmarked
   * once it is in the inbox; a thread that did not see it pending in the
   * kernel sees the mark or the inbox (ito__sig_await) */
  __atomic_store_n(&ito__sig_rt.taking, 1, __ATOMIC_SEQ_CST);
  full_fence();
  int n = 0;
  struct signalfd_siginfo r[8];
  for (;;) {
    long got = ito__os.syscall(SYS_read, mon_sfd, r, sizeof r);
    if (got < (long)sizeof r[0]) break;
    for (long i = 0; i < got / (long)sizeof r[0]; i++, n++) {
      int sig = (int)r[i].ssi_signo;
      if (sig < 1 || sig > NSIG_K) continue;
      info_of(&r[i], &ito__sig_rt.info[sig]);
      __atomic_fetch_or(&ito__sig_rt.inbox, SIGBIT(sig), __ATOMIC_RELEASE);
    }
  }
  __atomic_store_n(&ito__sig_rt.taking, 0, __ATOMIC_SEQ_CST);
  return n;
}

/* A thread does not block the signals of open (it is new, or unblocked
 * them), after it published that (sig_live, sigmask): what the monitor
 * holds back among them it takes again. The monitor sets a bit before it
 * looks for a thread that takes the signal, so that one of the two sees
 * the other. */
void ito__sig_unhold(uint64_t open) {
  if (UNLIKELY(__atomic_load_n(&ito__sig_mon_held, __ATOMIC_SEQ_CST) & open)) {
    __atomic_fetch_and(&ito__sig_mon_held, ~open, __ATOMIC_SEQ_CST);
    ito__monitor_poke();
  }
}

void ito__sig_idle(worker *w) {
  if (w->os_sigmask != ALL_ASYNC) ito__sig_apply(w, ALL_ASYNC);
}

void ito__sig_monitor_start(bool by_fd) {
  ito__sig_on_monitor = 1;
  mon_by_fd = by_fd && mon_sfd >= 0;
  monitor_lets = ito__sig_on ? monitor_lets_now() : 0;
  if (mon_by_fd) sys_mask(SIG_SETMASK, ALL_ASYNC, NULL);
  monitor_lets_apply(monitor_lets);
}

static void worker_start(worker *w, ithread *root) {
  if (!ito__sig_on) return;
  if (root) { /* the main thread's mask is the root thread's */
    uint64_t m = 0;
    sys_mask(SIG_BLOCK, 0, &m);
    w->os_sigmask = m;
    root->sigmask = root->osmask = m;
    STORE_REL(&root->sig_live, 1);
    return;
  }
  ito__sig_apply(w, ALL_ASYNC); /* invariant 1: no thread yet */
}

static void sig_at_worker(void) {
  worker *w = cur_worker();
  worker_start(w, w->cur ? w->cur->thread : NULL);
}
ITO_OBSERVE(sig_worker_observer, OBSERVE_WORKER, OBS_SIG_WORKER, sig_at_worker);

void ito__sig_thread_begin(ithread *t, const uint64_t *mask, bool takes_proc) {
  uint64_t m;
  worker *w;
  fiber *f;
  if (mask) {
    m = *mask & ~NEVER_BLOCKED;
  } else if ((w = cur_worker()) && (f = w->cur) && f->thread) {
    m = f->thread->sigmask;
  } else {
    m = 0;
    sys_mask(SIG_BLOCK, 0, &m);
  }
  t->sigmask = t->osmask = m;
  __atomic_store_n(&t->sig_live, 1, __ATOMIC_SEQ_CST);
  ito__sig_unhold(~m);
  /* a thread of the program's starts with what the process has pending
   * that it does not block, as a new thread of the kernel's takes it on
   * its way out to its first instruction (delivered at its entry) */
  if (!takes_proc) return;
  ito__sig_await(~m); /* (as in ito__sig_mask) */
  ito__sig_claim_proc(t, ~m);
}

void ito__sig_thread_release(ithread *t) {
  /* under ilock: pend_proc's look at a descriptor it chose earlier sees it
   * whole, released or made again (invariant 7) */
  spin_lock(&t->ilock, LR_ILOCK);
  STORE_REL(&t->sig_live, 0);
  t->sigmask = t->osmask = 0;
  STORE_RLX(&t->sigpend, 0);
  STORE_RLX(&t->sigproc, 0);
  t->sig_closed = 0;
  t->sigwaitset = 0;
  spin_unlock(&t->ilock);
  t->cancel = 0;
  t->cpu_ns = t->cpu_in = 0;
  t->sig_last = 0;
  t->sig_self = 0;
}

/* ---- delivery ------------------------------------------------------------------------------ */

/* Takes sig off t's pending set if it is there; the info into *si. */
int ito__sig_take_pending(ithread *t, int sig, siginfo_t *si) {
  uint64_t b = SIGBIT(sig);
  if (!(__atomic_fetch_and(&t->sigpend, ~b, __ATOMIC_ACQ_REL) & b)) return 0;
  __atomic_fetch_and(&t->sigproc, ~b, __ATOMIC_RELAXED);
  struct sig_infos *p = LOAD_ACQ(&t->siginfo);
  if (p) {
    *si = p->info[sig];
  } else {
    memset(si, 0, sizeof *si);
    si->si_signo = sig;
    si->si_code = SI_TKILL;
  }
  return 1;
}

/* Runs the program's action for sig on the running thread t. kernel: the
 * kernel already applied the handler's mask (tramp) and uc is its
 * context. Otherwise ito widens the thread's mask for the handler and
 * narrows it again after; frame: the OS mask of the kernel frame this runs
 * in (tramp), 0 outside one, which the OS thread keeps until the frame
 * returns: a signal of the same kind that lands there would nest a frame
 * per signal on the thread's stack. Returns 0 (nothing ran), 1 (a handler
 * with SA_RESTART ran), 2 (a handler without). */
static int run_action(ithread *t, int sig, siginfo_t *si, void *uc, int kernel, uint64_t frame) {
  struct sigaction a;
  ito__sig_prog_rec(sig, &a);
  if (a.sa_handler == SIG_IGN) return 0;
  if (a.sa_handler == SIG_DFL) {
    ito__sig_default_action(sig);
    return 0;
  }
  if (a.sa_flags & SA_RESETHAND) {
    struct sigaction d, k;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    k = d;
    uint64_t mask = acts_lock();
    if (takes(sig, &d)) kernel_action(sig, &d, &k);
    ito__os.sigaction(sig, &k, NULL);
    set_prog_action(sig, &d);
    acts_unlock(mask);
  }
  uint64_t old = t ? t->sigmask : 0, oldos = t ? t->osmask : 0;
  ucontext_t here;
  if (!kernel && t) {
    t->sigmask = old | set_bits(&a.sa_mask) | ((a.sa_flags & SA_NODEFER) ? 0 : SIGBIT(sig));
    t->osmask = oldos | t->sigmask;
    ito__sig_apply(cur_worker(), t->osmask);
    if (!uc) {
      getcontext(&here);
      uc = &here;
    }
  }
  if (a.sa_flags & SA_SIGINFO)
    a.sa_sigaction(sig, si, uc);
  else
    a.sa_handler(sig);
  if (!kernel && t) {
    t->sigmask = old;
    t->osmask = oldos;
    ito__sig_apply(cur_worker(), oldos | frame); /* (the handler may have parked: the worker now) */
  }
  return (a.sa_flags & SA_RESTART) ? 1 : 2;
}

/* The running thread's deliverable pending signals, lowest first. */
static int deliver_pending(ithread *t, void *uc, uint64_t frame) {
  int res = 0;
  uint64_t ready;
  while ((ready = LOAD_ACQ(&t->sigpend) & ~t->sigmask) != 0) {
    int sig = __builtin_ctzll(ready) + 1;
    siginfo_t si;
    if (!ito__sig_take_pending(t, sig, &si)) continue;
    ITO_ASSERT(!(SIGBIT(sig) & t->sigmask)); /* invariant 3 */
    int r = run_action(t, sig, &si, uc, 0, frame);
    if (r > res) res = r;
  }
  return res;
}

int ito__sig_deliver(void) {
  ithread *t = running_thread(cur_worker());
  if (!t) return 0;
  int r = deliver_pending(t, NULL, 0);
  if (r) t->sig_last = r;
  return r;
}

int ito__sig_restartable(void) {
  ithread *t = running_thread(cur_worker());
  return t && t->sig_last == 1;
}

/* ---- interruptible waits ------------------------------------------------------------------- */

int ito__sig_park_begin(ithread *t, struct sig_intr *reg) {
  ITO_ASSERT(t == running_thread(cur_worker())); /* a thread registers its own wait */
  t->sig_last = 0;
  spin_lock(&t->ilock, LR_ILOCK);
  ITO_ASSERT(!t->intr); /* one wait at a time (invariant 5) */
  t->intr = reg;
  spin_unlock(&t->ilock);
  if (LOAD_ACQ(&t->sigpend) & (~t->sigmask | t->sigwaitset)) return 1;
  /* a cancellation request ends one wait (the drop-in acts on it when the
   * call returns); a loop of the runtime's own that waits again parks */
  int c = LOAD_ACQ(&t->cancel);
  if ((c & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_ACTING | CANCEL_SEEN)) == CANCEL_PENDING) {
    __atomic_fetch_or(&t->cancel, CANCEL_SEEN, __ATOMIC_ACQ_REL);
    return 1;
  }
  return 0;
}

void ito__sig_park_end(ithread *t) {
  spin_lock(&t->ilock, LR_ILOCK);
  ITO_ASSERT(t->intr); /* (after its ito__sig_park_begin) */
  t->intr = NULL;
  spin_unlock(&t->ilock);
  while (LOAD_ACQ(&t->iflight)) cpu_relax(); /* invariant 5 */
}

/* Threads that had a signal to see while they were neither parked nor
 * running (ready, or switching in: the check a thread makes as it resumes
 * may have come just before the bit), looked at again by the monitor
 * until they have taken it, so that it is seen within a bounded delay. */
static struct {
  int lock;
  int n;
  ithread *t[16];
} late;

/* The worker running t takes a nudge for its lowest deliverable signal
 * (its handler is tramp): 1 if one was sent or nothing is left to see. A
 * cancellation alone waits for the thread's next cancellation point. Not
 * running: with keep, t goes to the late list and the monitor is poked. */
static int nudge(ithread *t, int keep) {
  uint64_t ready = LOAD_ACQ(&t->sigpend) & ~t->sigmask;
  if (!ready) return 1;
  worker *w = ito__worker_running(t);
  if (w) {
    int sig = __builtin_ctzll(ready) + 1;
    ito__queue_signal(w->os_tid, sig, (void *)((uintptr_t)t | NUDGE_BITS));
    return 1;
  }
  if (!keep) return 0;
  spin_lock(&late.lock, LR_LATE);
  int i;
  for (i = 0; i < late.n && late.t[i] != t; i++) {
  }
  if (i == late.n && late.n < (int)(sizeof late.t / sizeof late.t[0])) late.t[late.n++] = t;
  spin_unlock(&late.lock);
  ito__monitor_poke();
  return 0;
}

int ito__sig_late(void) {
  if (!LOAD_ACQ(&late.n)) return 0;
  spin_lock(&late.lock, LR_LATE);
  int k = 0;
  for (int i = 0; i < late.n; i++) {
    ithread *t = late.t[i];
    /* parked meanwhile: its wait ends (sig_alert); else a nudge if it runs */
    spin_lock(&t->ilock, LR_ILOCK);
    int parked = t->intr != NULL || t->joining != NULL;
    spin_unlock(&t->ilock);
    if (!LOAD_ACQ(&t->sig_live) || (!parked && nudge(t, 0))) continue;
    if (parked) {
      spin_unlock(&late.lock);
      ito__sig_alert(t);
      spin_lock(&late.lock, LR_LATE);
      continue;
    }
    late.t[k++] = t;
  }
  late.n = k;
  spin_unlock(&late.lock);
  return k;
}

/* t has a signal it must see now: its interruptible wait ends (EINTR), or
 * the worker running it is nudged. */
void ito__sig_alert(ithread *t) {
  spin_lock(&t->ilock, LR_ILOCK);
  struct sig_intr *reg = t->intr;
  /* a count: two senders may work on one registration at once, and the
   * parker leaves only when the last is done with it (invariant 5) */
  if (reg) __atomic_fetch_add(&t->iflight, 1, __ATOMIC_RELAXED);
  spin_unlock(&t->ilock);
  if (reg) {
    ito__wq_interrupt(reg->qlock, reg->head, reg->tail, reg->wt);
    __atomic_fetch_sub(&t->iflight, 1, __ATOMIC_RELEASE);
    return;
  }
  /* parked in a join: it leaves it for its handler, then joins again */
  if ((LOAD_ACQ(&t->sigpend) & ~t->sigmask) && ito__join_signal(t)) return;
  /* running? the worker that runs it takes a nudge (if it has moved on
   * meanwhile, it sees its pending set at its next wait) */
  nudge(t, 1);
}

/* Makes sig pending on t with info si. */
static void pend(ithread *t, int sig, const siginfo_t *si) {
  struct sig_infos *p = ito__sig_infos_of(t);
  if (p) p->info[sig] = *si;
  __atomic_fetch_or(&t->sigpend, SIGBIT(sig), __ATOMIC_ACQ_REL);
  if ((SIGBIT(sig) & ~t->sigmask) || (SIGBIT(sig) & LOAD_ACQ(&t->sigwaitset))) ito__sig_alert(t);
}

int ito__sig_send(ithread *t, int sig, const union sigval *value) {
  if (sig < 0 || sig > NSIG_K || SIG_GLIBC_OWN(sig)) return EINVAL;
  if (sig == 0) return 0;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = sig;
  si.si_code = value ? SI_QUEUE : SI_TKILL;
  si.si_pid = getpid();
  si.si_uid = getuid();
  if (value) si.si_value = *value;
  uint64_t b = SIGBIT(sig);
  if (!(t->sigmask & b) && !(LOAD_ACQ(&t->sigwaitset) & b)) {
    struct sigaction a;
    ito__sig_prog_rec(sig, &a);
    if (a.sa_handler == SIG_IGN || (a.sa_handler == SIG_DFL && default_ignored(sig)))
      return 0;                    /* discarded, as the kernel does */
    if (a.sa_handler == SIG_DFL) { /* the process stops or ends: from here as well */
      ito__sig_default_action(sig);
      return 0;
    }
  }
  pend(t, sig, &si);
  return 0;
}

/* ---- the kernel's handler ---------------------------------------------------- */

/* The stack pointer of the code a signal interrupted (uc: the kernel's
 * context), or NULL. */
static char *interrupted_sp(const void *uc) {
  if (!uc) return NULL;
  const ucontext_t *c = uc;
#if defined(__x86_64__)
  return (char *)c->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (char *)c->uc_mcontext.sp;
#else
  return NULL;
#endif
}

/* The signal landed in f's own context: the code it interrupted runs on
 * f's stack (the handler may run on an alternate stack, SA_ONSTACK), or
 * the handler's frame is there. */
static int in_context_of(fiber *f, const void *uc) {
  if (!f) return 0;
  char *sp = interrupted_sp(uc);
  if (sp && sp >= f->lo && sp < f->hi) return 1;
  sp = __builtin_frame_address(0);
  return sp >= f->lo && sp < f->hi;
}

/* Before tramp's frame of a thread that was on worker w returns: its
 * rt_sigreturn restores the mask and alternate stack the frame saved. A
 * handler that parked may have resumed on another worker (another OS
 * thread): the frame then takes that one's alternate stack (preempt.h,
 * invariant 4), and the worker's mask is the saved one again once the
 * frame returns (signal.h, invariant 1). */
static void frame_return(worker *w, void *uc) {
  worker *now = cur_worker();
  if (!now) return;
  if (now != w) ito__frame_adopt_stack(uc);
  uint64_t m;
  memcpy(&m, &((ucontext_t *)uc)->uc_sigmask, sizeof m);
  now->os_sigmask = m & ~NEVER_BLOCKED;
}

static void tramp(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  __atomic_add_fetch(&ito__sig_rt.in_tramp, 1, __ATOMIC_ACQ_REL);
  worker *w = cur_worker();
  fiber *f = w ? w->cur : NULL;
  ithread *t = f && in_context_of(f, uc) ? f->thread : NULL;
  if (t) f->in_handler++; /* never preempted inside this frame (preempt.h, invariant 3) */
  uintptr_t v = si ? (uintptr_t)si->si_value.sival_ptr : 0;
  if (si && (v & NUDGE_MASK) == NUDGE_BITS && si->si_code == SI_QUEUE && si->si_pid == getpid()) {
    /* a nudge: the thread it is for, if it runs here, delivers */
    if (t && (uintptr_t)t == (v & ~NUDGE_MASK)) {
      uint64_t frame = 0;
      sys_mask(SIG_BLOCK, 0, &frame);
      deliver_pending(t, uc, frame);
      frame_return(w, uc);
    }
    if (t) f->in_handler--;
    __atomic_sub_fetch(&ito__sig_rt.in_tramp, 1, __ATOMIC_ACQ_REL);
    errno = saved;
    return;
  }
  if ((!w && !ito__sig_on_monitor) || (t && !(t->sigmask & SIGBIT(sig))) ||
      ((SIGBIT(sig) & SYNCHRONOUS) && si && si->si_code > 0)) {
    /* an OS thread of the program's own, a thread that takes it, or a
     * fault of the code running here (the kernel delivers it blocked or
     * not: it belongs to this context) */
    run_action(t, sig, si, uc, 1, 0);
    if (t) frame_return(w, uc);
  } else {
    /* routed by the monitor (it takes locks) */
    if (si) ito__sig_rt.info[sig] = *si;
    __atomic_fetch_or(&ito__sig_rt.inbox, SIGBIT(sig), __ATOMIC_RELEASE);
    ito__monitor_poke();
  }
  if (t) f->in_handler--;
  __atomic_sub_fetch(&ito__sig_rt.in_tramp, 1, __ATOMIC_ACQ_REL);
  errno = saved;
}

/* ---- fork ------------------------------------------------------------------------------------ */

static void sig_fork_lock(int take) {
  static uint64_t mask; /* (the child has its copy) */
  if (take)
    mask = acts_lock();
  else
    acts_unlock(mask);
}

static void sig_fork_child(worker *w, ithread *self) {
  (void)w;
  ito__sig_rt.lock = 0;
  ito__sig_rt.nwaiters = 0; /* the threads in sigwait were the parent's */
  STORE_RLX(&ito__sig_rt.inbox, 0);
  ito__sig_on_monitor = 0;
  late.lock = 0; /* (its threads were the parent's) */
  late.n = 0;
  /* a sender of the parent (another OS thread) may have held the forking
   * thread's ilock, or counted itself in its iflight, at the fork: in the
   * child it never lets go, and the first interruptible wait would spin */
  if (self) {
    self->ilock = 0;
    self->iflight = 0;
    self->intr = NULL;
  }
}
ITO_FORK_PART(sig_fork, .lock_rank = 16, .lock = sig_fork_lock, .child_order = FORK_SIGNALS,
              .child = sig_fork_child);
