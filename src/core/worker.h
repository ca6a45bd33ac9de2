/* A worker: one OS thread with its deque, its ready queue, its mail, its
 * scheduler stack, its free fibers and its idle state. Design:
 * docs/scheduler.md.
 *
 * Invariants:
 *  1. The deque is the first member, so a worker's address is its deque's
 *     (the assembly fork passes the worker to deque functions).
 *  2. A lightweight thread may move to another worker at any call that can
 *     switch: worker-local state is read through cur_worker(), whose TLS
 *     read the compiler cannot cache across such a call. */
#ifndef ITO_CORE_WORKER_H
#define ITO_CORE_WORKER_H

#include "asm_contract.h"
#include "base.h"
#include "deque.h"
#include "fiber.h"
#include "idle.h"

#include <pthread.h>

/* A FIFO of fibers any worker may push to or take from. */
struct ready_queue {
  int lock;
  int len; /* read without the lock */
  fiber *head, *tail;
};

/* Appends the list first..last (n fibers, linked through next). */
static inline void rqueue_push(struct ready_queue *q, fiber *first, fiber *last, int n) {
  last->next = NULL;
  spin_lock(&q->lock, LR_READY);
  if (q->tail)
    q->tail->next = first;
  else
    q->head = first;
  q->tail = last;
  STORE_RLX(&q->len, q->len + n);
  spin_unlock(&q->lock);
}

/* The oldest fiber, or NULL. */
static inline fiber *rqueue_pop(struct ready_queue *q) {
  if (!LOAD_RLX(&q->len)) return NULL;
  spin_lock(&q->lock, LR_READY);
  fiber *f = q->head;
  if (f) {
    q->head = f->next;
    if (!q->head) q->tail = NULL;
    STORE_RLX(&q->len, q->len - 1);
  }
  spin_unlock(&q->lock);
  return f;
}

typedef struct worker {
  struct ito_deque dq; /* first (invariant 1); two cache lines */

  fiber *cur; /* the fiber running on this worker */
  /* An event recorder's quiet forks (hooks.h, invariant 4): while
   * hook_quiet > 1 a fork does not report itself, takes one off, and
   * marks its record for thieves at hook_mark bytes from its deque slot. */
  intptr_t hook_mark;
  int hook_quiet;
  void (*post_fn)(void *); /* run right after the next switch lands */
  void *post_arg;
  int id;
  unsigned poll_pass; /* scheduling passes since poll sources were last polled */
  uint64_t rng;
  /* the scheduler context (sched.c) */
  char *sched_lo, *sched_hi;
  int sched_action;
  void *sched_arg;
  fiber *sched_from;
  struct fiber_cache fibers;
  /* counters that only grow (thread.h, invariant 4), this worker's only */
  unsigned long created, ended;
  unsigned long steals; /* successful steals by this worker (for debugging) */
  /* fibers that left this worker's CPU (a suspension, an end): the
   * monitor, which samples cur, tells a thread that ran all along from
   * one that keeps coming back between its samples */
  unsigned long switches;
  int extra; /* an extra worker the monitor started (monitor.h) */
  /* its thread waits in the kernel in a call a drop-in library announced
   * (ito__monitor_kwait_begin): counted as blocked at once; under kwait_lock,
   * what ends that wait for a cancellation (monitor.h, invariant 5) */
  int kwait, kwait_lock;
  void (*kwait_wake)(void *);
  void *kwait_obj;
  int yielded;             /* a fiber yielded to this worker's mail: look at the
                              deque and the ready queue before the mail once */
  unsigned picks;          /* picks while preempted threads wait (sched.c) */
  void *tls_own;           /* ITO_TLS=thread: this worker's own block (tls.h) */
  void *tls_cur;           /* the block in force: NULL (own) or a thread's */
  void *tls_glibc;         /* the OS thread's descriptor as glibc knows it (main's, on
                              worker 0 of an adopted main: its root keeps it) */
  uint64_t os_sigmask;     /* the OS thread's signal mask (signal.h, invariant 1) */
  struct ithread *on_cpu;  /* the thread charged for this OS thread's CPU time now */
  unsigned long placed[3]; /* tasks started with data, by where they ran (nodeq.h) */

  struct ready_queue rq __attribute__((aligned(CACHELINE))); /* a cache line of its own */

  int mail_lock __attribute__((aligned(CACHELINE)));
  fiber *mail; /* fibers that must run on this worker */
  struct idler idle;
  /* the OS thread */
  pthread_t os;
  int os_tid;
  int started;
  char *altstack;
  void *native_sp; /* the OS thread's own context, while in the scheduler */
  void *native_lo;
  size_t native_size;
#if ITO_TSAN
  void *sched_tsan;  /* ThreadSanitizer contexts: the scheduler stack's */
  void *native_tsan; /* and the OS thread's own */
#endif
} worker;

_Static_assert(offsetof(worker, dq) == 0, "worker: the deque comes first");
_Static_assert(offsetof(worker, cur) == W_CUR, "asm: W_CUR");
_Static_assert(offsetof(worker, sched_hi) == W_SCHED_HI, "asm: W_SCHED_HI");
_Static_assert(offsetof(worker, hook_mark) == W_HMARK, "asm: W_HMARK");
_Static_assert(offsetof(worker, hook_quiet) == W_HQUIET, "asm: W_HQUIET");
_Static_assert(offsetof(worker, rq) % CACHELINE == 0, "worker: the ready queue's line");

extern __thread worker *ito__tls_worker HIDDEN;

/* The current worker, read afresh (invariant 2). */
static inline worker *cur_worker(void) {
  worker *w;
#if defined(__x86_64__)
  __asm__ volatile("movq ito__tls_worker@gottpoff(%%rip), %0\n\tmovq %%fs:(%0), %0" : "=r"(w));
#elif defined(__aarch64__)
  __asm__ volatile(
      "mrs %0, tpidr_el0\n\t"
      "adrp x16, :gottprel:ito__tls_worker\n\t"
      "ldr x16, [x16, #:gottprel_lo12:ito__tls_worker]\n\t"
      "ldr %0, [%0, x16]"
      : "=r"(w)
      :
      : "x16");
#else
  w = *(worker *volatile *)&ito__tls_worker;
#endif
  return w;
}

/* The thread w runs (NULL: none, or the scheduler; w may be NULL). */
static inline struct ithread *running_thread(const worker *w) {
  fiber *f = w ? w->cur : NULL;
  return f ? f->thread : NULL;
}

/* The fiber of the calling lightweight thread if it may be suspended, or
 * NULL: on a thread that is not an ito thread, and for a pinned one, whose
 * waits block its OS thread. */
static inline fiber *parkable(worker *w) {
  fiber *f = w ? w->cur : NULL;
  if (f && UNLIKELY(f->thread && f->thread->pin)) return NULL;
  return f;
}

#endif
