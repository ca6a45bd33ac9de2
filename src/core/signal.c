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
#include "signal.h"

#include "atfork.h"
#include "fiber.h"
#include "handle.h"
#include "monitor.h"
#include "overflow.h"
#include "os.h"
#include "runtime.h"
#include "sched.h"
#include "thread.h"
#include "wait.h"
#include "worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

int ito__sig_on;

#define NSIG_K 64
#define NEVER_BLOCKED (SIGBIT(SIGKILL) | SIGBIT(SIGSTOP) | SIGBIT(32) | SIGBIT(33))
#define SYNCHRONOUS                                                                              \
  (SIGBIT(SIGSEGV) | SIGBIT(SIGBUS) | SIGBIT(SIGFPE) | SIGBIT(SIGILL) | SIGBIT(SIGTRAP) |       \
   SIGBIT(SIGSYS))
#define ALL_ASYNC (~(NEVER_BLOCKED | SYNCHRONOUS))
/* A nudge: the signal ito sends to a worker to reach the thread it runs,
 * SI_QUEUE from our pid with the thread's address (64-byte aligned: its
 * fiber's start) and these low bits as its value (qemu-user drops
 * si_errno, so the mark is in the value) */
#define NUDGE_BITS 0x15UL
#define NUDGE_MASK 0x3fUL

static uint64_t set_bits(const sigset_t *s) {
  uint64_t m;
  memcpy(&m, s, sizeof m);
  return m;
}
static void bits_set(sigset_t *s, uint64_t m) {
  sigemptyset(s);
  memcpy(s, &m, sizeof m);
}
static int sys_mask(int how, uint64_t m, uint64_t *old) {
  return (int)ito__os.syscall(SYS_rt_sigprocmask, how, &m, old, (size_t)8);
}

/* ---- the program's actions ------------------------------------------------------------- */

/* What the program set through sigaction/signal; the kernel holds tramp
 * for each signal caught. Readers in a handler read the record whose
 * index is current (a signal changes its action rarely: two records,
 * written under act_lock, switched by the index). */
static struct {
  struct sigaction rec[NSIG_K + 1][2];
  int cur[NSIG_K + 1];
  int known[NSIG_K + 1];
  /* signals whose kernel action is tramp: a handler's, and (once the
   * runtime runs) the default action's where it ends or stops the process;
   * the monitor takes them (invariant 6) */
  uint64_t taken;
  int dfl_on; /* the default actions that end or stop the process are taken */
  int lock;
} acts;

static void tramp(int sig, siginfo_t *si, void *uc);

static int default_ignored(int sig) {
  return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}

/* An asynchronous signal whose default action ends or stops the process:
 * ito takes it once the runtime runs, so that the process ends or stops
 * whatever its threads are doing (a parked thread has no OS thread for
 * the kernel to act through). */
static int dfl_acts(int sig) {
  return (SIGBIT(sig) & ALL_ASYNC) && !default_ignored(sig);
}

static int is_handler(const struct sigaction *a) {
  return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* Whether ito's handler is the kernel's for the program's action a. */
static int takes(int sig, const struct sigaction *a) {
  return is_handler(a) || (a->sa_handler == SIG_DFL && LOAD_ACQ(&acts.dfl_on) && dfl_acts(sig));
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
  k->sa_flags |= SA_SIGINFO;
}

static void prog_action(int sig, struct sigaction *out) {
  if (!LOAD_ACQ(&acts.known[sig])) { /* never set through ito: the kernel's is the program's */
    ito__os.sigaction(sig, NULL, out);
    return;
  }
  *out = acts.rec[sig][LOAD_ACQ(&acts.cur[sig])];
}

static void set_prog_action(int sig, const struct sigaction *a) {
  int next = !acts.cur[sig];
  acts.rec[sig][next] = *a;
  STORE_REL(&acts.cur[sig], next);
  STORE_REL(&acts.known[sig], 1);
  uint64_t c = LOAD_RLX(&acts.taken);
  if (takes(sig, a))
    c |= SIGBIT(sig);
  else
    c &= ~SIGBIT(sig);
  STORE_REL(&acts.taken, c);
}

int ito__sig_action(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig < 1 || sig > NSIG_K || sig == 32 || sig == 33 ||
      (act && (sig == SIGKILL || sig == SIGSTOP)))
    return EINVAL;
  spin_lock(&acts.lock);
  struct sigaction prev;
  prog_action(sig, &prev);
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
      spin_unlock(&acts.lock);
      return e;
    }
    set_prog_action(sig, act);
  }
  spin_unlock(&acts.lock);
  if (old) *old = prev;
  if (act && ito__running()) ito__monitor_poke(); /* it takes what is taken (invariant 6) */
  return 0;
}

void ito__sig_runtime_start(void) {
  if (!ito__sig_on || LOAD_ACQ(&acts.dfl_on)) return;
  spin_lock(&acts.lock);
  STORE_REL(&acts.dfl_on, 1);
  for (int sig = 1; sig <= NSIG_K; sig++) {
    if (!dfl_acts(sig)) continue;
    struct sigaction a, k;
    prog_action(sig, &a);
    if (a.sa_handler != SIG_DFL) continue;
    kernel_action(sig, &a, &k);
    if (ito__os.sigaction(sig, &k, NULL) == 0) set_prog_action(sig, &a);
  }
  spin_unlock(&acts.lock);
}

int ito__sig_prog_action(int sig, struct sigaction *out) {
  if (sig < 1 || sig > NSIG_K || !LOAD_ACQ(&acts.known[sig])) return 0;
  *out = acts.rec[sig][LOAD_ACQ(&acts.cur[sig])];
  return 1;
}

/* The default action of sig, for a signal a thread takes (it was not
 * blocked there): nothing, stop the process, or end it as the kernel
 * would: the signal raised on this OS thread with the kernel's default
 * action and unblocked, so that the process ends (with a core where the
 * action says so) or stops by that very signal. A stop comes back here
 * at SIGCONT, and ito's handler is the kernel's again. Async-signal-safe. */
static void default_action(int sig) {
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
  prog_action(sig, &a);
  if (a.sa_handler == SIG_DFL && (SIGBIT(sig) & LOAD_ACQ(&acts.taken)))
    ito__os.sigaction(sig, &mine, NULL);
}

/* ---- per-thread state -------------------------------------------------------------------- */

/* A thread's infos of its pending signals, one per signal (a second
 * instance of a real-time signal replaces the first's info: the bit is
 * what counts), allocated on first need and kept with the descriptor. */
struct sig_infos {
  siginfo_t info[NSIG_K + 1];
};

static struct sig_infos *infos_of(ithread *t) {
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

void ito__sig_enable(void) { ito__sig_on = 1; }

void ito__sig_apply(worker *w, uint64_t m) {
  m &= ~NEVER_BLOCKED;
  sys_mask(SIG_SETMASK, m, NULL);
  w->os_sigmask = m;
}

static __thread int on_monitor; /* this OS thread is the monitor */
static uint64_t monitor_lets;    /* what the monitor's mask lets through now */
/* Signals taken for their default action that no thread takes now (every
 * live thread blocks them): the monitor blocks them, and the kernel keeps
 * them pending for the process, where sigwait, a signalfd and sigpending
 * find them, until a thread that does not block one appears (it clears
 * the bit and pokes the monitor: invariant 6). */
static uint64_t mon_held;

static uint64_t monitor_lets_now(void) {
  return LOAD_ACQ(&acts.taken) & ~__atomic_load_n(&mon_held, __ATOMIC_SEQ_CST);
}

/* The monitor's mask follows what it takes (invariant 6). */
static void monitor_mask_update(void) {
  uint64_t l = monitor_lets_now();
  if (l == monitor_lets) return;
  monitor_lets = l;
  sys_mask(SIG_SETMASK, ALL_ASYNC & ~l, NULL);
}

/* A thread does not block the signals of open (it is new, or unblocked
 * them), after it published that (sig_live, sigmask): what the monitor
 * holds back among them it takes again. The monitor sets a bit before it
 * looks for a thread that takes the signal, so that one of the two sees
 * the other. */
static void unhold(uint64_t open) {
  if (UNLIKELY(__atomic_load_n(&mon_held, __ATOMIC_SEQ_CST) & open)) {
    __atomic_fetch_and(&mon_held, ~open, __ATOMIC_SEQ_CST);
    ito__monitor_poke();
  }
}

void ito__sig_idle(worker *w) {
  if (w->os_sigmask != ALL_ASYNC) ito__sig_apply(w, ALL_ASYNC);
}

void ito__sig_monitor_start(void) {
  on_monitor = 1;
  monitor_lets = ito__sig_on ? monitor_lets_now() : 0;
  sys_mask(SIG_SETMASK, ALL_ASYNC & ~monitor_lets, NULL);
}

void ito__sig_worker_start(worker *w, ithread *root) {
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

void ito__sig_thread_begin(ithread *t, const uint64_t *mask) {
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
  unhold(~m);
}

void ito__sig_thread_release(ithread *t) {
  STORE_REL(&t->sig_live, 0);
  t->cancel = 0;
  t->cpu_ns = t->cpu_in = 0;
  t->sigmask = t->osmask = 0;
  STORE_RLX(&t->sigpend, 0);
  t->sigwaitset = 0;
  t->sig_last = 0;
}

/* ---- delivery ------------------------------------------------------------------------------ */

/* Takes sig off t's pending set if it is there; the info into *si. */
static int take_pending(ithread *t, int sig, siginfo_t *si) {
  uint64_t b = SIGBIT(sig);
  if (!(__atomic_fetch_and(&t->sigpend, ~b, __ATOMIC_ACQ_REL) & b)) return 0;
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
 * context. Returns 0 (nothing ran), 1 (a handler with SA_RESTART ran), 2
 * (a handler without). */
static int run_action(ithread *t, int sig, siginfo_t *si, void *uc, int kernel) {
  struct sigaction a;
  prog_action(sig, &a);
  if (a.sa_handler == SIG_IGN) return 0;
  if (a.sa_handler == SIG_DFL) {
    default_action(sig);
    return 0;
  }
  if (a.sa_flags & SA_RESETHAND) {
    struct sigaction d, k;
    memset(&d, 0, sizeof d);
    d.sa_handler = SIG_DFL;
    k = d;
    spin_lock(&acts.lock);
    if (takes(sig, &d)) kernel_action(sig, &d, &k);
    ito__os.sigaction(sig, &k, NULL);
    set_prog_action(sig, &d);
    spin_unlock(&acts.lock);
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
    ito__sig_apply(cur_worker(), oldos); /* (the handler may have parked: the worker now) */
  }
  return (a.sa_flags & SA_RESTART) ? 1 : 2;
}

/* The running thread's deliverable pending signals, lowest first. */
static int deliver_pending(ithread *t, void *uc) {
  int res = 0;
  uint64_t ready;
  while ((ready = LOAD_ACQ(&t->sigpend) & ~t->sigmask) != 0) {
    int sig = __builtin_ctzll(ready) + 1;
    siginfo_t si;
    if (!take_pending(t, sig, &si)) continue;
    int r = run_action(t, sig, &si, uc, 0);
    if (r > res) res = r;
  }
  return res;
}

int ito__sig_deliver(void) {
  ithread *t = running_thread(cur_worker());
  if (!t) return 0;
  int r = deliver_pending(t, NULL);
  if (r) t->sig_last = r;
  return r;
}

int ito__sig_restartable(void) {
  ithread *t = running_thread(cur_worker());
  return t && t->sig_last == 1;
}

/* ---- interruptible waits ------------------------------------------------------------------- */

int ito__sig_park_begin(ithread *t, struct sig_intr *reg) {
  t->sig_last = 0;
  spin_lock(&t->ilock);
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
  spin_lock(&t->ilock);
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
  spin_lock(&late.lock);
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
  spin_lock(&late.lock);
  int k = 0;
  for (int i = 0; i < late.n; i++) {
    ithread *t = late.t[i];
    /* parked meanwhile: its wait ends (sig_alert); else a nudge if it runs */
    spin_lock(&t->ilock);
    int parked = t->intr != NULL || t->joining != NULL;
    spin_unlock(&t->ilock);
    if (!LOAD_ACQ(&t->sig_live) || (!parked && nudge(t, 0))) continue;
    if (parked) {
      spin_unlock(&late.lock);
      ito__sig_alert(t);
      spin_lock(&late.lock);
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
  spin_lock(&t->ilock);
  struct sig_intr *reg = t->intr;
  if (reg) STORE_RLX(&t->iflight, 1);
  spin_unlock(&t->ilock);
  if (reg) {
    ito__wq_interrupt(reg->qlock, reg->head, reg->tail, reg->wt);
    STORE_REL(&t->iflight, 0);
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
  struct sig_infos *p = infos_of(t);
  if (p) p->info[sig] = *si;
  __atomic_fetch_or(&t->sigpend, SIGBIT(sig), __ATOMIC_ACQ_REL);
  if ((SIGBIT(sig) & ~t->sigmask) || (SIGBIT(sig) & LOAD_ACQ(&t->sigwaitset))) ito__sig_alert(t);
}

int ito__sig_send(ithread *t, int sig, const union sigval *value) {
  if (sig < 0 || sig > NSIG_K || sig == 32 || sig == 33) return EINVAL;
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
    prog_action(sig, &a);
    if (a.sa_handler == SIG_IGN || (a.sa_handler == SIG_DFL && default_ignored(sig)))
      return 0; /* discarded, as the kernel does */
    if (a.sa_handler == SIG_DFL) { /* the process stops or ends: from here as well */
      default_action(sig);
      return 0;
    }
  }
  pend(t, sig, &si);
  return 0;
}

/* ---- the kernel's handler and routing ---------------------------------------------------- */

static struct {
  uint64_t inbox;               /* signals left by tramp for the monitor to route */
  siginfo_t info[NSIG_K + 1];
  uint64_t proc;                /* pending for the process, in ito's hands */
  siginfo_t pinfo[NSIG_K + 1];
  int lock;                     /* proc, pinfo, the sigwaiters */
  ithread *waiters[64];         /* threads in sigwait */
  int nwaiters;
  int in_tramp;                 /* handlers of ito's running now (sigpending waits) */
  int routing;                  /* the monitor routes what it took */
} rt;

/* A signal the kernel gave ito may be on its way through the monitor. */
static int in_flight(void) {
  return LOAD_ACQ(&rt.in_tramp) || LOAD_ACQ(&rt.inbox) || LOAD_ACQ(&rt.routing);
}

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

static void tramp(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  __atomic_add_fetch(&rt.in_tramp, 1, __ATOMIC_ACQ_REL);
  worker *w = cur_worker();
  fiber *f = w ? w->cur : NULL;
  ithread *t = f && in_context_of(f, uc) ? f->thread : NULL;
  if (t) t->in_handler++; /* never preempted inside this frame (preempt.h, invariant 3) */
  uintptr_t v = si ? (uintptr_t)si->si_value.sival_ptr : 0;
  if (si && (v & NUDGE_MASK) == NUDGE_BITS && si->si_code == SI_QUEUE && si->si_pid == getpid()) {
    /* a nudge: the thread it is for, if it runs here, delivers */
    if (t && (uintptr_t)t == (v & ~NUDGE_MASK)) deliver_pending(t, uc);
    if (t) t->in_handler--;
    __atomic_sub_fetch(&rt.in_tramp, 1, __ATOMIC_ACQ_REL);
    errno = saved;
    return;
  }
  if ((!w && !on_monitor) || (t && !(t->sigmask & SIGBIT(sig))) ||
      ((SIGBIT(sig) & SYNCHRONOUS) && si && si->si_code > 0)) {
    /* an OS thread of the program's own, a thread that takes it, or a
     * fault of the code running here (the kernel delivers it blocked or
     * not: it belongs to this context) */
    run_action(t, sig, si, uc, 1);
  } else {
    /* routed by the monitor (it takes locks) */
    if (si) rt.info[sig] = *si;
    __atomic_fetch_or(&rt.inbox, SIGBIT(sig), __ATOMIC_RELEASE);
    ito__monitor_poke();
  }
  if (t) t->in_handler--;
  __atomic_sub_fetch(&rt.in_tramp, 1, __ATOMIC_ACQ_REL);
  errno = saved;
}

/* A live program thread (not a task) that does not block b, or NULL:
 * every descriptor ever made is in the handle table. */
static ithread *any_taker(uint64_t b) {
  uint32_t n = LOAD_ACQ(&ito__handle_nslots);
  for (uint32_t i = 1; i < n; i++) {
    struct handle_slot *s = handle_slot_at(i);
    ithread *t = s ? LOAD_ACQ(&s->t) : NULL;
    if (t && LOAD_ACQ(&t->sig_live) && !(LOAD_RLX(&t->flags) & TH_ANON) &&
        LOAD_ACQ(&t->sync) == TS_RUNNING && !(LOAD_RLX(&t->sigmask) & b))
      return t;
  }
  return NULL;
}

/* A signal of the process, to the thread that takes it (as the kernel
 * chooses: one waiting for it in sigwait, else the main thread if it does
 * not block it, else any thread that does not). A handler's signal that no
 * thread takes stays pending for the process in ito's hands until a
 * thread unblocks it or waits for it. A default action that ends or stops
 * the process is carried out here when a thread takes the signal, as the
 * kernel does at once; when none does, the signal goes back to the kernel,
 * pending for the process, and the monitor blocks it (mon_held). */
static void route(int sig, const siginfo_t *si) {
  uint64_t b = SIGBIT(sig);
  ithread *to = NULL;
  spin_lock(&rt.lock);
  for (int i = 0; i < rt.nwaiters && !to; i++)
    if (LOAD_ACQ(&rt.waiters[i]->sigwaitset) & b) to = rt.waiters[i];
  spin_unlock(&rt.lock);
  if (to) {
    pend(to, sig, si);
    return;
  }
  struct sigaction a;
  prog_action(sig, &a);
  int dfl = a.sa_handler == SIG_DFL && dfl_acts(sig);
  if (dfl) __atomic_fetch_or(&mon_held, b, __ATOMIC_SEQ_CST); /* (unhold) */
  ithread *root = ito__root_thread();
  if (root && LOAD_ACQ(&root->sig_live) && !(LOAD_RLX(&root->sigmask) & b)) to = root;
  if (!to) to = any_taker(b);
  if (dfl) {
    if (to) {
      __atomic_fetch_and(&mon_held, ~b, __ATOMIC_SEQ_CST);
      default_action(sig);
      return;
    }
    monitor_mask_update(); /* blocked here before it goes back */
    siginfo_t back = *si;
    back.si_signo = sig;
    if (ito__os.syscall(SYS_rt_sigqueueinfo, getpid(), sig, &back) != 0)
      ito__os.syscall(SYS_kill, getpid(), sig);
    return;
  }
  if (to) {
    pend(to, sig, si);
    return;
  }
  spin_lock(&rt.lock);
  rt.pinfo[sig] = *si;
  rt.proc |= b;
  spin_unlock(&rt.lock);
}

void ito__sig_route_inbox(void) {
  if (on_monitor) monitor_mask_update(); /* invariant 6 */
  STORE_REL(&rt.routing, 1);
  uint64_t in = __atomic_exchange_n(&rt.inbox, 0, __ATOMIC_ACQUIRE);
  while (in) {
    int sig = __builtin_ctzll(in) + 1;
    in &= in - 1;
    route(sig, &rt.info[sig]);
  }
  STORE_REL(&rt.routing, 0);
  if (on_monitor) monitor_mask_update();
}

/* ---- the calls of the drop-in -------------------------------------------------------------- */

/* The signals of want pending for the process in ito's hands become t's. */
static void claim_proc(ithread *t, uint64_t want) {
  if (!(want & LOAD_RLX(&rt.proc))) return;
  spin_lock(&rt.lock);
  uint64_t mine = rt.proc & want;
  rt.proc &= ~mine;
  siginfo_t si[NSIG_K + 1];
  for (uint64_t m = mine; m; m &= m - 1) si[__builtin_ctzll(m) + 1] = rt.pinfo[__builtin_ctzll(m) + 1];
  spin_unlock(&rt.lock);
  struct sig_infos *p = infos_of(t);
  for (; mine; mine &= mine - 1) {
    int sig = __builtin_ctzll(mine) + 1;
    if (p) p->info[sig] = si[sig];
    __atomic_fetch_or(&t->sigpend, SIGBIT(sig), __ATOMIC_ACQ_REL);
  }
}

int ito__sig_mask(int how, const sigset_t *set, sigset_t *old) {
  worker *w = cur_worker();
  ithread *t = running_thread(w);
  uint64_t cur = t->sigmask;
  if (old) bits_set(old, cur);
  if (!set) return 0;
  uint64_t m = set_bits(set);
  uint64_t next;
  if (how == SIG_BLOCK)
    next = cur | m;
  else if (how == SIG_UNBLOCK)
    next = cur & ~m;
  else if (how == SIG_SETMASK)
    next = m;
  else
    return EINVAL;
  next &= ~NEVER_BLOCKED;
  t->osmask = next;
  __atomic_store_n(&t->sigmask, next, __ATOMIC_SEQ_CST);
  ito__sig_apply(w, next);
  /* unblocked: what was pending for the process in ito's hands goes to
   * this thread, and what was pending for it is delivered now */
  unhold(cur & ~next);
  /* one the monitor took may be on its way: it arrives before this call
   * returns, as the kernel delivers a pending signal at its unblocking */
  if ((cur & ~next & LOAD_ACQ(&acts.taken)) && in_flight()) ito__monitor_sync();
  claim_proc(t, cur & ~next);
  if (LOAD_ACQ(&t->sigpend) & ~next) ito__sig_deliver();
  return 0;
}

void ito__sig_pending(sigset_t *out) {
  /* a signal this thread blocks, sent to the process, may be on its way
   * through the monitor (invariant 6): let it arrive, as the kernel's
   * sigpending would show it at once */
  ithread *t = running_thread(cur_worker());
  uint64_t via = LOAD_ACQ(&acts.taken) & ~__atomic_load_n(&mon_held, __ATOMIC_SEQ_CST);
  if (t ? (via & t->sigmask) : via) {
    for (int i = 0; i < 20000 && LOAD_ACQ(&rt.in_tramp); i++) cpu_relax();
    ito__monitor_sync();
  }
  uint64_t k = 0;
  sigset_t ks;
  if (ito__os.syscall(SYS_rt_sigpending, &ks, (size_t)8) == 0) k = set_bits(&ks);
  uint64_t m = (t ? LOAD_ACQ(&t->sigpend) : 0) | LOAD_ACQ(&rt.proc) | LOAD_ACQ(&rt.inbox) | k;
  if (t) m &= t->sigmask; /* pending: sent and blocked */
  bits_set(out, m);
}

int ito__sig_take(const sigset_t *set, siginfo_t *info) {
  ithread *t = running_thread(cur_worker());
  uint64_t want = set_bits(set);
  siginfo_t si;
  if (t) {
    uint64_t mine = LOAD_ACQ(&t->sigpend) & want;
    while (mine) {
      int sig = __builtin_ctzll(mine) + 1;
      mine &= mine - 1;
      if (take_pending(t, sig, &si)) {
        if (info) *info = si;
        return sig;
      }
    }
  }
  if (LOAD_ACQ(&rt.proc) & want) {
    spin_lock(&rt.lock);
    uint64_t got = rt.proc & want;
    int sig = got ? __builtin_ctzll(got) + 1 : 0;
    if (sig) {
      rt.proc &= ~SIGBIT(sig);
      si = rt.pinfo[sig];
    }
    spin_unlock(&rt.lock);
    if (sig) {
      if (info) *info = si;
      return sig;
    }
  }
  return 0;
}

void ito__sig_waiting(const sigset_t *set) {
  ithread *t = running_thread(cur_worker());
  if (!t) return;
  spin_lock(&rt.lock);
  if (set) {
    STORE_REL(&t->sigwaitset, set_bits(set));
    if (rt.nwaiters < 64) rt.waiters[rt.nwaiters++] = t;
  } else {
    STORE_REL(&t->sigwaitset, 0);
    for (int i = 0; i < rt.nwaiters; i++)
      if (rt.waiters[i] == t) {
        rt.waiters[i] = rt.waiters[--rt.nwaiters];
        break;
      }
  }
  spin_unlock(&rt.lock);
}

int ito__sig_suspend(const sigset_t *mask) {
  worker *w = cur_worker();
  ithread *t = running_thread(w);
  /* the mask of the wait is ito's alone: the OS thread blocks every
   * asynchronous signal meanwhile, so that none runs its handler here
   * between a check and the park; ito routes them to the thread (the
   * monitor takes what every worker blocks) and its wait ends */
  uint64_t old = t->sigmask;
  __atomic_store_n(&t->sigmask, set_bits(mask) & ~NEVER_BLOCKED, __ATOMIC_SEQ_CST);
  t->osmask = ALL_ASYNC;
  ito__sig_apply(w, t->osmask);
  unhold(old & ~t->sigmask);
  t->sig_last = 0;
  claim_proc(t, ~t->sigmask); /* what the process has pending in ito's hands */
  int qlock = 0;
  void *head = NULL, *tail = NULL;
  for (;;) {
    if (LOAD_ACQ(&t->sigpend) & ~t->sigmask) ito__sig_deliver();
    if (t->sig_last) break;
    spin_lock(&qlock);
    ito__wq_wait(&qlock, &head, &tail, WQ_INTR, CLOCK_MONOTONIC, NULL, NULL, NULL);
    if (t->sig_last) break;
    if ((LOAD_ACQ(&t->cancel) & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_ACTING)) ==
        CANCEL_PENDING)
      break; /* a cancellation point: the drop-in acts on it */
  }
  t->sigmask = t->osmask = old;
  ito__sig_apply(cur_worker(), old);
  errno = EINTR;
  return -1;
}

/* ---- fork ------------------------------------------------------------------------------------ */

void ito__sig_fork_lock(int take) {
  if (take)
    spin_lock(&acts.lock);
  else
    spin_unlock(&acts.lock);
}

void ito__sig_after_fork(void) {
  rt.lock = 0;
  rt.nwaiters = 0; /* the threads in sigwait were the parent's */
  STORE_RLX(&rt.inbox, 0);
  on_monitor = 0;
}

/* ---- CPU time per thread ------------------------------------------------------------------ */

int ito__cpuclock_on;

/* The CPU time of OS thread tid (0: this one), 0 if it cannot be read. */
static long long os_thread_cpu_ns(int tid) {
  long long ns = ito__os_cpu_ns(tid);
  return ns < 0 ? 0 : ns;
}

void ito__cpu_enter(worker *w, fiber *f) {
  ithread *next = f ? f->thread : NULL, *prev = w->on_cpu;
  if (next == prev) return;
  long long now = os_thread_cpu_ns(0);
  if (prev) __atomic_add_fetch(&prev->cpu_ns, now - prev->cpu_in, __ATOMIC_RELAXED);
  if (next) STORE_RLX(&next->cpu_in, now);
  STORE_REL(&w->on_cpu, next);
}

void ito__cpuclock_enable(void) {
  if (__atomic_exchange_n(&ito__cpuclock_on, 1, __ATOMIC_ACQ_REL)) return;
  worker *w = cur_worker();
  ithread *t = running_thread(w);
  if (t) {
    STORE_RLX(&t->cpu_in, os_thread_cpu_ns(0));
    STORE_REL(&w->on_cpu, t);
  }
}

long long ito__thread_cpu_ns(ithread *t) {
  long long sum = LOAD_RLX(&t->cpu_ns);
  worker *here = cur_worker();
  if (here && LOAD_ACQ(&here->on_cpu) == t) return sum + os_thread_cpu_ns(0) - LOAD_RLX(&t->cpu_in);
  int n = LOAD_ACQ(&ito__nslots);
  for (int i = 0; i < n; i++) { /* running elsewhere: its slice so far, from that OS thread */
    worker *w = ito__workers[i];
    if (w && LOAD_ACQ(&w->on_cpu) == t && w->os_tid) {
      long long d = os_thread_cpu_ns(w->os_tid) - LOAD_RLX(&t->cpu_in);
      return sum + (d > 0 ? d : 0);
    }
  }
  return sum;
}
