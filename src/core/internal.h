/* Internal declarations shared by the runtime's files. Naming: ito_ is the
 * public ABI, ito__ is internal and hidden. */
#ifndef ITO_INTERNAL_H
#define ITO_INTERNAL_H

#include <ito/ito.h>

#include "../dropin/ito_dropin.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CACHELINE 64

#if defined(__SANITIZE_ADDRESS__) && !defined(ITO_ASAN)
#define ITO_ASAN 1
#endif

/* ---- small atomics over plain fields (public structs hold plain ints) ---- */
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* A full memory barrier. On x86-64 a locked no-op on the stack: about 5 ns
 * here, where mfence costs 25. */
static inline void full_fence(void) {
#if defined(__x86_64__)
  __asm__ volatile("lock orq $0, (%%rsp)" ::: "memory", "cc");
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Nanoseconds on a clock. */
static inline long long clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__)
  __asm__ volatile("pause" ::: "memory");
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#else
  __asm__ volatile("" ::: "memory");
#endif
}

static inline void spin_lock(int *l) {
  for (;;) {
    if (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0) return;
    while (LOAD_RLX(l)) cpu_relax();
  }
}
static inline bool spin_trylock(int *l) {
  return LOAD_RLX(l) == 0 && __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0;
}
static inline void spin_unlock(int *l) { __atomic_store_n(l, 0, __ATOMIC_RELEASE); }

/* ---- waiters: what a blocking call queues (a fiber or a plain OS thread) --- */
typedef struct waiter {
  struct waiter *next;
  struct fiber *fiber;      /* NULL: an OS thread sleeping on futex */
  int futex;                /* OS thread: becomes 1 when woken */
  int result;               /* value handed to the woken (e.g. ETIMEDOUT) */
  int queued;               /* still in a wait queue (guarded by the queue's lock) */
  int parking;              /* a join's park() may still read the thread (thread.c) */
  int tag;                  /* the waiter's kind, for queues that mix kinds (rwlocks) */
  void *queue;              /* the wait queue's owner, for timeouts */
} waiter;

/* ---- fork records ---------------------------------------------------------
 * Written by ito_tg_fork_ (assembly) in its own frame on the forking stack;
 * the layout is fixed by src/arch/ctx_*.S. */
#if defined(__x86_64__)
#define REC_NREGS 9   /* rbx rbp r12 r13 r14 r15 sp pc fpctl */
#define REC_SP 6
#elif defined(__aarch64__)
#define REC_NREGS 22  /* x19-x28 x29 x30(pc) sp d8-d15 fpcr */
#define REC_SP 12
#else
#error "ito supports x86-64 and AArch64"
#endif
struct ito_rec {
  uint64_t regs[REC_NREGS];
  ito_tg_t *tg;
  struct fiber *fiber;  /* the fiber whose stack holds the forking frame */
};

/* ---- lightweight threads ------------------------------------------------
 * The descriptor lives in the header of the fiber the thread started on and
 * is freed with it, when the thread is joined (or ends, if detached). */
typedef struct ithread {
  uint32_t gen;             /* bumped at each reuse; part of the handle */
  int flags;                /* TH_ROOT, TH_DETACHED */
  int sync;                 /* TS_RUNNING, TS_EXITING, TS_DONE, TS_CLAIMED */
  int detach_refs;          /* detached while running: the detacher and the ending thread
                               each drop one, the last frees the descriptor (thread.c) */
  waiter *joiner;           /* NULL, a joiner's waiter, or JOINER_DETACHED */
  void *(*fn)(void *);
  void *arg;
  void *result;
  void **keys;              /* ITO_KEYS_MAX slots, allocated on first set */
  int pin;                  /* > 0: stays on its OS thread (ito__dropin_pin) */
} ithread;

enum { TS_RUNNING = 0, TS_EXITING = 1, TS_DONE = 2, TS_CLAIMED = 3 };
#define JOINER_DETACHED ((waiter *)1)
/* TH_ANON: detached from birth and never handed out (ito__dropin_spawn) */
enum { TH_ROOT = 1, TH_DETACHED = 2, TH_ANON = 4 };

/* ---- fibers: a stack and a saved context ------------------------------- */
typedef struct __attribute__((aligned(64))) fiber {
  ithread th;               /* the thread started on this fiber, if any */
  void *sp;                 /* saved stack pointer while not running */
  char *lo, *hi;            /* usable stack [lo, hi) */
  char *map;                /* start of the mapping (guard page first), NULL: not ours */
  size_t maplen;
  ithread *thread;          /* the lightweight thread this fiber runs for */
  void *ctx;                /* a layer's word for the code on this stack (ito__dropin_ctx):
                               libito-omp.so keeps its current task here */
  struct worker *home;      /* non-NULL: runs only on this worker (ito__dropin_home); when
                               ready it goes to the home's mail, never to a queue
                               thieves take from, and its creates queue the child */
  struct fiber *next;       /* ready queue / free list */
  waiter w;                 /* used while blocked */
  void *asan_fake;
  uint32_t guarded;         /* a PROT_NONE page sits below lo (1 for pool stacks, 2 for FIBER_OWN) */
  uint32_t kind;            /* FIBER_* */
  uint32_t own_class;       /* FIBER_OWN: log2 of the mapping's size */
  /* A fiber made by taking a fork record starts by resuming that record.
   * A fiber started by ito_create keeps here its creator's continuation
   * (a create record), published at create_idx of create_worker's deque. */
  struct ito_rec start;
  struct worker *create_worker;
  uint64_t create_idx;
#if ITO_TSAN
  void *tsan;               /* ThreadSanitizer's context for this stack (docs/fibers.md) */
  int tsan_dirty;           /* frames were abandoned on it (ito_exit): renew tsan before reuse */
#endif
} fiber;

/* FIBER_POOL: a pool stack; FIBER_NATIVE: an OS thread's own stack (the
 * root); FIBER_OWN: a larger stack mapped for one thread and unmapped when
 * it is released; FIBER_USER: the caller's memory, never freed by ito. */
enum { FIBER_POOL = 0, FIBER_NATIVE = 1, FIBER_OWN = 2, FIBER_USER = 3 };
enum { ENT_FIBER = 1, ENT_CREATE = 2, ENT_TAGS = 3 };

/* ---- workers -------------------------------------------------------------
 * The deque holds tagged words: a fork record (struct ito_rec *), a
 * suspended fiber (fiber * | ENT_FIBER) or a create record, the continuation
 * of a thread that called ito_create (struct ito_rec * | ENT_CREATE). The owner pushes and pops at tail
 * without atomic read-modify-write; thieves take from head under steal_lock.
 * See docs/scheduler.md for the protocol. */
typedef struct worker {
  _Atomic uint64_t tail;
  uintptr_t *slots;
  uint64_t mask;
  fiber *cur;                       /* the fiber running on this worker */
  void (*post_fn)(void *);          /* run right after the next switch lands */
  void *post_arg;
  int id;
  int fence_pops;                   /* > 0: the owner's pops fence (thieves then need no membarrier) */
  char pad1[CACHELINE - 56];

  _Atomic uint64_t head;
  int steal_lock;
  char pad2[CACHELINE - 12];

  /* ready queue: fibers that can run, FIFO; any worker may push or take */
  int rq_lock;
  int rq_len;
  fiber *rq_head, *rq_tail;
  char pad3[CACHELINE - 24];

  /* scheduler context */
  void *sched_sp;
  char *sched_lo, *sched_hi;
  int sched_action;
  void *sched_arg;
  fiber *sched_from;

  /* per-worker pools */
  fiber *free_fibers;
  int nfree_fibers;
  uint64_t rng;
  pthread_t os;
  int os_tid;
  int started;
  char *altstack;
  uint64_t steals;                  /* successful steals by this worker (for debugging) */
  long live;                        /* threads created here minus threads ended here */
  void *native_sp;                  /* the OS thread's own context, while in the scheduler */
  void *native_lo;
  size_t native_size;
  int mail_lock;
  fiber *mail;                      /* fibers that must run on this worker */
  /* idle state (docs/idle.md) */
  int spinning;                     /* counted in S of ito__rt_idle; own field */
  int ws_hint;                      /* worker to try first after a wake-up, or -1 */
  int on_list;                      /* on the sleeper list (sleep_lock) */
  int wake_word;                    /* futex: 0 while asleep, 1 once woken */
  struct worker *sleep_next;        /* sleeper list link (sleep_lock) */
  long spin_ns;                     /* this worker's spin before sleeping (adaptive) */
  unsigned io_pass;                 /* scheduling passes since the last I/O poll */
#if ITO_TSAN
  void *sched_tsan;                 /* ThreadSanitizer contexts: the scheduler stack's */
  void *native_tsan;                /* and the OS thread's own */
#endif
} worker;

/* what a fiber asks of the scheduler when it switches to it */
enum {
  ACT_NONE = 0,
  ACT_BLOCK,       /* fiber blocked: take its records, run post_fn (releases a lock) */
  ACT_YIELD,       /* fiber yields: take its records, queue it at the ready tail */
  ACT_ABANDON,     /* fiber's fork was stolen: the child is done (sched_arg = tg) */
  ACT_EXIT,        /* fiber's thread ended: free the fiber */
  ACT_JOIN_WAIT,   /* fiber waits in a task-group join (sched_arg = tg) */
  ACT_MIGRATE,     /* fiber moves to the worker sched_arg (its mailbox) */
};

/* Pushes keep DEQUE_MARGIN entries free: the assembly fork checks capacity
 * only when tail crosses a multiple of DEQUE_MARGIN, so every pusher must
 * refuse a push that would leave fewer free (docs/scheduler.md). */
#define DEQUE_MARGIN 4096
static inline int deque_full(const worker *w, uint64_t t) {
  return t - atomic_load_explicit(&w->head, memory_order_relaxed) + DEQUE_MARGIN > w->mask;
}

/* ---- the runtime --------------------------------------------------------- */
typedef struct runtime {
  int state;                        /* 0 off, 1 starting, 2 running, 3 stopping */
  int nworkers;
  int homes;                        /* some fiber has had a home worker (ito__dropin_home) */
  worker **workers;
  size_t stack_size;                /* usable bytes per fiber stack */
  int bind;
  int guard_mode;                   /* 0 auto, 1 always, 2 never */
  long guard_budget;                /* guarded stacks we may still create */
  _Atomic long live_outside;        /* threads created by non-workers, minus those ended there */
  _Atomic int stop;
  int wait_active;                  /* ITO_WAIT_POLICY=active: never sleep */
  long spin_ns;                     /* ITO_SPIN_US, in ns: the least spin */
  long spin_max_ns;                 /* the most an adaptive spin grows to */
  int sleep_lock;                   /* guards the sleeper list, Z and io_poller */
  worker *sleep_top;                /* the sleeper list */
  worker *io_poller;                /* the sleeper waiting in epoll_wait, if any (io.c) */
  _Atomic unsigned rr;              /* round robin for submissions from outside */
  int init_lock;
  int root_is_main;
  ithread *root;
  /* global pools (overflow of the per-worker ones) */
  int pool_lock;
  fiber *pool_fibers;
  /* timers for timed waits of fibers: one deadline-sorted list per clock
   * (TIMER_REALTIME, TIMER_MONOTONIC; sync.c) */
  int timer_lock;
  struct timer *timers[2];
} runtime;

extern runtime ito__rt HIDDEN;
/* Thieves use membarrier(2), so the owner's deque path needs no fence
 * (read by the assembly fork path, hence its own variable). */
extern int ito__rt_asym_fence HIDDEN;
extern __thread worker *ito__tls_worker HIDDEN;

/* The idle word, S << 32 | M | Z: spinning and sleeping workers (docs/idle.md).
 * A publisher of work must wake somebody when S == 0 and Z > 0. M (bit 31)
 * marks symmetric mode (no membarrier): it keeps the word nonzero so that
 * the fork's one-load check always leads to the branch that fences before
 * reading the counts. On its own cache line; the assembly fork path reads
 * it. */
struct ito_idle_word {
  uint64_t v;
  char pad[CACHELINE - 8];
} __attribute__((aligned(CACHELINE)));
extern struct ito_idle_word ito__rt_idle HIDDEN;
#define IDLE_SPIN_ONE (1ULL << 32)
#define IDLE_SYM (1ULL << 31)
/* Pops that fence after the owner sees a spinner or wakes a sleeper (the
 * assembly repeats it). */
#define FENCE_WINDOW 64

/* The current worker, read afresh: a lightweight thread may move between OS
 * threads at any call that can switch, so the compiler must not reuse a TLS
 * address computed before such a call. */
static inline worker *cur_worker(void) {
  worker *w;
#if defined(__x86_64__)
  __asm__ volatile("movq ito__tls_worker@gottpoff(%%rip), %0\n\tmovq %%fs:(%0), %0"
                   : "=r"(w));
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

/* os.c */
extern struct ito_os ito__os HIDDEN;
extern int ito__dropin_mode HIDDEN;

/* The fiber of the calling lightweight thread if it may be suspended, or
 * NULL: on a thread that is not an ito thread, and for a pinned one, whose
 * waits block its OS thread. */
static inline fiber *parkable(worker *w) {
  fiber *f = w ? w->cur : NULL;
  if (f && UNLIKELY(f->thread && f->thread->pin)) return NULL;
  return f;
}

/* runtime.c */
HIDDEN int ito__ensure(void);
HIDDEN void ito__fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
HIDDEN long ito__futex_wait(int *addr, int val, const struct timespec *rel);
HIDDEN long ito__futex_wake(int *addr, int n);

/* sched.c */
HIDDEN void ito__heavy_barrier(void);
static inline void owner_barrier(void) {
  if (LIKELY(ito__rt_asym_fence))
    __asm__ volatile("" ::: "memory");
  else
    full_fence();
}
/* The owner's barrier between its tail store and head load when it pops:
 * a fence while fence_pops > 0, else none (thieves use membarrier). See
 * docs/scheduler.md, "Fenced windows". */
HIDDEN void ito__fence_expire(worker *w);
static inline void deque_owner_barrier(worker *w) {
  int n = __atomic_load_n(&w->fence_pops, __ATOMIC_RELAXED);
  if (LIKELY(!n)) {
    __asm__ volatile("" ::: "memory");
    return;
  }
  full_fence();
  __atomic_store_n(&w->fence_pops, n - 1, __ATOMIC_RELAXED);
  if (n == 1) ito__fence_expire(w);
}

/* w, the calling worker, expects a thief soon: its next FENCE_WINDOW pops
 * fence, so that the thief's steal needs a plain fence rather than a
 * membarrier (docs/scheduler.md, docs/idle.md). The x86-64 fork path does
 * the same in assembly. */
static inline void open_fence_window(worker *w) {
  if (ito__rt_asym_fence && w == cur_worker())
    __atomic_store_n(&w->fence_pops, FENCE_WINDOW, __ATOMIC_RELEASE);
}

HIDDEN void ito__wake_one(worker *hint);
HIDDEN void ito__wake_worker(worker *v);
HIDDEN void ito__wake_all(void);
HIDDEN void ito__stop_spinning(worker *w);
/* After publishing work (P1): the fence P2 and the check P3 of docs/idle.md.
 * full: the publisher fences (everything but the fork paths). */
static inline void publish_check(worker *hint, int full) {
  if (full || !ito__rt_asym_fence)
    full_fence();
  else
    __asm__ volatile("" ::: "memory");
  uint64_t x = __atomic_load_n(&ito__rt_idle.v, __ATOMIC_RELAXED) & ~IDLE_SYM;
  if (LIKELY(!x)) return;
  if (x < IDLE_SPIN_ONE) {
    ito__wake_one(hint);
  } else if (!__atomic_load_n(&hint->fence_pops, __ATOMIC_RELAXED)) {
    open_fence_window(hint); /* a spinner will try to steal from us */
  }
}
/* A spinning worker found work: it stops spinning (and may wake another). */
static inline void found_work(worker *w) {
  if (UNLIKELY(w->spinning)) ito__stop_spinning(w);
}
HIDDEN void ito__push_fiber(worker *w, fiber *f);
HIDDEN void ito__ready(fiber *f);
HIDDEN void ito__ready_list(fiber *first, fiber *last, int n);
HIDDEN void ito__make_ready(waiter *wt);
HIDDEN void ito__suspend(int action, void *arg, void (*post)(void *), void *post_arg);
HIDDEN void ito__switch_to_sched(worker *w, int action, void *arg) __attribute__((noreturn));
HIDDEN void ito__sched_loop(worker *w);
HIDDEN void ito__arrive(void);
HIDDEN void ito__run_post(worker *w);
HIDDEN void ito__switch(worker *w, fiber *from, fiber *to, int from_dying);
HIDDEN void ito__block_os(waiter *wt, clockid_t clock, const struct timespec *abstime);
/* What a lightweight thread keeps across a switch although it lives in the
 * OS thread: errno and the C++ exception globals (docs/dropin.md section 5).
 * Saving clears the exception globals for whatever runs next. */
struct ito__switch_save {
  int err;
  unsigned eh_uncaught;
  void *eh_caught;
};
HIDDEN void ito__save_thread_state(struct ito__switch_save *s);
HIDDEN void ito__restore_thread_state(const struct ito__switch_save *s);
extern void *(*ito__eh_get)(void) HIDDEN;

/* fiber.c */
HIDDEN fiber *ito__fiber_alloc(worker *w);
HIDDEN void ito__fiber_free(worker *w, fiber *f);
#define FIBER_CACHE 64 /* fibers a worker keeps before returning them to the pool */

/* The common cases of ito__fiber_alloc and ito__fiber_free, inline: a pop
 * or push on the worker's own free list. */
static inline fiber *fiber_get(worker *w) {
#if !ITO_ASAN && !ITO_TSAN
  fiber *f = w->free_fibers;
  if (LIKELY(f)) {
    w->free_fibers = f->next;
    w->nfree_fibers--;
    f->create_worker = NULL;
    f->ctx = NULL;
    f->home = NULL;
    return f;
  }
#endif
  return ito__fiber_alloc(w);
}
static inline void fiber_put(worker *w, fiber *f) {
  if (LIKELY(w && f->guarded == 1 && w->nfree_fibers < FIBER_CACHE)) {
    f->next = w->free_fibers;
    w->free_fibers = f;
    w->nfree_fibers++;
    return;
  }
  ito__fiber_free(w, f);
}
HIDDEN fiber *ito__own_fiber(size_t stack_bytes);
HIDDEN fiber *ito__user_fiber(void *addr, size_t size);
HIDDEN void ito__ctx_make(fiber *f, void (*entry)(void *));
HIDDEN void ito__install_segv(void);
HIDDEN void ito__altstack_setup(worker *w);
HIDDEN void ito__asan_start(void **fake, const void *lo, size_t size);
HIDDEN void ito__asan_finish(void *fake);
/* ThreadSanitizer: every stack has a context of its own, and each switch
 * tells ThreadSanitizer which one runs next, just before the switch (see
 * docs/fibers.md). Empty unless ITO_TSAN. */
#if ITO_TSAN
HIDDEN void ito__tsan_to(fiber *f);
HIDDEN void ito__tsan_to_ctx(void *ctx);
HIDDEN void *ito__tsan_new_ctx(void);
HIDDEN void *ito__tsan_current(void);
#define TSAN_TO(f) ito__tsan_to(f)
#define TSAN_TO_CTX(c) ito__tsan_to_ctx(c)
#else
#define TSAN_TO(f) ((void)(f))
#define TSAN_TO_CTX(c) ((void)0) /* c names fields that exist only under ITO_TSAN */
#endif
/* Tells both sanitizers, just before a switch, that f's stack runs next and
 * the current context is not kept (a resumption or a first start). */
static inline void san_enter(fiber *f) {
#if ITO_ASAN
  ito__asan_start(NULL, f->lo, (size_t)(f->hi - f->lo));
#endif
  TSAN_TO(f);
}

/* thread.c */
HIDDEN ithread *ito__thread_init(fiber *f);
HIDDEN void **ito__take_os_keys(void);
HIDDEN ithread *ito__thread_of(ito_thread_t h);
HIDDEN void ito__thread_done(ithread *t);
HIDDEN ito_thread_t ito__handle(ithread *t);
HIDDEN void ito__thread_entry(void *arg);
HIDDEN int ito__create_internal(void *(*fn)(void *), void *arg, ithread **out, int detached,
                                ito_thread_t *hout);
HIDDEN void ito__unlock_post(void *lock);

/* lazy.c */
HIDDEN void ito__take_records_of(worker *w, fiber *f);
HIDDEN int ito__run_entry(worker *w, uintptr_t e, worker *victim, uintptr_t *slot);
HIDDEN void ito__tg_child_done(ito_tg_t *tg);

/* io.c: readiness of fds (docs/io.md) */
extern int ito__io_waiters HIDDEN; /* threads parked on readiness */
HIDDEN int ito__io_poll(void);       /* epoll_wait without waiting; threads made ready */
HIDDEN int ito__io_sleep(long timeout_ns); /* the poll sleeper's wait */
HIDDEN void ito__io_kick(void);      /* wakes the poll sleeper (its eventfd) */
HIDDEN int ito__io_fd_is_ours(int fd);

/* sync.c */
HIDDEN void ito__timers_run(void);
HIDDEN long ito__timers_next_ns(void);
/* Any timer armed? One relaxed load per clock, for the scheduler's loop. */
static inline int timers_armed(void) {
  return LOAD_RLX(&ito__rt.timers[0]) != NULL || LOAD_RLX(&ito__rt.timers[1]) != NULL;
}

/* asm */
/* Returns (once) when the record is resumed, possibly on another worker. */
HIDDEN void ito__spawn_on(struct ito_rec *rec, void *sp, void (*body)(void *, void *, void *),
                          void *a0, void *a1, void *a2);
HIDDEN void ito__resume(const struct ito_rec *rec, void *sp) __attribute__((noreturn));
HIDDEN void *ito__ctx_jump(void **save_sp, void *to_sp, void *arg);
HIDDEN void ito__ctx_start(void);

#endif
