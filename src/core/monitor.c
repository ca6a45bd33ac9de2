/* The monitor thread: blocked workers, extra workers, and the watchdog's
 * messages. Invariants at the top of monitor.h; design in
 * docs/monitor.md. */
#define _GNU_SOURCE
#include "monitor.h"
#include "forkpart.h"
#include "observe.h"

#include "config.h"
#include "handle.h"
#include "idle.h"
#include "os.h"
#include "sched.h"
#include "thread.h"
#include "timer.h"
#include "posix_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ITO_EXTRA_WORKERS and ITO_WORKER_LIMIT (config.h) */
static struct mon_settings {
  long extra_workers; /* the cap on extra workers */
  long worker_limit;  /* workers in all, extra ones included */
} mon_cfg;
/* (a table: one row per variable, packed) */
/* clang-format off */
static const struct ito_cfg mon_rows[] = {
    {.name = "ITO_EXTRA_WORKERS", .kind = ITO_CFG_INT, .dst = &mon_cfg.extra_workers, .lo = 0,
     .hi = ITO_MAX_WORKERS - 1, .dflt = "256",
     .what = "the most extra workers the monitor runs beside workers blocked in calls ito cannot "
             "park (0: none)"},
    {.name = "ITO_WORKER_LIMIT", .kind = ITO_CFG_INT, .dst = &mon_cfg.worker_limit, .lo = 1,
     .hi = ITO_MAX_WORKERS, .dflt = "8192",
     .what = "the most workers (OS threads) in all, extra ones included, also for waits in the "
             "kernel on process-shared objects and I/O ito cannot park; the configured workers "
             "always run"},
};
/* clang-format on */
static void mon_defaults(void *settings) {
  *(struct mon_settings *)settings = (struct mon_settings){256, ITO_MAX_WORKERS};
}
ITO_CONFIG_MODULE(monitor_config, mon_rows, mon_cfg, mon_defaults, NULL);

/* The monitor reads the workers' fields without their locks: what it
 * sees only steers its guesses, so ThreadSanitizer is told to ignore the
 * reads (docs/monitor.md). */
#if ITO_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
#define RACY_BEGIN() AnnotateIgnoreReadsBegin(__FILE__, __LINE__)
#define RACY_END() AnnotateIgnoreReadsEnd(__FILE__, __LINE__)
#else
#define RACY_BEGIN() ((void)0)
#define RACY_END() ((void)0)
#endif

#define EXTRA_BATCH 64         /* extras started in one tick for announced waits */
#define TICK_NS 5000000LL      /* while any worker runs a fiber */
#define TICK_MAX_NS 10000000LL /* the longest tick, when everything was idle */
#define LATE_NS 200000LL       /* a signal's thread not yet running is looked at again */
#define STILL_TICKS 1          /* invariant 1: blocked for a whole tick at least */
#define CPU_STILL_NS 100000LL  /* "used no CPU": less than this in a tick */
#define WARN_NS 2000000000LL   /* a stall this long gets the watchdog's message */

enum { SLOT_FREE = 0, SLOT_RUNNING, SLOT_RETIRED };

struct sample {
  fiber *cur;
  long long cpu;
  unsigned long switches; /* the worker's switches at the last sample */
  long long same_since;   /* when cur last changed or switched out */
  int still;
  bool blocked;
  bool computing; /* its OS thread used CPU over the last tick (not blocked) */
};

static struct {
  pthread_t os;
  int started;
  int stop_word;
  int poked;                   /* ito__monitor_poke: signals to route */
  unsigned pokes;              /* pokes so far */
  int kpoked;                  /* an announced wait began, or a cancellation came */
  unsigned routed;             /* pokes before the last routing pass began (monitor_sync) */
  int cap;                     /* ITO_EXTRA_WORKERS, at most the free slots */
  int alive;                   /* extras counted as running (may_retire takes one off) */
  int wanted;                  /* blocked workers at the last tick */
  unsigned long started_total; /* extras started since the runtime started */
  long long slice;             /* ITO_PREEMPT_MS in ns, 0: no preemption (preempt.h) */
  bool preempt;                /* the signal is there: time slices or asynchronous cancellation */
  long long last_tick;         /* when the last observation was */
  long long stall_since;       /* blocked workers left work waiting since */
  long long starve_since;
  int slots; /* extra slots there are (ITO_WORKER_LIMIT less the configured workers) */
  bool warned_cap, warned_starve, warned_thread, warned_grow;
} mon;
/* Per slot, beside mon: zeroed up to the slots ever counted at each start
 * (8192 slots; a program's start touches only those it used). */
static int slot_state[ITO_MAX_WORKERS];
static struct sample samples[ITO_MAX_WORKERS];

/* How the monitor sleeps: on mon.stop_word's futex, or, where it takes
 * the process's signals through a descriptor (ito__sig_monitor_fd), in
 * ppoll on that and an eventfd of the runtime's own (kick_fd), which a
 * wake writes. Chosen before the monitor thread starts. */
static int kick_fd = -1;
static int sig_fd = -1;
static int by_fd;
static int kick_stale; /* in a child of fork: kick_fd is the parent's too */

static void wake_monitor(void) {
  if (by_fd) {
    uint64_t one = 1;
    ito__os.syscall(SYS_write, kick_fd, &one, sizeof one);
  } else {
    ito__futex_wake(&mon.stop_word, 1);
  }
}

/* Sleeps rel at most, until a wake (or a signal for the process). */
static void sleep_monitor(const struct timespec *rel) {
  if (!by_fd) {
    ito__futex_wait(&mon.stop_word, 0, rel);
    return;
  }
  struct pollfd p[2] = {{kick_fd, POLLIN, 0}, {sig_fd, POLLIN, 0}};
  ito__os.syscall(SYS_ppoll, p, (nfds_t)2, rel, NULL, (size_t)8);
  if (p[0].revents & POLLIN) {
    uint64_t n;
    ito__os.syscall(SYS_read, kick_fd, &n, sizeof n);
  }
}

/* The sleep's descriptors, before the monitor thread starts: by_fd where
 * both can be had, else the futex (and ito's handler takes signals), and
 * neither is kept (a program at its limit keeps its last descriptors). */
static void sleep_setup(void) {
  by_fd = 0;
  if (!ito__sig_on) return;
  if (kick_fd >= 0 && kick_stale) { /* (the parent's: a fresh one, under its number) */
    kick_stale = 0;
    ito__os.syscall(SYS_close, kick_fd);
    int fresh = (int)ito__os.syscall(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fresh < 0) {
      ito__own_fd_drop(kick_fd);
      kick_fd = -1;
    } else {
      kick_fd = ito__own_fd_renew(kick_fd, fresh);
    }
  }
  if (kick_fd < 0) {
    int fd = (int)ito__os.syscall(SYS_eventfd2, 0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return;
    kick_fd = ito__own_fd_take(fd);
  }
  sig_fd = ito__sig_monitor_fd();
  if (sig_fd < 0) {
    ito__os.syscall(SYS_close, kick_fd);
    ito__own_fd_drop(kick_fd);
    kick_fd = -1;
    return;
  }
  by_fd = 1;
}

/* ---- reading an OS thread ---------------------------------------------------------------- */

/* /proc/self/task/<tid>/<what> into buf (NUL-terminated); its length or -1.
 * With raw system calls: a drop-in library interposes read. */
static long read_task_file(int tid, const char *what, char *buf, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/%s", tid, what);
  int fd = (int)ito__os.syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long n = ito__os.syscall(SYS_read, fd, buf, len - 1);
  ito__os.syscall(SYS_close, fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

/* Is OS thread tid running its own code, not in a system call, right now?
 * (/proc/self/task/<tid>/syscall says "running"). A signal that lands in
 * a system call that does not restart ends it with EINTR, which a program
 * that catches no signal does not expect: the preemption signal goes only
 * to a thread seen running. */
static bool in_user_code(int tid) {
  char buf[64];
  return read_task_file(tid, "syscall", buf, sizeof buf) > 0 && !strncmp(buf, "running", 7);
}

/* Is OS thread tid asleep in the kernel (state S or D)? */
static bool in_kernel(int tid) {
  char buf[512];
  if (read_task_file(tid, "stat", buf, sizeof buf) < 0) return false;
  const char *p = strrchr(buf, ')'); /* the command name may hold anything */
  return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

static const struct {
  long nr;
  const char *name;
} syscall_names[] = {
#define N(x) {SYS_##x, #x},
#ifdef SYS_epoll_wait
    N(epoll_wait)
#endif
#ifdef SYS_select
        N(select)
#endif
#ifdef SYS_poll
            N(poll)
#endif
#ifdef SYS_wait4
                N(wait4)
#endif
#ifdef SYS_pause
                    N(pause)
#endif
                        N(epoll_pwait) N(epoll_pwait2) N(pselect6) N(ppoll) N(futex) N(read)
                            N(write) N(readv) N(writev) N(pread64) N(pwrite64) N(recvfrom)
                                N(recvmsg) N(sendto) N(sendmsg) N(accept4) N(connect) N(ioctl)
                                    N(io_uring_enter) N(io_getevents) N(waitid) N(nanosleep)
                                        N(clock_nanosleep) N(rt_sigtimedwait) N(rt_sigsuspend)
                                            N(msgrcv) N(semtimedop) N(flock) N(fcntl) N(fsync)
                                                N(openat)
#ifdef SYS_accept
                                                    N(accept)
#endif
#undef N
};

/* "in <call>" for the system call OS thread tid is blocked in, if known. */
static void blocked_call(int tid, char *out, size_t len) {
  char buf[128];
  long nr = -1;
  if (read_task_file(tid, "syscall", buf, sizeof buf) > 0 && buf[0] >= '0' && buf[0] <= '9')
    nr = strtol(buf, NULL, 10);
  const char *name = NULL;
  for (size_t i = 0; i < sizeof syscall_names / sizeof syscall_names[0]; i++)
    if (syscall_names[i].nr == nr) name = syscall_names[i].name;
  if (name)
    snprintf(out, len, "in %s", name);
  else if (nr >= 0)
    snprintf(out, len, "in system call %ld", nr);
  else
    snprintf(out, len, "in the kernel");
}

/* The thread a worker runs, as the program knows it. */
static void describe(worker *w, fiber *cur, char *out, size_t len) {
  ithread *t = cur ? cur->thread : NULL;
  if (!t)
    snprintf(out, len, "a task on worker %d", w->id);
  else if (t->flags & TH_ROOT)
    snprintf(out, len, "the main thread (worker %d)", w->id);
  else
    snprintf(out, len, "thread %#llx (worker %d)", (unsigned long long)ito__handle(t), w->id);
}

static void say(const char *msg) { ito__write_stderr(msg, strlen(msg)); }

/* ---- extra workers --------------------------------------------------------------------------- */

static bool slot_active(int i) {
  return i < ito__nworkers || LOAD_ACQ(&slot_state[i]) == SLOT_RUNNING;
}

/* Joins the extras that retired (invariant 4). */
static void reap(void) {
  int n = LOAD_ACQ(&ito__nslots);
  for (int i = ito__nworkers; i < n; i++) {
    if (LOAD_ACQ(&slot_state[i]) != SLOT_RETIRED) continue;
    ito__worker_join(ito__workers[i]);
    ITO_ASSERT(!ito__workers[i]->started); /* invariant 4 */
    STORE_REL(&slot_state[i], SLOT_FREE);
  }
}

static void warn_thread(void) {
  if (mon.warned_thread) return;
  mon.warned_thread = true;
  say("ito: the monitor cannot start an OS thread for an extra worker (out of threads or "
      "memory); a worker blocked in the kernel keeps ready threads waiting\n");
}

/* Starts one extra worker in a free slot below limit; whether it did. */
static bool start_extra(int limit) {
  int id = -1;
  for (int i = ito__nworkers; i < ito__nworkers + limit; i++) {
    if (LOAD_ACQ(&slot_state[i]) == SLOT_FREE) {
      id = i;
      break;
    }
  }
  if (id < 0) return false; /* every slot's thread is still on its way out */
  worker *w = ito__worker_slot(id);
  if (!w) {
    warn_thread();
    return false;
  }
  ITO_ASSERT(!w->started); /* invariant 4: a free slot's thread was joined */
  w->extra = 1;
  samples[id] = (struct sample){0};
  STORE_REL(&slot_state[id], SLOT_RUNNING);
  __atomic_fetch_add(&mon.alive, 1, __ATOMIC_SEQ_CST);
  ito__idle_resize(1);
  __atomic_fetch_add(&mon.started_total, 1, __ATOMIC_RELAXED);
  if (ito__worker_launch(w) != 0) {
    __atomic_fetch_sub(&mon.alive, 1, __ATOMIC_SEQ_CST);
    ito__idle_resize(-1);
    STORE_REL(&slot_state[id], SLOT_FREE);
    warn_thread();
    return false;
  }
  return true;
}

int ito__monitor_extras(unsigned long *started) {
  if (started) *started = __atomic_load_n(&mon.started_total, __ATOMIC_RELAXED);
  int n = 0;
  int slots = LOAD_ACQ(&ito__nslots);
  for (int i = ito__nworkers; i < slots; i++) n += LOAD_ACQ(&slot_state[i]) != SLOT_FREE;
  return n;
}

bool ito__monitor_may_retire(worker *w) {
  (void)w;
  int a = __atomic_load_n(&mon.alive, __ATOMIC_SEQ_CST);
  while (a > __atomic_load_n(&mon.wanted, __ATOMIC_RELAXED)) {
    if (__atomic_compare_exchange_n(&mon.alive, &a, a - 1, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      return true;
  }
  return false;
}

void ito__monitor_stay(worker *w) {
  (void)w;
  __atomic_fetch_add(&mon.alive, 1, __ATOMIC_SEQ_CST);
}

void ito__monitor_retired(worker *w) {
  ITO_ASSERT(w->extra && w == cur_worker());
  /* invariant 3: it owns no work (only its own thread pushes on its deque) */
  ITO_ASSERT(!w->cur && dq_tail(&w->dq) <= LOAD_RLX(&w->dq.head));
  ito__idle_resize(-1);
  STORE_REL(&slot_state[w->id], SLOT_RETIRED);
  wake_monitor(); /* (a tick: the monitor joins it soon) */
}

/* ---- waits announced by a drop-in library (invariant 5) ----------------------------------- */

void ito__monitor_kwait_poke(void) {
  if (!mon.started || __atomic_exchange_n(&mon.kpoked, 1, __ATOMIC_ACQ_REL)) return;
  wake_monitor();
}

void ito__monitor_kwait_begin(void (*wake)(void *), void *obj, int kind) {
  worker *w = cur_worker();
  if (!w || !w->cur) return;
  spin_lock(&w->kwait_lock, LR_LEAF);
  w->kwait_wake = wake;
  w->kwait_obj = obj;
  spin_unlock(&w->kwait_lock);
  STORE_REL(&w->kwait, kind);
  ito__monitor_kwait_poke();
}

void ito__monitor_kwait_end(void) {
  worker *w = cur_worker();
  if (!w || !LOAD_RLX(&w->kwait)) return;
  STORE_REL(&w->kwait, KWAIT_NONE);
  spin_lock(&w->kwait_lock, LR_LEAF); /* the monitor's wake is over */
  w->kwait_wake = NULL;
  w->kwait_obj = NULL;
  spin_unlock(&w->kwait_lock);
}

/* w's thread waits in the kernel: a cancellation due ends the wait (a
 * deferred one through its wake function). */
static void kwait_cancel(worker *w, fiber *cur) {
  ithread *t = cur->thread;
  if (!t ||
      (LOAD_ACQ(&t->cancel) & (CANCEL_PENDING | CANCEL_DISABLED | CANCEL_ACTING)) != CANCEL_PENDING)
    return;
  spin_lock(&w->kwait_lock, LR_LEAF);
  if (LOAD_ACQ(&w->kwait) && w->kwait_wake && LOAD_RLX(&w->cur) == cur) w->kwait_wake(w->kwait_obj);
  spin_unlock(&w->kwait_lock);
  /* a lock or barrier wait, asynchronous type: the thread acts inside it
   * (preempt.h, invariant 2), sent again at every tick (a send that found
   * it in ito's code before the wait was refused) */
  if (LOAD_ACQ(&w->kwait) == KWAIT_ASYNC) ito__preempt_cancel(t);
}

/* ---- one tick ------------------------------------------------------------------------------- */

/* Work that a free worker would run now: queued fibers, deque entries,
 * mail, a timer due, or threads waiting for a poll source (somebody must
 * poll it). */
static bool work_waits(int n) {
  if (LOAD_RLX(&ito__preempted.len)) return true;
  for (int i = 0; i < n; i++) {
    worker *w = ito__workers[i];
    if (LOAD_RLX(&w->rq.len) || dq_nonempty(&w->dq) || LOAD_RLX(&w->mail)) return true;
  }
  if (idle_waiters_any()) return true;
  return timers_armed() && ito__timers_next_ns() == 0;
}

/* Threads (not fork-join continuations) wait to run: in a ready queue or
 * mail, or a thread's creator or a suspended thread in a deque. */
static bool threads_wait(int n) {
  if (LOAD_RLX(&ito__preempted.len)) return true;
  for (int i = 0; i < n; i++) {
    worker *w = ito__workers[i];
    if (LOAD_RLX(&w->rq.len) || LOAD_RLX(&w->mail)) return true;
    if (dq_oldest(&w->dq) & (ENT_FIBER | ENT_CREATE)) return true;
  }
  return false;
}

/* Threads a worker's scheduler would find by looking: a sleeper whose time
 * has come (a timer due), or threads parked on I/O, which somebody must
 * poll. */
static bool threads_to_find(void) {
  return idle_waiters_any() || (timers_armed() && ito__timers_next_ns() == 0);
}

/* A thread that a preemption would keep on its worker (tls.h: with
 * worker TLS its code may hold an address in that worker's block, so it
 * resumes only there, sched.c). While the worker has nothing in its mail
 * (a homed thread waits for this worker alone) it is left running and an
 * extra worker runs the waiting threads beside it (invariant 6): a thread
 * that runs next on this worker and blocks its OS thread in the kernel for
 * the preempted one (glibc's mutex, held across a slice) would otherwise
 * wait for ever. */
static bool pins_on_preempt(worker *w, fiber *cur) {
  return !ito__tls_mode && !cur->home && !LOAD_RLX(&w->mail);
}

/* Rule 2 of docs/monitor.md: a program thread that has computed for a
 * time slice without a switch while threads wait to run (waiting: a
 * thread waits in a queue or deque any worker takes from, a timer is due
 * or threads wait for I/O, and no worker is idle; or one waits in this
 * worker's mail) is preempted. The signal is
 * sent at every tick until the thread switches: its handler declines
 * while the thread runs code that is not the program's. Returns the
 * workers left running a thread that preemption would pin there, while
 * extras below the cap can run the waiting threads instead (invariant 6);
 * past the cap such threads are preempted. */
static int preempt(int n, long long now, bool waiting, int extras) {
  bool fresh = false;
  int hogs = 0;
  for (int i = 0; i < n; i++) {
    if (!slot_active(i)) continue;
    worker *w = ito__workers[i];
    struct sample *s = &samples[i];
    fiber *cur = s->cur;
    if (!cur || s->blocked || !s->computing || LOAD_RLX(&w->cur) != cur) continue;
    int tid = LOAD_RLX(&w->os_tid);
    if (!ito__preempt_cancel_due(cur->thread)) {
      if (!mon.slice || now - s->same_since < mon.slice) continue;
      if (!waiting && !LOAD_RLX(&w->mail)) continue;
      if (!ito__preemptible(cur->thread)) continue;
      if (pins_on_preempt(w, cur) && extras + hogs < mon.cap) {
        hogs++;
        continue;
      }
    }
    if (!in_user_code(tid)) continue;
    if (!fresh) { /* (once per tick that sends) */
      ito__preempt_refresh();
      fresh = true;
    }
    ito__preempt_send(w, cur); /* a time slice is over, or an asynchronous cancellation */
  }
  return hogs;
}

/* Returns whether any worker ran a fiber (the tick stays short). */
static bool observe(void) {
  reap();
  long long now = clock_ns(CLOCK_MONOTONIC);
  int n = LOAD_ACQ(&ito__nslots);
  int blocked = 0, busy = 0, active = 0, stuck_all = 1, kblocked = 0;
  worker *stuck = NULL;
  fiber *stuck_cur = NULL;
  long long oldest = now;
  RACY_BEGIN();
  for (int i = 0; i < n; i++) {
    if (!slot_active(i)) continue;
    worker *w = ito__workers[i];
    struct sample *s = &samples[i];
    fiber *cur = LOAD_RLX(&w->cur);
    int tid = LOAD_RLX(&w->os_tid);
    if (cur && LOAD_ACQ(&w->kwait)) { /* invariant 5: announced, blocked at once */
      if (cur != s->cur) s->same_since = now;
      s->cur = cur;
      s->switches = LOAD_RLX(&w->switches);
      s->still = STILL_TICKS;
      s->computing = false;
      s->blocked = true;
      active++, busy++, blocked++, kblocked++;
      if (!stuck) {
        stuck = w;
        stuck_cur = cur;
      }
      kwait_cancel(w, cur);
      continue;
    }
    long long cpu = tid > 0 ? ito__os_cpu_ns(tid) : -1;
    /* (it came on between the last tick and this one: halfway, as a guess;
     * the same thread that left and came back meanwhile, too) */
    unsigned long sw = LOAD_RLX(&w->switches);
    bool same = cur == s->cur && sw == s->switches;
    s->switches = sw;
    if (!same) s->same_since = mon.last_tick ? (mon.last_tick + now) / 2 : now;
    if (cur && same && cpu >= 0 && cpu - s->cpu < CPU_STILL_NS)
      s->still++;
    else
      s->still = 0;
    s->computing = cpu >= 0 && s->cpu > 0 && cpu - s->cpu >= CPU_STILL_NS;
    s->cur = cur;
    s->cpu = cpu;
    s->blocked = s->still >= STILL_TICKS && in_kernel(tid);
    ITO_ASSERT(!s->blocked || cur); /* invariant 1: an idle worker never counts */
    active++;
    if (cur) busy++;
    if (s->blocked) {
      blocked++;
      if (!stuck) {
        stuck = w;
        stuck_cur = cur;
      }
    } else if (!cur || now - s->same_since < WARN_NS) {
      stuck_all = 0;
    } else if (s->same_since < oldest) {
      oldest = s->same_since;
      if (!stuck) stuck_cur = cur;
    }
  }
  bool idle = idle_anyone();
  bool threads = threads_wait(n);
  int alive = __atomic_load_n(&mon.alive, __ATOMIC_SEQ_CST);
  int hogs = mon.preempt ? preempt(n, now, (threads || threads_to_find()) && !idle, alive) : 0;
  RACY_END();
  /* invariant 6: a worker left running a thread that preemption would pin
   * wants an extra as a blocked one does */
  int in_calls = blocked; /* (in the kernel: the watchdog's message) */
  blocked += hogs;
  bool waits = blocked ? work_waits(n) : false;

  __atomic_store_n(&mon.wanted, blocked, __ATOMIC_RELAXED);
  /* invariant 5: announced waits get extras past the cap, up to the slots */
  int limit = kblocked > mon.cap ? (kblocked < mon.slots ? kblocked : mon.slots) : mon.cap;
  if (blocked > alive && !idle && waits) {
    if (alive < limit) {
      if (alive >= mon.cap && !mon.warned_grow) {
        mon.warned_grow = true;
        char msg[320];
        snprintf(msg, sizeof msg,
                 "ito: %d workers wait in the kernel in calls announced as blocking "
                 "(process-shared objects, I/O ito cannot park) and the cap of %d "
                 "extra workers (ITO_EXTRA_WORKERS) is reached; more start for such waits, up "
                 "to %d workers in all\n",
                 kblocked, mon.cap, ito__nworkers + mon.slots);
        say(msg);
      }
      /* announced waits are known blocked: one extra each, a batch a tick
       * (a thousand waiters need a thousand OS threads, as natively) */
      int more = kblocked > alive ? kblocked - alive : 1;
      if (more > blocked - alive) more = blocked - alive;
      if (more > limit - alive) more = limit - alive;
      if (more > EXTRA_BATCH) more = EXTRA_BATCH;
      for (int i = 0; i < more && start_extra(limit); i++) {
      }
      mon.stall_since = 0;
    } else if (!mon.stall_since) {
      mon.stall_since = now;
    } else if (now - mon.stall_since >= WARN_NS && !mon.warned_cap && in_calls) {
      mon.warned_cap = true;
      char who[96], where[64], msg[512];
      RACY_BEGIN();
      describe(stuck, stuck_cur, who, sizeof who);
      blocked_call(LOAD_RLX(&stuck->os_tid), where, sizeof where);
      RACY_END();
      int k =
          snprintf(msg, sizeof msg,
                   "ito: %d workers have been blocked for %lld ms in calls ito cannot park "
                   "(%s is blocked %s) while work waits, and ",
                   in_calls, (now - mon.stall_since) / 1000000 + STILL_TICKS * TICK_NS / 1000000,
                   who, where);
      if (k < 0 || k >= (int)sizeof msg) k = (int)sizeof msg - 1; /* (cut: the tail is dropped) */
      if (limit >= mon.slots && kblocked > mon.cap) /* past the cap already: no slot is left */
        snprintf(msg + k, sizeof msg - (size_t)k,
                 "ito's limit of %d workers in all is reached: the work waits until one of "
                 "those calls returns (ITO_WORKER_LIMIT)\n",
                 ito__nworkers + mon.slots);
      else
        snprintf(msg + k, sizeof msg - (size_t)k,
                 "the cap of %d extra workers (ITO_EXTRA_WORKERS) is reached; raise "
                 "ITO_EXTRA_WORKERS or ITO_NUM_WORKERS\n",
                 mon.cap);
      say(msg);
    }
  } else {
    mon.stall_since = 0;
    if (alive > blocked) { /* sleeping extras wake up to retire */
      for (int i = ito__nworkers; i < n; i++)
        if (LOAD_ACQ(&slot_state[i]) == SLOT_RUNNING) ito__idle_wake(&ito__workers[i]->idle);
    }
  }
  /* threads that never reach a scheduling point while others wait to run */
  if (!threads)
    mon.starve_since = 0;
  else if (!mon.starve_since)
    mon.starve_since = now;
  if (threads && stuck_all && active && !blocked) {
    if (now - mon.starve_since >= WARN_NS && !mon.warned_starve) {
      mon.warned_starve = true;
      char who[96], msg[768];
      RACY_BEGIN();
      describe(stuck ? stuck : ito__workers[0], stuck_cur, who, sizeof who);
      RACY_END();
      snprintf(msg, sizeof msg,
               "ito: threads have waited %lld ms to run while every worker ran one thread all "
               "along (%s for %lld ms, without a call that can switch); if those threads wait "
               "for the others by spinning, the program cannot go on: such a loop must yield "
               "(sched_yield, ito_yield) or block, since this thread is not preempted (the "
               "native API's threads never are; pthreads and OpenMP team members are unless "
               "ITO_PREEMPT_MS=0)\n",
               (now - mon.starve_since) / 1000000, who, (now - oldest) / 1000000);
      say(msg);
    }
  }
  mon.last_tick = now;
  return busy > 0 || alive > 0;
}

static void *monitor_main(void *arg) {
  (void)arg;
  ito__sig_monitor_start(by_fd);
  long long tick = TICK_NS;
  int late = 0; /* threads with a signal to see that were not running (signal.c) */
  while (!LOAD_ACQ(&mon.stop_word)) {
    struct timespec rel = ns_to_ts(late ? LATE_NS : tick);
    if (!LOAD_ACQ(&mon.poked) && !LOAD_ACQ(&mon.kpoked)) sleep_monitor(&rel);
    if (LOAD_ACQ(&mon.stop_word)) break;
    if (ito__sig_monitor_take()) __atomic_store_n(&mon.poked, 1, __ATOMIC_SEQ_CST);
    if (__atomic_exchange_n(&mon.kpoked, 0, __ATOMIC_ACQ_REL)) { /* invariant 5: now */
      observe();
      continue;
    }
    if (LOAD_ACQ(&mon.poked)) { /* signals for lightweight threads (signal.c) */
      /* cleared first: a poke counted after the load below leaves poked
       * set for another pass */
      __atomic_store_n(&mon.poked, 0, __ATOMIC_SEQ_CST);
      unsigned upto = __atomic_load_n(&mon.pokes, __ATOMIC_SEQ_CST);
      ito__sig_route_inbox();
      STORE_REL(&mon.routed, upto);
      late = ito__sig_late();
      continue;
    }
    if (late && (late = ito__sig_late()) != 0) continue;
    tick = observe() ? TICK_NS : (tick * 2 < TICK_MAX_NS ? tick * 2 : TICK_MAX_NS);
  }
  reap();
  return NULL;
}

/* A poke; returns its number in the count of pokes. */
static unsigned poke(void) {
  unsigned n = __atomic_add_fetch(&mon.pokes, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&mon.poked, 1, __ATOMIC_SEQ_CST);
  wake_monitor();
  return n;
}

void ito__monitor_poke(void) { poke(); }

void ito__monitor_sync(void) {
  if (!mon.started) return;
  /* a pass that began before this poke may have taken the inbox before
   * the signal waited for was in it: the pass waited for is one that read
   * the count of pokes after this one */
  unsigned mine = poke();
  /* at most about a second: a monitor preempted while the kernel delivers
   * it a signal (a loaded machine) takes a time slice or more to route it,
   * and a bound of 20 ms let sigpending miss a kill made just before it
   * (dropin_signals failed so, once in seven CI runs) */
  for (int i = 0; i < 100000 && (int)(LOAD_ACQ(&mon.routed) - mine) < 0; i++) {
    struct timespec t = {0, 10000};
    ito__os.nanosleep(&t, NULL);
  }
}

void ito__monitor_start(void) {
  long slots = mon_cfg.worker_limit - ito__nworkers;
  if (slots < 0) slots = 0;
  long cap = mon_cfg.extra_workers < slots ? mon_cfg.extra_workers : slots;
  memset(&mon, 0, sizeof mon);
  int used = LOAD_ACQ(&ito__slots_counted);
  memset(slot_state, 0, sizeof slot_state[0] * (size_t)used);
  memset(samples, 0, sizeof samples[0] * (size_t)used);
  mon.cap = (int)cap;
  mon.slots = (int)slots;
  mon.preempt = ito__preempt_setup(&mon.slice);
  sleep_setup();
  mon.started = ito__os_thread(&mon.os, 64 << 10, monitor_main, NULL, ito__sig_on) == 0;
  if (!mon.started)
    say("ito: cannot start the monitor thread; a worker blocked in the kernel will keep ready "
        "threads waiting\n");
}
ITO_OBSERVE(monitor_at_launched, OBSERVE_LAUNCHED, OBS_MONITOR, ito__monitor_start);

void ito__monitor_stop(void) {
  if (!mon.started) return;
  STORE_REL(&mon.stop_word, 1);
  wake_monitor();
  ito__os.pthread_join(mon.os, NULL);
  mon.started = 0;
}

/* In the child the parent's monitor thread is not there; a new one starts
 * at the child's first thread creation (a thread made inside fork's own
 * handlers is more than POSIX allows there, and qemu-user aborts on it). */
static int restart_pending;

static void monitor_fork_child(worker *w, ithread *self) {
  (void)w, (void)self;
  mon.started = 0;
  kick_stale = 1;
  STORE_REL(&restart_pending, 1);
}
ITO_FORK_PART(monitor_fork, .child_order = FORK_MONITOR, .child = monitor_fork_child);

void ito__monitor_restart(void) {
  if (__atomic_exchange_n(&restart_pending, 0, __ATOMIC_ACQ_REL)) ito__monitor_start();
}
