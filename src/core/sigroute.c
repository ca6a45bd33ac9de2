/* The routing of a signal of the process (docs/signals.md, "Routing a
 * process signal"): the monitor gives a signal that ito's handler took
 * for the process, or that a thread handed back, to the thread that takes
 * it as the kernel would choose, or keeps it pending for the process in
 * ito's hands (signal.h, invariant 7). */
#include "signal_int.h"

#include "handle.h"
#include "os.h"
#include "runtime.h"
#include "thread.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct sig_route ito__sig_rt;

/* Can t take a signal of the process in b now: a live program thread, not
 * ended for signals, that does not block it (waiting: that waits for it in
 * sigwait)? */
static bool taker(ithread *t, uint64_t b, bool waiting) {
  if (!LOAD_ACQ(&t->sig_live) || LOAD_RLX(&t->sig_closed)) return false;
  if (waiting) return LOAD_ACQ(&t->sigwaitset) & b;
  return !(LOAD_RLX(&t->flags) & TH_ANON) && !(LOAD_RLX(&t->sigmask) & b);
}

/* Makes sig, a signal of the process, pending on t if t still takes it
 * (invariant 7: it may have ended, even been released and made again,
 * since it was chosen); else false. */
static bool pend_proc(ithread *t, int sig, const siginfo_t *si, bool waiting) {
  uint64_t b = SIGBIT(sig);
  struct sig_infos *p = ito__sig_infos_of(t); /* (allocates: before the lock) */
  spin_lock(&t->ilock, LR_ILOCK);
  bool open = taker(t, b, waiting);
  if (open) {
    if (p) p->info[sig] = *si;
    __atomic_fetch_or(&t->sigproc, b, __ATOMIC_RELAXED);
    __atomic_fetch_or(&t->sigpend, b, __ATOMIC_ACQ_REL);
  }
  spin_unlock(&t->ilock);
  if (open) ito__sig_alert(t);
  return open;
}

/* A live program thread (not a task) that does not block b, or NULL:
 * every descriptor ever made is in the handle table. */
static ithread *any_taker(uint64_t b) {
  uint32_t n = LOAD_ACQ(&ito__handle_nslots);
  for (uint32_t i = 1; i < n; i++) {
    struct handle_slot *s = handle_slot_at(i);
    ithread *t = s ? LOAD_ACQ(&s->t) : NULL;
    if (t && taker(t, b, false) && LOAD_ACQ(&t->sync) == TS_RUNNING) return t;
  }
  return NULL;
}

/* A thread in sigwait for b, or NULL. */
static ithread *waiter_for(uint64_t b) {
  ithread *to = NULL;
  spin_lock(&ito__sig_rt.lock, LR_LEAF);
  for (int i = 0; i < ito__sig_rt.nwaiters && !to; i++)
    if (taker(ito__sig_rt.waiters[i], b, true)) to = ito__sig_rt.waiters[i];
  spin_unlock(&ito__sig_rt.lock);
  return to;
}

/* The main thread if it does not block b, else any thread that does not. */
static ithread *unblocked_for(uint64_t b) {
  ithread *root = ito__root_thread();
  if (root && taker(root, b, false)) return root;
  return any_taker(b);
}

/* A signal of the process, to the thread that takes it (as the kernel
 * chooses: one waiting for it in sigwait, else the main thread if it does
 * not block it, else any thread that does not). A handler's signal that no
 * thread takes stays pending for the process in ito's hands until a
 * thread unblocks it or waits for it. A default action that ends or stops
 * the process is carried out here when a thread takes the signal, as the
 * kernel does at once; when none does, the signal goes back to the kernel,
 * pending for the process, and the monitor blocks it (ito__sig_mon_held). */
static void route(int sig, const siginfo_t *si) {
  uint64_t b = SIGBIT(sig);
  struct sigaction a;
  ito__sig_prog_rec(sig, &a);
  int dfl = a.sa_handler == SIG_DFL && ito__sig_dfl_acts(sig);
  /* (again if the thread chosen ends meanwhile) */
  for (int tries = 0; tries < 8; tries++) {
    ithread *to = waiter_for(b);
    if (to) {
      if (pend_proc(to, sig, si, true)) return;
      continue;
    }
    if (dfl) __atomic_fetch_or(&ito__sig_mon_held, b, __ATOMIC_SEQ_CST); /* (unhold) */
    to = unblocked_for(b);
    if (dfl) {
      if (to) {
        __atomic_fetch_and(&ito__sig_mon_held, ~b, __ATOMIC_SEQ_CST);
        ito__sig_default_action(sig);
        return;
      }
      ito__sig_monitor_mask(); /* blocked here before it goes back */
      siginfo_t back = *si;
      back.si_signo = sig;
      if (ito__os.syscall(SYS_rt_sigqueueinfo, getpid(), sig, &back) != 0)
        ito__os.syscall(SYS_kill, getpid(), sig);
      return;
    }
    if (!to) break;
    if (pend_proc(to, sig, si, false)) return;
  }
  /* pending for the process. A thread may have unblocked it, or begun to
   * wait for it, since the look above, and looked here before it was
   * here: a second look, after it is here, finds such a thread (the
   * thread stores, then loads proc; this stores proc, then loads), and
   * whichever of the two takes it off proc first gives it to that thread */
  siginfo_t mine = *si;
  for (int tries = 0; tries < 8; tries++) {
    spin_lock(&ito__sig_rt.lock, LR_LEAF);
    ito__sig_rt.pinfo[sig] = mine;
    ito__sig_rt.proc |= b;
    spin_unlock(&ito__sig_rt.lock);
    full_fence();
    ithread *to = waiter_for(b);
    bool waiting = to != NULL;
    if (!to) to = unblocked_for(b);
    if (!to) return;
    spin_lock(&ito__sig_rt.lock, LR_LEAF);
    bool here = ito__sig_rt.proc & b;
    if (here) {
      ito__sig_rt.proc &= ~b;
      mine = ito__sig_rt.pinfo[sig];
    }
    spin_unlock(&ito__sig_rt.lock);
    if (!here || pend_proc(to, sig, &mine, waiting)) return;
  }
  spin_lock(&ito__sig_rt.lock, LR_LEAF); /* (every taker ended as it was chosen) */
  ito__sig_rt.pinfo[sig] = mine;
  ito__sig_rt.proc |= b;
  spin_unlock(&ito__sig_rt.lock);
}

void ito__sig_route_inbox(void) {
  if (ito__sig_on_monitor) ito__sig_monitor_mask(); /* invariant 6 */
  STORE_REL(&ito__sig_rt.routing, 1);
  uint64_t in = __atomic_exchange_n(&ito__sig_rt.inbox, 0, __ATOMIC_ACQUIRE);
  while (in) {
    int sig = __builtin_ctzll(in) + 1;
    in &= in - 1;
    route(sig, &ito__sig_rt.info[sig]);
  }
  /* handed back by threads (under the lock, unlike the handler's inbox) */
  while (LOAD_ACQ(&ito__sig_rt.back)) {
    spin_lock(&ito__sig_rt.lock, LR_LEAF);
    uint64_t b = ito__sig_rt.back;
    int sig = b ? __builtin_ctzll(b) + 1 : 0;
    siginfo_t si;
    if (sig) {
      si = ito__sig_rt.binfo[sig];
      __atomic_fetch_and(&ito__sig_rt.back, ~SIGBIT(sig), __ATOMIC_RELAXED);
    }
    spin_unlock(&ito__sig_rt.lock);
    if (sig) route(sig, &si);
  }
  STORE_REL(&ito__sig_rt.routing, 0);
  if (ito__sig_on_monitor) ito__sig_monitor_mask();
}
