/* Process-wide user and group ids (docs/tls.md, "set*id"). Linux keeps
 * credentials per OS thread; glibc's set*id calls change them on every
 * thread by signalling each thread it knows (its reserved SIGSETXID) and
 * having each act on its own descriptor. With thread-local storage per
 * lightweight thread the descriptor a handler finds is the running
 * thread's block, not the one glibc signalled, and the caller waits for
 * ever. ito does the broadcast itself: the call on the calling OS thread,
 * then a queued SIGSETXID with a marker to every other OS thread of the
 * process (from /proc/self/task), whose handler makes the same system call
 * with no use of TLS; until no new OS thread appears. */
#define _GNU_SOURCE
#include "setxid.h"

#include "elfsym.h"
#include "observe.h"
#include "os.h"
#include "tcb.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIGSETXID 33 /* glibc's reserved signal: a program cannot block or catch it */

struct kernel_sigaction {
  void (*handler)(int, siginfo_t *, void *);
  unsigned long flags;
  void (*restorer)(void);
  uint64_t mask;
};

static struct {
  int lock;         /* one broadcast at a time */
  long nr, a, b, c; /* the system call every thread makes */
  int pending[8];   /* handlers yet to finish, per broadcast (futex; the signal names its
                       counter, so that a late answer counts for its own broadcast) */
  unsigned gen;     /* broadcasts so far */
  int error;        /* the first error a handler met */
  void (*glibc)(int, siginfo_t *, void *); /* glibc's handler, for its own broadcasts */
} sx;

static void glibc_broadcast(int sig, siginfo_t *si, void *uc);

static void handler(int sig, siginfo_t *si, void *uc) {
  int *cnt = si->si_value.sival_ptr;
  if (si->si_code == SI_QUEUE && si->si_pid == getpid() && cnt >= sx.pending &&
      cnt < sx.pending + 8) {
    int saved = errno;
    long r = ito__os.syscall(LOAD_ACQ(&sx.nr), sx.a, sx.b, sx.c);
    if (r != 0)
      __atomic_compare_exchange_n(&sx.error, &(int){0}, errno, 0, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED);
    if (__atomic_sub_fetch(cnt, 1, __ATOMIC_ACQ_REL) == 0) ito__futex_wake(cnt, 1);
    errno = saved;
    return;
  }
  if (sx.glibc) glibc_broadcast(sig, si, uc); /* glibc's own (its internal calls) */
}

/* Ours in the kernel, glibc's chained. glibc installs its own at the
 * process's first pthread_create of its own, over ours: each broadcast of
 * ours, and each start of the runtime once its threads exist, puts ours
 * back. Under sx.lock. */
static int install(void) {
  struct kernel_sigaction old, sa;
  if (ito__os.syscall(SYS_rt_sigaction, SIGSETXID, NULL, &old, (size_t)8) != 0) return -1;
  if (old.handler == handler) return 0;
  if ((uintptr_t)old.handler > 1) sx.glibc = old.handler;
  memset(&sa, 0, sizeof sa);
  sa = old;
  sa.handler = handler;
  sa.flags |= SA_SIGINFO | SA_RESTART;
  sa.mask = ~0ull; /* nothing nests while the thread pointer may be another's */
  if (ito__os.syscall(SYS_rt_sigaction, SIGSETXID, &sa, NULL, (size_t)8) != 0) return -1;
  return 0;
}

struct linux_dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

#define MAX_SEEN 4096
/* Signals every OS thread of the process not in seen[] (adding them);
 * returns how many it signalled. */
static int signal_others(int self, int *seen, int *nseen, int *cnt) {
  int fd = (int)ito__os.syscall(SYS_openat, AT_FDCWD, "/proc/self/task",
                                O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  int sent = 0;
  long n;
  while ((n = ito__os.syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      int tid = 0;
      for (const char *p = d->name; *p; p++) tid = tid * 10 + (*p - '0');
      bool known = tid == self;
      for (int i = 0; i < *nseen && !known; i++) known = seen[i] == tid;
      if (known) continue;
      if (*nseen < MAX_SEEN) seen[(*nseen)++] = tid;
      __atomic_add_fetch(cnt, 1, __ATOMIC_ACQ_REL);
      if (ito__queue_signal(tid, SIGSETXID, cnt) != 0)
        __atomic_sub_fetch(cnt, 1, __ATOMIC_ACQ_REL); /* it has ended meanwhile */
      else
        sent++;
    }
  }
  ito__os.syscall(SYS_close, fd);
  return sent;
}

long ito__setxid(long nr, long a, long b, long c) {
  /* Lightweight threads on their workers' blocks: every OS thread's
   * descriptor is glibc's own, and glibc's broadcast is right (and sees
   * only the program's threads, where /proc/self/task also lists an
   * emulator's: qemu-user's never run the handler). */
  if (!LOAD_ACQ(&ito__tls_mode)) return 1;
  spin_lock(&sx.lock, LR_LEAF);
  if (install() != 0) {
    spin_unlock(&sx.lock);
    return -ENOSYS;
  }
  long r = ito__os.syscall(nr, a, b, c);
  if (r != 0) {
    r = -errno;
    spin_unlock(&sx.lock);
    return r;
  }
  sx.a = a, sx.b = b, sx.c = c;
  STORE_REL(&sx.nr, nr);
  sx.error = 0;
  static int seen[MAX_SEEN];
  int nseen = 0, self = (int)ito__os.syscall(SYS_gettid);
  int *cnt = &sx.pending[sx.gen++ % 8];
  STORE_REL(cnt, 0);
  /* again until no new thread shows up: one created meanwhile by a thread
   * not yet changed would have the old credentials. A thread that has not
   * run the handler after 2 s never will (qemu-user lists its own threads
   * in /proc/self/task, and they never run a handler of the program's):
   * said once, and the call returns */
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int p = 0;
  while (signal_others(self, seen, &nseen, cnt) > 0) {
    while ((p = LOAD_ACQ(cnt)) > 0) {
      struct timespec now, rel = {0, 50000000};
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec - t0.tv_sec >= 2) break;
      ito__futex_wait(cnt, p, &rel);
    }
    if (p > 0) break;
  }
  static int said;
  if (p > 0 && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
    char msg[200];
    int n = snprintf(msg, sizeof msg,
                     "ito: set*id: %d OS thread(s) of the process did not take the call's signal "
                     "in 2 s (an emulator's own threads never do); their credentials are "
                     "unchanged\n",
                     p);
    ito__write_stderr(msg, (size_t)n);
  }
  int e = sx.error;
  spin_unlock(&sx.lock);
  return e ? -e : 0;
}

/* ---- glibc's own broadcast ------------------------------------------------------------------
 * The calls libc makes inside itself (initgroups' setgroups, ruserok's
 * seteuid ...) never reach the interposed symbols: glibc's __nptl_setxid,
 * holding the lock of its lists of threads, sets the SETXID bit in the
 * cancelhandling of every descriptor on them but the caller's
 * (THREAD_SELF), signals each marked descriptor's tid and does it again
 * until none is left marked; the handler clears the bit of THREAD_SELF.
 * With blocks of ito's, two things break it (docs/tls.md, "set*id"):
 *  - a worker whose OS thread runs a thread's block takes the signal on
 *    that block, so the descriptor glibc signalled stays marked and is
 *    signalled for ever: the handler below runs glibc's on a marked
 *    descriptor with this OS thread's tid, and puts the thread pointer
 *    back;
 *  - main's descriptor is the root's block, whose tid follows the root
 *    from worker to worker: it names no OS thread for good, and when the
 *    root calls, glibc skips it and main's OS thread is signalled for no
 *    descriptor at all. Worker 0's own block (its scheduler's) is put on
 *    glibc's list beside it, with main's OS thread's tid
 *    (ito__setxid_represent): every OS thread has a descriptor of its own
 *    there. Main's stays (glibc initialises the static TLS of a module
 *    loaded later in every descriptor on its list, before the module's
 *    constructors run); the handler takes it after the OS thread's own,
 *    and where main's tid has moved on meanwhile, the signal is answered
 *    on the block in force and main's is signalled again, at its new tid,
 *    in glibc's next round. */

#define SETXID_BITMASK 0x40 /* glibc 2.36 (nptl/descr.h): cancelhandling's "change your ids" */

struct glist {
  struct glist *next, *prev;
};

static struct {
  struct glist *used, *user; /* GL(dl_stack_used), GL(dl_stack_user): glibc's threads */
  int *lock;                 /* GL(dl_stack_cache_lock), which guards them */
  size_t list, tid, cancel;  /* offsets in a descriptor */
  int state;                 /* 0 not looked up, 1 found, -1 not as verified */
  char *own, *main;          /* worker 0's block, on the list beside main's descriptor */
} gl;

#define FIELD(d, off, type) (*(type *)((char *)(d) + (off)))
#define LINK(d) ((struct glist *)((d) + gl.list))

static bool g_linked(struct glist *e) { return e->next && e->next != e && e->next->prev == e; }
static void g_del(struct glist *e) {
  e->next->prev = e->prev;
  e->prev->next = e->next;
  e->next = e->prev = e;
}
static void g_add(struct glist *e, struct glist *head) { /* (glibc's list_add) */
  e->next = head->next;
  e->prev = head;
  head->next->prev = e;
  __atomic_store_n(&head->next, e, __ATOMIC_RELEASE);
}

/* glibc's low-level lock: 0 free, 1 taken, 2 taken with waiters */
static void gl_lock(void) {
  int z = 0;
  if (__atomic_compare_exchange_n(gl.lock, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
  while (__atomic_exchange_n(gl.lock, 2, __ATOMIC_ACQUIRE) != 0) ito__futex_wait(gl.lock, 2, NULL);
}
static void gl_unlock(void) {
  if (__atomic_exchange_n(gl.lock, 0, __ATOMIC_RELEASE) == 2) ito__futex_wake(gl.lock, 1);
}

/* The lists and the fields, as glibc describes them to libthread_db
 * ({bits, count, offset}); the lock lies 48 bytes after dl_stack_user
 * (dl_stack_cache, _actsize, _in_flight_stack between: glibc 2.36, the
 * version ITO_TLS=thread checks for). */
static bool gl_find(void) {
  if (gl.state) return gl.state > 0;
  gl.state = -1;
  char *rtld = ito__elf_sym(NULL, "_rtld_global", "GLIBC_PRIVATE");
  const uint32_t *used =
      ito__elf_sym(NULL, "_thread_db_rtld_global__dl_stack_used", "GLIBC_PRIVATE");
  const uint32_t *user =
      ito__elf_sym(NULL, "_thread_db_rtld_global__dl_stack_user", "GLIBC_PRIVATE");
  const uint32_t *list = ito__elf_sym(NULL, "_thread_db_pthread_list", "GLIBC_PRIVATE");
  const uint32_t *tid = ito__elf_sym(NULL, "_thread_db_pthread_tid", "GLIBC_PRIVATE");
  const uint32_t *cancel = ito__elf_sym(NULL, "_thread_db_pthread_cancelhandling", "GLIBC_PRIVATE");
  if (!rtld || !used || !user || !list || !tid || !cancel) return false;
  if (used[0] != 128 || user[0] != 128 || list[0] != 128 || tid[0] != 32 || cancel[0] != 32 ||
      user[2] != used[2] + 16)
    return false;
  gl.used = (struct glist *)(rtld + used[2]);
  gl.user = (struct glist *)(rtld + user[2]);
  gl.lock = (int *)(rtld + user[2] + 48);
  gl.list = list[2], gl.tid = tid[2], gl.cancel = cancel[2];
  struct glist *cache = gl.user + 1;
  if (!g_linked(gl.user) || gl.used->next->prev != gl.used || cache->next->prev != cache ||
      (unsigned)LOAD_RLX(gl.lock) > 2)
    return false;
  gl.state = 1;
  return true;
}

int ito__setxid_glibc_start(void) { return gl_find() ? 0 : -1; }

void ito__setxid_glibc_install(void) {
  if (!gl_find()) return;
  spin_lock(&sx.lock, LR_LEAF);
  install();
  spin_unlock(&sx.lock);
}

static void setxid_at_launched(void) {
  if (ito__tls_mode) ito__setxid_glibc_install();
}
ITO_OBSERVE(setxid_at_launch, OBSERVE_LAUNCHED, OBS_SETXID, setxid_at_launched);

static bool marked_for(const char *d, pid_t tid) {
  return FIELD(d, gl.tid, pid_t) == tid &&
         (__atomic_load_n(&FIELD(d, gl.cancel, int), __ATOMIC_ACQUIRE) & SETXID_BITMASK);
}

/* A descriptor on glibc's lists with this tid and the SETXID bit, the OS
 * thread's own before main's: the one glibc signalled this OS thread for.
 * (The caller of the broadcast holds the lists' lock until every signal
 * is answered.) */
static char *marked(pid_t tid) {
  struct glist *heads[2] = {gl.used, gl.user};
  for (int h = 0; h < 2; h++) {
    int n = 0;
    for (struct glist *e = heads[h]->next; e && e != heads[h] && n < (1 << 20); e = e->next, n++) {
      char *d = (char *)e - gl.list;
      if (d != gl.main && marked_for(d, tid)) return d;
    }
  }
  return gl.main && marked_for(gl.main, tid) ? gl.main : NULL;
}

static void glibc_broadcast(int sig, siginfo_t *si, void *uc) {
  void *was = NULL, *tp = NULL;
  if (gl.state > 0 && si->si_code == SI_TKILL && si->si_pid == getpid()) {
    char *d = marked((pid_t)ito__os.syscall(SYS_gettid));
    if (d) {
      tp = tp_of(d);
      was = get_tp();
    }
  }
  if (tp && tp != was) {
    set_tp(tp); /* (no TLS is used until it is put back: signals are blocked) */
    sx.glibc(sig, si, uc);
    set_tp(was);
  } else {
    sx.glibc(sig, si, uc);
  }
}

void ito__setxid_represent(void *own_tp, void *main_tp, int child) {
  if (!gl_find()) return;
  ITO_ASSERT(own_tp && main_tp);
  if (!child) gl_lock(); /* (a child of fork has one thread, and glibc reset the lock) */
  if (own_tp == main_tp) {
    gl.own = gl.main = NULL; /* a child whose worker 0 runs on its own descriptor */
  } else {
    gl.own = desc_of(own_tp);
    gl.main = desc_of(main_tp);
    FIELD(gl.own, gl.tid, pid_t) = (pid_t)ito__os.syscall(SYS_gettid);
    /* (in a child, own's links are into the parent's list) */
    if (child || !g_linked(LINK(gl.own))) {
      LINK(gl.own)->next = LINK(gl.own)->prev = LINK(gl.own);
      g_add(LINK(gl.own), gl.user);
    }
  }
  if (!child) gl_unlock();
}

void ito__setxid_unrepresent(void) {
  if (!gl.own) return;
  gl_lock();
  if (g_linked(LINK(gl.own))) g_del(LINK(gl.own));
  gl.own = gl.main = NULL;
  gl_unlock();
}
