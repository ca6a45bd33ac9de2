/* The signal calls of the drop-in libraries for the running ito thread:
 * pthread_sigmask, sigpending, sigwait's take and registration,
 * sigsuspend; and a thread's side of a signal of the process: it claims
 * what is pending, lets what is on its way arrive, and hands back at its
 * end what it did not take (invariants in signal.h; design in
 * docs/signals.md). */
#define _GNU_SOURCE
#include "signal_int.h"

#include "monitor.h"
#include "sched.h"
#include "wait.h"
#include "worker.h"

#include <errno.h>
#include <time.h>

void ito__sig_claim_proc(ithread *t, uint64_t want) {
  /* t's mask (or its sig_live) was stored before: this fence and route's
   * order the two stores before the two loads (signal.c, route) */
  full_fence();
  if (!(want & LOAD_RLX(&ito__sig_rt.proc))) return;
  spin_lock(&ito__sig_rt.lock, LR_LEAF);
  uint64_t mine = ito__sig_rt.proc & want;
  ito__sig_rt.proc &= ~mine;
  siginfo_t si[NSIG_K + 1];
  for (uint64_t m = mine; m; m &= m - 1) {
    int sig = __builtin_ctzll(m) + 1;
    si[sig] = ito__sig_rt.pinfo[sig];
  }
  spin_unlock(&ito__sig_rt.lock);
  struct sig_infos *p = ito__sig_infos_of(t);
  for (; mine; mine &= mine - 1) {
    int sig = __builtin_ctzll(mine) + 1;
    if (p) p->info[sig] = si[sig];
    __atomic_fetch_or(&t->sigproc, SIGBIT(sig), __ATOMIC_RELAXED);
    __atomic_fetch_or(&t->sigpend, SIGBIT(sig), __ATOMIC_ACQ_REL);
  }
}

static bool on_its_way(void) {
  /* (the mark first: cleared once the inbox has what the monitor took) */
  return __atomic_load_n(&ito__sig_rt.taking, __ATOMIC_SEQ_CST) ||
         LOAD_ACQ(&ito__sig_rt.in_tramp) || LOAD_ACQ(&ito__sig_rt.inbox) ||
         LOAD_ACQ(&ito__sig_rt.back) || LOAD_ACQ(&ito__sig_rt.routing);
}

void ito__sig_await(uint64_t want) {
  want &= LOAD_ACQ(&ito__sig_acts.taken);
  if (!want) return;
  bool wait = on_its_way();
  if (!wait) { /* pending for the process in the kernel: the monitor takes it next */
    sigset_t ks;
    wait = ito__os.syscall(SYS_rt_sigpending, &ks, (size_t)8) == 0 && (set_bits(&ks) & want);
  }
  if (!wait) wait = on_its_way(); /* (taken from the kernel meanwhile) */
  if (!wait) return;
  for (int i = 0; i < 20000 && LOAD_ACQ(&ito__sig_rt.in_tramp); i++) cpu_relax();
  ito__monitor_sync();
}

/* Takes the bits of left (signals of the process, off t) to the monitor. */
static void hand_back(ithread *t, uint64_t left) {
  struct sig_infos *p = LOAD_ACQ(&t->siginfo);
  spin_lock(&ito__sig_rt.lock, LR_LEAF);
  for (uint64_t m = left; m; m &= m - 1) {
    int sig = __builtin_ctzll(m) + 1;
    siginfo_t *si = &ito__sig_rt.binfo[sig];
    if (p) {
      *si = p->info[sig];
    } else {
      memset(si, 0, sizeof *si);
      si->si_signo = sig;
      si->si_code = SI_USER;
    }
  }
  __atomic_fetch_or(&ito__sig_rt.back, left, __ATOMIC_RELEASE);
  spin_unlock(&ito__sig_rt.lock);
  ito__monitor_poke();
}

void ito__sig_give_back(ithread *t, uint64_t bits) {
  if (!(LOAD_RLX(&t->sigproc) & bits)) return;
  spin_lock(&t->ilock, LR_ILOCK);
  uint64_t left = LOAD_RLX(&t->sigproc) & bits;
  left &= __atomic_fetch_and(&t->sigpend, ~left, __ATOMIC_ACQ_REL);
  __atomic_fetch_and(&t->sigproc, ~left, __ATOMIC_RELAXED);
  spin_unlock(&t->ilock);
  if (left) hand_back(t, left);
}

void ito__sig_thread_end(ithread *t) {
  spin_lock(&t->ilock, LR_ILOCK);
  t->sig_closed = 1;
  uint64_t left = __atomic_exchange_n(&t->sigproc, 0, __ATOMIC_RELAXED);
  left &= __atomic_fetch_and(&t->sigpend, ~left, __ATOMIC_ACQ_REL);
  spin_unlock(&t->ilock);
  if (left) hand_back(t, left); /* routed again, as ito's handler leaves one */
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
  /* newly blocked: what the process's routing left here goes back */
  ito__sig_give_back(t, next & ~cur);
  /* unblocked: what was pending for the process in ito's hands goes to
   * this thread, and what was pending for it is delivered now */
  ito__sig_unhold(cur & ~next);
  /* one the monitor took may be on its way: it arrives before this call
   * returns, as the kernel delivers a pending signal at its unblocking */
  ito__sig_await(cur & ~next);
  ito__sig_claim_proc(t, cur & ~next);
  if (LOAD_ACQ(&t->sigpend) & ~next) ito__sig_deliver();
  return 0;
}

void ito__sig_pending(sigset_t *out) {
  /* a signal this thread blocks, sent to the process, may be on its way
   * through the monitor (invariant 6): let it arrive, as the kernel's
   * sigpending would show it at once */
  ithread *t = running_thread(cur_worker());
  uint64_t via =
      LOAD_ACQ(&ito__sig_acts.taken) & ~__atomic_load_n(&ito__sig_mon_held, __ATOMIC_SEQ_CST);
  if (t ? (via & t->sigmask) : via) {
    for (int i = 0; i < 20000 && LOAD_ACQ(&ito__sig_rt.in_tramp); i++) cpu_relax();
    ito__monitor_sync();
  }
  uint64_t k = 0;
  sigset_t ks;
  if (ito__os.syscall(SYS_rt_sigpending, &ks, (size_t)8) == 0) k = set_bits(&ks);
  uint64_t m = (t ? LOAD_ACQ(&t->sigpend) : 0) | LOAD_ACQ(&ito__sig_rt.proc) |
               LOAD_ACQ(&ito__sig_rt.inbox) | k;
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
      if (ito__sig_take_pending(t, sig, &si)) {
        if (info) *info = si;
        return sig;
      }
    }
  }
  if (LOAD_ACQ(&ito__sig_rt.proc) & want) {
    spin_lock(&ito__sig_rt.lock, LR_LEAF);
    uint64_t got = ito__sig_rt.proc & want;
    int sig = got ? __builtin_ctzll(got) + 1 : 0;
    if (sig) {
      ito__sig_rt.proc &= ~SIGBIT(sig);
      si = ito__sig_rt.pinfo[sig];
    }
    spin_unlock(&ito__sig_rt.lock);
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
  spin_lock(&ito__sig_rt.lock, LR_LEAF);
  if (set) {
    STORE_REL(&t->sigwaitset, set_bits(set));
    if (ito__sig_rt.nwaiters < 64) ito__sig_rt.waiters[ito__sig_rt.nwaiters++] = t;
  } else {
    STORE_REL(&t->sigwaitset, 0);
    for (int i = 0; i < ito__sig_rt.nwaiters; i++)
      if (ito__sig_rt.waiters[i] == t) {
        ito__sig_rt.waiters[i] = ito__sig_rt.waiters[--ito__sig_rt.nwaiters];
        break;
      }
  }
  spin_unlock(&ito__sig_rt.lock);
  /* the wait is over: one routed to it that it did not take, and blocks
   * (as a sigwait's set must be), goes back (pend_proc's look at the
   * waiting set is under ilock, this one after it) */
  if (!set) ito__sig_give_back(t, t->sigmask);
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
  ito__sig_unhold(old & ~t->sigmask);
  t->sig_last = 0;
  ito__sig_claim_proc(t, ~t->sigmask); /* what the process has pending in ito's hands */
  int qlock = 0;
  void *head = NULL, *tail = NULL;
  for (;;) {
    if (LOAD_ACQ(&t->sigpend) & ~t->sigmask) ito__sig_deliver();
    if (t->sig_last) break;
    spin_lock(&qlock, LR_QUEUE);
    ito__wq_wait(&qlock, &head, &tail, WQ_INTR, CLOCK_MONOTONIC, NULL, NULL, NULL);
    if (t->sig_last) break;
    if ((LOAD_ACQ(&t->cancel) & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_ACTING)) ==
        CANCEL_PENDING)
      break; /* a cancellation point: the drop-in acts on it */
  }
  uint64_t during = t->sigmask;
  __atomic_store_n(&t->sigmask, old, __ATOMIC_SEQ_CST);
  t->osmask = old;
  ito__sig_apply(cur_worker(), old);
  ito__sig_give_back(t, old & ~during); /* (blocked again) */
  errno = EINTR;
  return -1;
}
