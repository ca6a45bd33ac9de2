/* libito-omp.so: the GNU OpenMP runtime ABI (what gcc -fopenmp emits) on
 * ito's lightweight threads. Every team member and every explicit task is a
 * lightweight thread; waiting parks it and its worker runs other work.
 * Design and invariants: docs/openmp.md. Private to the library. */
#ifndef ITO_OMP_INT_H
#define ITO_OMP_INT_H

#define _GNU_SOURCE
#include <ito/ito.h>

#include "../dropin/ito_dropin.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OMP_API __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* An invariant of docs/openmp.md: checked in Debug and sanitizer builds,
 * compiled out of Release (no side effects in cond). */
#if !defined(NDEBUG) || ITO_ASAN || ITO_TSAN
#define ITO_OMP_ASSERT(cond) \
  (LIKELY(cond) ? (void)0    \
                : ito__omp_fatal("%s:%d: invariant broken: %s", __FILE__, __LINE__, #cond))
#else
#define ITO_OMP_ASSERT(cond) ((void)0)
#endif

/* ---- internal control variables ------------------------------------------ */
enum { SCHED_RUNTIME = 0, SCHED_STATIC = 1, SCHED_DYNAMIC = 2, SCHED_GUIDED = 3, SCHED_AUTO = 4 };
/* Internal: nonmonotonic dynamic, by halving (loop.c) */
#define SCHED_SPLIT 5

/* A member's part of a split loop: [lo, hi) iteration indices. */
struct range {
  int lock;
  unsigned long lo, hi;
} __attribute__((aligned(64)));
#define SCHED_MONOTONIC 0x80000000u

/* The ICVs a task carries (its data environment). */
struct icv {
  int nthreads;            /* nthreads-var: the size of the next team */
  int sched;               /* run-sched-var kind (SCHED_*, maybe | SCHED_MONOTONIC) */
  long chunk;              /* run-sched-var chunk (0: the kind's default) */
  int dyn;                 /* dyn-var */
  int thread_limit;        /* thread-limit-var (INT_MAX: none) */
  int default_device;      /* default-device-var */
  uintptr_t def_allocator; /* def-allocator-var (alloc.c) */
};

/* omp_allocator_handle_t values (alloc.c): above the last predefined one a
 * handle is a user-made allocator's address. */
#define ALLOC_NULL 0
#define ALLOC_DEFAULT 1        /* omp_default_mem_alloc */
#define ALLOC_MAX_PREDEFINED 8 /* omp_thread_mem_alloc */

/* Process-wide settings, read from the environment at load. */
struct omp_global {
  struct icv init; /* the initial task's ICVs */
  int nlist;       /* OMP_NUM_THREADS entries (nthreads-var per level) */
  int list[16];
  int max_active_levels;     /* max-active-levels-var */
  int nprocs;                /* CPUs usable by the process */
  int max_task_priority;     /* max-task-priority-var (OMP_MAX_TASK_PRIORITY) */
  int proc_bind;             /* bind-var of the first level, omp_proc_bind_t (OMP_PROC_BIND) */
  int display_affinity;      /* display-affinity-var (OMP_DISPLAY_AFFINITY) */
  char affinity_format[256]; /* affinity-format-var (OMP_AFFINITY_FORMAT) */
  int nteams;                /* nteams-var (0: the default, 3 teams) */
  int teams_thread_limit;    /* teams-thread-limit-var (0: none) */
  int member_tls;            /* threadprivate per member: ITO_TLS=thread is in force, so each
                              * member has a TLS block, which the tasks it runs use
                              * (docs/openmp.md, "threadprivate"); -1 until the runtime has
                              * started (ito__omp_member_tls) */
  int program_tls;           /* the program's modules had TLS of their own at load: where
                              * threadprivate variables can be (team.c binds teams for them
                              * when members have no TLS of their own) */
};
extern struct omp_global ito__omp_g;
/* The library's set-up (omp.c): the environment read into ito__omp_g, the
 * initial task's ICVs, libc's sleeps and the runtime's defaults. From the
 * constructor, from the runtime before it starts (__ito_dropin_setup), and
 * from every entry point that may come first (a constructor of another
 * library) and reads what it sets: OMP_SETUP() (docs/openmp.md, "Set-up").
 * Once done, omp_ready is 1; the runtime never runs without it. */
extern int ito__omp_ready;
void ito__omp_setup(void);
#define OMP_SETUP()                                                               \
  do {                                                                            \
    if (__builtin_expect(!__atomic_load_n(&ito__omp_ready, __ATOMIC_ACQUIRE), 0)) \
      ito__omp_setup();                                                           \
  } while (0)
/* cancel-var (OMP_CANCELLATION): cancel constructs act. A variable of its
 * own: GOMP_task's fast path reads it from assembly (task.c). */
extern int ito__omp_cancellation;

#define MAX_LEVELS 255 /* omp_get_supported_active_levels */

/* ---- tasks -------------------------------------------------------------------
 * A task's kids word counts its children: the low half those whose code has
 * not finished (what taskwait waits for), the high half those not yet over
 * with all their descendants (what a barrier, the end of a region and the
 * task's own end wait for). One waiter bit per half: the task sets it
 * (under its qlock) before it parks, and whoever brings that half to zero
 * with the bit set wakes it. docs/openmp.md, "Counting". */
#define KID_RUN 1ULL
#define KID_ALIVE (1ULL << 32)
#define KID_BOTH (KID_RUN | KID_ALIVE)
#define KID_WAIT_RUN (1ULL << 31)
#define KID_WAIT_ALIVE (1ULL << 63)
#define KID_RUN_MASK 0x7FFFFFFFULL
#define KID_ALIVE_MASK (0x7FFFFFFFULL << 32)

enum { TASK_INITIAL, TASK_IMPLICIT, TASK_EXPLICIT, TASK_INLINE };

struct team;
struct ws;
struct taskgroup;
struct deptab;
struct dnode;

/* The completion event of a task with detach (omp_event_handle_t is its
 * address): the task is complete once its code has ended and the event is
 * fulfilled, whichever comes last (task.c). */
enum { EV_NONE, EV_PENDING, EV_FULFILLED };
struct tevent {
  int lock;
  int state; /* EV_*, under lock */
};

typedef struct task {
  struct task *parent;  /* the creating task (implicit tasks: the encountering task) */
  struct team *team;    /* the team it binds to; NULL: outside any region */
  unsigned id;          /* omp_get_thread_num(): the member whose strand runs it (explicit
                         * tasks: set when it begins, kept to its end) */
  unsigned char kind;   /* TASK_* */
  unsigned char final_; /* final task: its children run at once */
  uint64_t kids;
  int qlock; /* the task's own wait queue */
  void *qhead, *qtail;
  struct taskgroup *tg;      /* innermost taskgroup open in this task */
  struct taskgroup *ingroup; /* the taskgroup it was created in (counted there) */
  struct taskgroup *cgroup;  /* the innermost taskgroup whose taskgroup set it is in: its
                              * creator's open one, else its creator's cgroup (cancel.c) */
  struct deptab *deps;       /* dependences among its children */
  struct dnode *node;        /* its own dependence node, or NULL */
  struct icv icv;
  unsigned team_num, num_teams; /* the league of a host teams region (omp_get_team_num) */
  /* implicit tasks only: the work-sharing state of this member */
  unsigned ws_seq;              /* work shares entered */
  struct ws *ws;                /* the current one */
  struct team *solo;            /* initial tasks: the team of one of orphaned work shares */
  unsigned long ws_k;           /* static schedules: chunks taken */
  unsigned long ord_lo, ord_hi; /* ordered loops: the chunk held ([lo, hi) iteration indices) */
  /* explicit tasks */
  void (*fn)(void *);
  void *data;
  void *heap;                 /* a block to free once the task is over */
  struct tevent ev;           /* detach: its completion event */
  int pendc;                  /* explicit tasks: what their completion waits for (its code,
                               * and its event with detach); the last to go completes it */
  unsigned depth;             /* ancestors (the initial task: 0) */
  struct task *imp;           /* the nearest of itself and its ancestors that is not a
                               * deferred explicit task (implicit, initial or run inline):
                               * where the walk of pending.c's descends starts */
  int prio;                   /* priority, within [0, max-task-priority-var] */
  short numa;                 /* the node its strand runs it on (docs/numa.md): its data's
                               * (-1: none known), else its parent's; -2: none */
  unsigned char numa_own;     /* numa is its own data's: counted by the profiler */
  unsigned char block;        /* its heap block is TASK_BLOCK bytes (may be kept) */
  struct task *pnext, *pprev; /* pending: in a member's list (task.c) */
  unsigned maker;             /* a task of a team waiting for predecessors: its creator's
                               * member number (counted in its waiting) */
  uintptr_t *red0;            /* the registered reductions it sees outside its taskgroups */
} task;

struct taskgroup {
  struct taskgroup *prev;
  uintptr_t *red; /* the registered reductions tasks created in it see */
  uint64_t count; /* tasks created in it not yet over (KID_ALIVE units) */
  int cancelled;  /* cancel taskgroup: its tasks not yet begun are discarded */
  int workshare;  /* opened by a work-sharing construct's task reductions: a
                   * cancel taskgroup in it is for the one around it */
};

/* ---- teams ------------------------------------------------------------------- */
#define NWS 8 /* work shares a member may be ahead of the slowest one */

struct ws {
  unsigned long avail; /* the work-share number this slot may hold next */
  unsigned long ready; /* number + 1 once initialised for it */
  unsigned left;       /* members that left it */
  int lock;
  /* a loop, in iteration indices [0, niter) */
  unsigned long long start, incr, end;
  unsigned long niter, chunk;
  int kind; /* SCHED_STATIC, _DYNAMIC, _GUIDED */
  int ordered;
  unsigned long next;     /* dynamic, guided, sections: first index not handed out */
  unsigned long ord_turn; /* ordered: the first index whose ordered part may run */
  struct range *ranges;   /* SCHED_SPLIT: one per member, freed by the last to leave */
  void *da;               /* doacross loops: their struct doacross (loop.c), one block
                           * freed by the last to leave */
  void *mem;              /* gcc's shared scratch memory (scan, lastprivate(conditional:)):
                           * made by the first member in, freed by the last to leave */
  void *copy;             /* single copyprivate */
  int copy_set;
  int cancelled; /* cancel for / cancel sections: no more iterations or
                  * sections are handed out (cleared with the fields from
                  * start on when a loop or sections is initialised) */
} __attribute__((aligned(64)));

/* A member of a team as a runner of tasks (task.c, "Pending tasks"), on a
 * cache line of its own: the deferred tasks its strand made or was handed,
 * not yet begun, and, while its strand waits at a task scheduling point,
 * how to wake it for one it may run. */
struct ident {
  int lock;                 /* the list and the fields below */
  unsigned n;               /* tasks in the list (read without the lock as a hint) */
  unsigned waiting;         /* tasks its strand made that wait for predecessors (with
                             * n: the cut-off, task.c) */
  struct task *head, *tail; /* oldest, newest */
  int parked;               /* its strand waits (parks) at a scheduling point */
  int poked;                /* woken for a task since it announced the wait */
  struct task *lendfor;     /* while parked: it runs descendants of this task only (NULL:
                             * any task of the team, at a barrier) */
  int *wq_lock;             /* while parked: the queue it parks on */
  void **wq_head, **wq_tail;
  int plock; /* its own queue, for the barrier's wait */
  void *phead, *ptail;
  /* blocks of TASK_BLOCK bytes its strand freed, for the tasks it makes
   * (touched by that strand only: task.c) */
  void *blocks; /* a list linked through each block's first word */
  unsigned nblocks;
  unsigned nested; /* a team of one: tasks its strand runs at their creation,
                    * one inside another's code (task.c, SOLO_NEST) */
} __attribute__((aligned(64)));
#define TASK_BLOCK 512
#define TASK_BLOCKS_KEPT 32
#define TEAM_IDS_INLINE 4

typedef struct team {
  unsigned n;
  int combined; /* work share 0 was made with the team (combined construct) */
  int level, active_level;
  task *encountering; /* the task that encountered the parallel construct */
  int enc_preempt;    /* the encountering thread was preemptible before */
  void (*fn)(void *);
  void *data;
  /* the end of the region: members not yet over, waiter bit as in kids */
  uint64_t left;
  int qlock; /* the master's wait at the end */
  void *qhead, *qtail;
  /* cancel parallel: set once, never reset (a team is one region's); a
   * cancellable barrier stops waiting when it is set (cancel.c) */
  int cancelled;
  /* members that left a cancelled region: from which work share on each
   * will never leave one (team.c, ring_gone), under ring_lock */
  unsigned long *gone;
  unsigned ngone;
  int ring_lock;
  /* barrier (members park on their ident's own queue) */
  unsigned bar_arrived;
  unsigned bar_phase;
  /* waits on work-share state (ordered turns, copyprivate, a busy slot) */
  int cq_lock;
  void *cq_head, *cq_tail;
  int cq_waiters;
  int home;       /* bound: member i lives on worker (home + i) % workers; -1 */
  int tls_on;     /* members [1, n) run on TLS blocks of their own (member TLS) */
  void **tls;     /* the outermost team's: member i's block, kept between regions
                   * (NULL: members take spare blocks and give them back) */
  uintptr_t *red; /* task reductions registered by parallel with the task modifier */
  /* pending tasks (task.c): one ident per member */
  struct ident *ids; /* ids_in, or allocated for a team of more than TEAM_IDS_INLINE */
  unsigned nparked;  /* idents whose strand is parked (parked set) */
  int has_prio;      /* a task with a priority above 0 was made */
  bool root_left;    /* the program's initial thread left its home for the region */
  struct ws ws[NWS];
  struct ident ids_in[TEAM_IDS_INLINE];
} team;

/* ---- omp.c: current task, waits ------------------------------------------------ */
task *ito__omp_cur(void);
/* Where the running stack's context word is (ito_dropin_where), filled by
 * the library's constructor; ctx_off stays 0 until then. */
extern struct ito_dropin_where ito__omp_where;
/* ito__dropin_ctx() without the call into libito.so (a call that comes
 * before the constructor takes the call). */
static inline void **ito__omp_ctx(void) {
  if (__builtin_expect(ito__omp_where.ctx_off == 0, 0)) return ito__dropin_ctx();
  return ito_dropin_ctx_at(&ito__omp_where);
}
void ito__omp_set_cur(task *t);
void ito__omp_start(void);
void ito__omp_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* OMP_DISPLAY_AFFINITY: the calling thread of a region shows its affinity
 * if its place in a team is new (affinity.c). */
void ito__omp_display_affinity_member(void);
/* sleep.c: the next definitions of the sleeps it interposes, and libc's in
 * the runtime's table; from the constructor. */
void ito__omp_sleep_setup(void);
/* Waits until the kids half selected by wait_bit (KID_WAIT_RUN or
 * KID_WAIT_ALIVE) is zero. Meanwhile the strand runs pending tasks of its
 * team (task.c): any of them with any set (a barrier, the end of a
 * region), else only descendants of t (task scheduling constraint 2). */
void ito__omp_wait_kids(task *t, uint64_t wait_bit, bool any);
/* The program's initial task (the root ito thread's, whose context word is
 * NULL). */
extern task ito__omp_root_initial;
/* The current task when the caller has the running stack's context word
 * (slot, from ito__dropin_ctx: NULL outside ito threads). */
static inline task *ito__omp_cur_at(void **slot) {
  if (LIKELY(slot != NULL)) return *slot ? (task *)*slot : &ito__omp_root_initial;
  return ito__omp_cur();
}
/* subtracts d from *word (a kids-style word of owner's queue) and wakes the
 * owner if it waits on that half and the half became zero; returns which
 * halves d touched became zero (this caller brought them there):
 * KIDS_RUN_ZERO, KIDS_ALIVE_ZERO, or 0 */
enum { KIDS_RUN_ZERO = 1, KIDS_ALIVE_ZERO = 2 };
int ito__omp_kids_sub(uint64_t *word, uint64_t d, int *qlock, void **head, void **tail);
/* Waits until the half of *word selected by wait_bit is zero, running
 * pending tasks meanwhile as ito__omp_wait_kids: those lendfor descends
 * from, or any (lendfor NULL, any set); with neither, none. */
void ito__omp_word_wait(uint64_t *word, uint64_t wait_bit, int *qlock, void **head, void **tail,
                        task *lendfor, bool any);
/* the team's condition queue: wait until pred(arg), and wake all waiters */
void ito__omp_team_wait(team *tm, int (*pred)(void *), void *arg);
void ito__omp_team_notify(team *tm);
/* OMP_DISPLAY_ENV's report, on stderr: verbose adds ito's own variables */
void ito__omp_display_env(int verbose);

/* Is member TLS in force (ito__omp_g.member_tls, resolved on first use)? */
int ito__omp_member_tls_resolve(void);
static inline int ito__omp_member_tls(void) {
  int v = __atomic_load_n(&ito__omp_g.member_tls, __ATOMIC_RELAXED);
  return LIKELY(v >= 0) ? v : ito__omp_member_tls_resolve();
}

/* ---- team.c ---------------------------------------------------------------------- */
void ito__omp_barrier(task *me);
/* a barrier that returns true, without waiting for the others, once the
 * region is cancelled (GOMP_barrier_cancel and the cancellable ends) */
bool ito__omp_barrier_cancel(task *me);
/* wakes the members waiting at the team's barrier (they test again) */
void ito__omp_barrier_wake(team *tm);
/* work shares: enter the next one (returns it; *first: the caller must
 * initialise it, then call ito__omp_ws_publish) and leave it */
team *ito__omp_ws_team(task *me);
struct ws *ito__omp_ws_enter(task *me, int *first);
void ito__omp_ws_publish(task *me, struct ws *w);
/* the first member in, after initialising w and before publishing it:
 * w->mem = size bytes of zeroed memory for gcc's scan and
 * lastprivate(conditional:) code; every member then hands w->mem back */
void ito__omp_ws_mem_init(struct ws *w, size_t size);
void ito__omp_ws_leave(task *me);
/* a parallel region: fn(data) run by a team; init(ws, arg) prepares the
 * first work share before any member runs (combined constructs) */
void ito__omp_parallel(void (*fn)(void *), void *data, unsigned nthreads, unsigned flags,
                       void (*init)(struct ws *, void *, unsigned), void *init_arg);

void ito__omp_ordered_wait(task *me);
void ito__omp_ordered_pass(task *me);

void ito__omp_parallel_start_ws(void (*fn)(void *), void *data, unsigned nthreads,
                                void (*init)(struct ws *, void *, unsigned), void *arg);

OMP_API void GOMP_barrier(void);

/* ---- loop.c ---------------------------------------------------------------------- */
void ito__omp_loop_init(struct ws *w, bool up, unsigned long long start, unsigned long long end,
                        unsigned long long incr, int kind, unsigned long chunk, int ordered,
                        unsigned n);
/* the runtime schedule of the current task, resolved */
void ito__omp_runtime_sched(int *kind, unsigned long *chunk);

/* ---- lock.c: omp_lock_t and omp_nest_lock_t as this library lays them out
 * in gcc's 4 and 16 bytes ------------------------------------------------------------ */
typedef struct {
  unsigned id;
} lock_t;
typedef struct {
  unsigned id;
  int depth;
  void *owner;
} nest_lock_t;
OMP_API void omp_init_lock(lock_t *l);
OMP_API void omp_init_lock_with_hint(lock_t *l, int hint);
OMP_API void omp_destroy_lock(lock_t *l);
OMP_API void omp_set_lock(lock_t *l);
OMP_API void omp_unset_lock(lock_t *l);
OMP_API int omp_test_lock(lock_t *l);
OMP_API void omp_init_nest_lock(nest_lock_t *l);
OMP_API void omp_init_nest_lock_with_hint(nest_lock_t *l, int hint);
OMP_API void omp_destroy_nest_lock(nest_lock_t *l);
OMP_API void omp_set_nest_lock(nest_lock_t *l);
OMP_API void omp_unset_nest_lock(nest_lock_t *l);
OMP_API int omp_test_nest_lock(nest_lock_t *l);

/* ---- cancel.c: cancellation (only with cancel-var set: ito__omp_cancellation) ---------- */
/* a task created now by parent would be discarded: its team is cancelled, or
 * the taskgroup it would be in */
bool ito__omp_create_cancelled(task *parent);
/* task t, not yet begun, is to be discarded (its team or its taskgroup is
 * cancelled) */
bool ito__omp_task_cancelled(task *t);

/* ---- depend.c -------------------------------------------------------------------- */
/* frees the dependence table of a task whose children are all over */
void ito__omp_deptab_free(task *t);
/* A node for a task of parent with these dependences (gcc's depend array),
 * its edges from the tasks before it added: returned with the creator's
 * unit still counted, so it cannot start yet. prio orders successors
 * released together. */
struct dnode *ito__omp_dep_register(task *parent, void **depend, int prio);
/* A deferred task t of node n: the creator's unit goes, and whoever brings
 * the count to zero (maybe this call) makes t ready (ito__omp_make_ready). */
void ito__omp_dep_defer(struct dnode *n, task *t);
/* An undeferred node: the creator's unit goes and waiter waits for the
 * predecessors, running its own descendants meanwhile. */
void ito__omp_dep_wait(struct dnode *n, task *waiter);
/* n's task completed: its successors lose a predecessor; n's reference
 * goes. */
void ito__omp_dep_complete(struct dnode *n);
/* The node holding most of the dependences (docs/numa.md), -1 if unknown,
 * -2 while placement by node is off. */
int ito__omp_dep_numa(void **depend);

/* ---- task.c ---------------------------------------------------------------------- */
/* A deferred task whose predecessors are done becomes pending. */
void ito__omp_make_ready(task *t);
OMP_API void GOMP_task(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long arg_size,
                       long arg_align, bool if_clause, unsigned flags, void **depend, int priority,
                       void *detach);
OMP_API void GOMP_taskwait_depend(void **depend);

/* ---- pending.c: pending tasks --------------------------------------------------- */
/* A team's lists (team_init) and their end (team_end). */
void ito__omp_ids_init(team *tm);
void ito__omp_ids_free(team *tm);
/* The strand of cur waits until done(arg, ...) is true, running pending
 * tasks of cur's team that lendfor admits meanwhile (lendfor NULL: any,
 * with any set; neither: none), and parking when there are none.
 * done(arg, WAIT_CHECK) tests without a lock; done(arg, WAIT_ARM), under
 * *qlock, makes sure whoever makes it true wakes the queue (qlock, head,
 * tail) and tests; done(arg, WAIT_DISARM), under *qlock, once done, undoes
 * what WAIT_ARM did and returns only once no waker will touch the waiter's
 * memory (it may release *qlock meanwhile, and holds it again on return). */
enum { WAIT_CHECK, WAIT_ARM, WAIT_DISARM };
void ito__omp_lend_wait(task *cur, task *lendfor, bool any, int *qlock, void **head, void **tail,
                        int (*done)(void *, int), void *arg);
/* Makes t pending in member k's list of tm (waking a strand that may run
 * it). t's parent must stay alive until it returns (its creator is running,
 * or t is pinned): t itself may be over by then. */
void ito__omp_push_pending(team *tm, unsigned k, task *t);
/* The cut-off: tm's members' strands made at least cap deferred tasks each
 * not yet begun, pending or waiting for predecessors (member k at least
 * cap: the others are summed only then). */
bool ito__omp_pending_sum(team *tm, unsigned cap);
static inline bool ito__omp_pending_many(team *tm, unsigned k, unsigned cap) {
  struct ident *me = &tm->ids[k];
  if (LIKELY(__atomic_load_n(&me->n, __ATOMIC_RELAXED) +
                 __atomic_load_n(&me->waiting, __ATOMIC_RELAXED) <
             cap))
    return false;
  return ito__omp_pending_sum(tm, cap);
}
/* Runs one pending task of tm that x admits (NULL: any) on cur's strand,
 * if there is one. */
bool ito__omp_run_pending(task *cur, team *tm, const task *x);
/* Runs the explicit task t, taken from a list or made by cur, as a call on
 * cur's strand, as cur's member (task.c). */
void ito__omp_run_task(task *cur, task *t);
/* The team whose lists hold cur's pending tasks: its team, or outside any
 * region its initial task's team of one (NULL if none was made). */
team *ito__omp_pend_team(task *cur);

/* ---- reduction.c ----------------------------------------------------------------- */
/* a work-sharing construct's reductions with the task modifier */
void ito__omp_ws_reductions(task *me, uintptr_t *data);
/* parallel with the task modifier: before the members start */
void ito__omp_parallel_reductions(team *tm, uintptr_t *data);
OMP_API void GOMP_taskgroup_start(void);
OMP_API void GOMP_taskgroup_end(void);
OMP_API void GOMP_taskgroup_reduction_register(uintptr_t *data);

#endif
