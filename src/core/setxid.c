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

#include "os.h"
#include "tls.h"

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
  int lock;          /* one broadcast at a time */
  long nr, a, b, c;  /* the system call every thread makes */
  int pending[8];    /* handlers yet to finish, per broadcast (futex; the signal names its
                        counter, so that a late answer counts for its own broadcast) */
  unsigned gen;      /* broadcasts so far */
  int error;         /* the first error a handler met */
  void (*glibc)(int, siginfo_t *, void *); /* glibc's handler, for its own broadcasts */
  int installed;
} sx;

static void handler(int sig, siginfo_t *si, void *uc) {
  int *cnt = si->si_value.sival_ptr;
  if (si->si_code == SI_QUEUE && si->si_pid == getpid() && cnt >= sx.pending &&
      cnt < sx.pending + 8) {
    int saved = errno;
    long r = ito__os.syscall(LOAD_ACQ(&sx.nr), sx.a, sx.b, sx.c);
    if (r != 0) __atomic_compare_exchange_n(&sx.error, &(int){0}, errno, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED);
    if (__atomic_sub_fetch(cnt, 1, __ATOMIC_ACQ_REL) == 0) ito__futex_wake(cnt, 1);
    errno = saved;
    return;
  }
  if (sx.glibc) sx.glibc(sig, si, uc); /* a broadcast of glibc's own (its internal calls) */
}

static int install(void) {
  if (sx.installed) return 0;
  struct kernel_sigaction old, sa;
  if (ito__os.syscall(SYS_rt_sigaction, SIGSETXID, NULL, &old, (size_t)8) != 0) return -1;
  if ((uintptr_t)old.handler > 1) sx.glibc = old.handler;
  memset(&sa, 0, sizeof sa);
  sa = old;
  sa.handler = handler;
  sa.flags |= SA_SIGINFO | SA_RESTART;
  sa.mask = 0;
  if (ito__os.syscall(SYS_rt_sigaction, SIGSETXID, &sa, NULL, (size_t)8) != 0) return -1;
  sx.installed = 1;
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
  spin_lock(&sx.lock);
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
