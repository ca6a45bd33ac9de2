/* The scheduler: what a worker runs next, the scheduler context that a
 * fiber leaves to, ready queues and mail, placement, and publishing work.
 * Design: docs/scheduler.md.
 *
 * Invariants:
 *  1. Woken fibers go to ready queues or mail, never to a deque: the fork
 *     expects its own record at the deque's tail.
 *  2. A fiber with a home runs only on its home worker: when it is ready
 *     it goes to the home's mail, which only the home takes.
 *  3. A fiber that stops running on a worker (it parks or yields) has the
 *     continuations it published there taken first (ito__take_records_of),
 *     before anybody can resume it.
 *  4. Every path that publishes work then calls publish() (idle.h,
 *     invariant 3). */
#ifndef ITO_CORE_SCHED_H
#define ITO_CORE_SCHED_H

#include "base.h"
#include "idle.h"
#include "switch.h"
#include "worker.h"

/* What a fiber asks of the scheduler when it switches to it. */
enum {
  ACT_NONE = 0,
  ACT_BLOCK,     /* the fiber parks: take its records, run post_fn (releases a lock) */
  ACT_YIELD,     /* the fiber yields: take its records, queue it at the ready tail */
  ACT_ABANDON,   /* the fiber's fork was stolen: the child is done (sched_arg = tg) */
  ACT_EXIT,      /* the fiber's thread ended: free the fiber */
  ACT_JOIN_WAIT, /* the fiber waits in a task-group join (sched_arg = tg) */
  ACT_MIGRATE,   /* the fiber moves to the worker sched_arg (its mailbox) */
  ACT_PREEMPT,   /* the fiber was preempted (preempt.h): like a yield, but with worker
                    TLS it stays on this worker */
};

/* Preempted threads, queued for every worker (sched.c). */
extern struct ready_queue ito__preempted HIDDEN;

/* The workers, for the scheduler's loops (runtime.c fills it). */
extern worker **ito__workers HIDDEN;
extern int ito__nworkers HIDDEN;

/* The worker whose OS thread runs thread t now (on the fiber it started
 * on), or NULL. Read without locks: it may have moved on by the time the
 * caller acts on it. */
HIDDEN worker *ito__worker_running(const struct ithread *t);

/* After work was published on w (P2, P3 of docs/idle.md); full: the
 * publisher fences (every path but the forks'). A spinner will steal from
 * w, or a sleeper was woken for it: w's next pops fence (a fenced window),
 * so that the thief needs no membarrier. */
static inline void publish(worker *w, bool full) {
  int r = idle_after_publish(w->id, full);
  if (UNLIKELY(r != IDLE_NOBODY) && !dq_window_open(&w->dq) && w == cur_worker())
    dq_expect_thief(&w->dq);
}
/* The assembly fork's wake-up (.Lfork_wake): nobody spins, somebody sleeps. */
HIDDEN void ito__fork_wake(worker *w);

/* ---- placement: the one function that decides where ready work goes ----- */
/* The worker whose queue f goes to (a woken fiber, one that yielded, a
 * continuation taken from a fiber that parked, what a thief took): f's home
 * if it has one, else the calling worker (`here`, or round robin from
 * outside). A thief runs what it stole when this returns the thief itself. */
HIDDEN worker *ito__place(const fiber *f, worker *here);

/* Some fiber has been given a home: from now on ready lists are split
 * between mail and queues. */
HIDDEN void ito__set_homes(void);
/* Makes fibers ready (invariants 1, 2): a list linked through next. */
HIDDEN void ito__ready_list(fiber *first, fiber *last, int n);
HIDDEN void ito__ready(fiber *f);
/* Puts f on the owner's deque as a stealable suspended fiber (the creator
 * of a thread started work-first); the ready queue if the deque is full. */
HIDDEN void ito__push_fiber(worker *w, fiber *f);

/* The running fiber stops: action tells the scheduler what to do with it;
 * post(post_arg) runs on the scheduler after the fiber's context is saved
 * and its records are taken (typically: release a queue lock). Returns
 * when the fiber is resumed, with its errno and exception globals. */
HIDDEN void ito__suspend(int action, void *arg, void (*post)(void *), void *post_arg);
/* The running fiber's context is gone: enter the scheduler with action. */
HIDDEN void ito__switch_to_sched(worker *w, int action, void *arg) __attribute__((noreturn));
/* The scheduler loop of worker w; never returns. */
HIDDEN void ito__sched_loop(worker *w) __attribute__((noreturn));
/* A thread ended on fiber f: run its parent if that is the youngest
 * entry of w's deque, else go to the scheduler. */
HIDDEN void ito__exit_fiber(worker *w, fiber *f) __attribute__((noreturn));
/* The stop flag, for the scheduler's loop. */
extern int ito__stopping HIDDEN;

#endif
