/* Threads: create, join, detach, exit, identity, attributes, and the calls
 * that are refused on lightweight threads (docs/dropin.md sections 4, 6). */
#include "shim.h"

#include <limits.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <string.h>

/* glibc keeps the stack size of an attribute as given, and 0 when it was
 * never set (struct pthread_attr, nptl/internaltypes.h, the same from 2.34
 * to 2.36); pthread_attr_getstacksize answers the default for 0, so only
 * the field tells "never set" from "set to 8 MiB". The layout is checked
 * once; where it does not hold, the default size counts as never set. */
struct glibc_attr {
  struct sched_param schedparam;
  int schedpolicy;
  int flags;
  size_t guardsize;
  void *stackaddr;
  size_t stacksize;
};
_Static_assert(sizeof(struct glibc_attr) <= sizeof(pthread_attr_t), "glibc attribute layout");

static int raw_layout(void) {
  static int v; /* 0 unknown, 1 checked, 2 does not hold */
  int r = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (r) return r == 1;
  pthread_attr_t a;
  const struct glibc_attr *g = (const struct glibc_attr *)(const void *)&a;
  size_t got = 0;
  int ok = pthread_attr_init(&a) == 0 && g->stacksize == 0;
  ok = ok && pthread_attr_setstacksize(&a, 3u << 20) == 0 && g->stacksize == 3u << 20 &&
       pthread_attr_getstacksize(&a, &got) == 0 && got == 3u << 20;
  pthread_attr_destroy(&a);
  __atomic_store_n(&v, ok ? 1 : 2, __ATOMIC_RELAXED);
  return ok;
}

static size_t default_stacksize(void) {
  static size_t v;
  if (!v) {
    pthread_attr_t a;
    size_t s = 8u << 20;
    if (pthread_getattr_default_np(&a) == 0) {
      pthread_attr_getstacksize(&a, &s);
      pthread_attr_destroy(&a);
    }
    v = s;
  }
  return v;
}

/* The stack size an attribute asks for, or 0: the runtime's default
 * (ITO_STACK_SIZE). */
static size_t asked_stacksize(const pthread_attr_t *attr, size_t reported) {
  if (raw_layout()) return ((const struct glibc_attr *)(const void *)attr)->stacksize;
  return reported != default_stacksize() ? reported : 0;
}

/* Would the kernel let this process give one of its threads policy and
 * prio (sched_setscheduler's rules)? 0, EINVAL or EPERM. Lightweight
 * threads keep what the program set and report it back; ito schedules
 * by none of it (docs/dropin.md section 6). */
static int has_sys_nice(void) {
  struct {
    uint32_t version;
    int pid;
  } hdr = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2];
  if (syscall(SYS_capget, &hdr, data) != 0) return 0;
  return (data[0].effective >> 23) & 1; /* CAP_SYS_NICE */
}

static int sched_check(int policy, int prio) {
  policy &= ~SCHED_RESET_ON_FORK;
  if (policy != SCHED_OTHER && policy != SCHED_FIFO && policy != SCHED_RR &&
      policy != SCHED_BATCH && policy != SCHED_IDLE)
    return EINVAL;
  if (prio < sched_get_priority_min(policy) || prio > sched_get_priority_max(policy)) return EINVAL;
  if (policy == SCHED_FIFO || policy == SCHED_RR) {
    struct rlimit r;
    if (!has_sys_nice() && (getrlimit(RLIMIT_RTPRIO, &r) != 0 || (rlim_t)prio > r.rlim_cur))
      return EPERM;
  }
  return 0;
}

/* Reads a pthread attribute into the runtime's; 0 or the error to return. */
static int read_attr(const pthread_attr_t *attr, struct ito_dropin_attr *a) {
  memset(a, 0, sizeof *a);
  if (!attr) return 0;
  int ds = PTHREAD_CREATE_JOINABLE;
  pthread_attr_getdetachstate(attr, &ds);
  a->detached = ds == PTHREAD_CREATE_DETACHED;
  void *lo = NULL;
  size_t size = 0;
  /* size 0: never set. Without a stack address glibc reports lo as NULL
   * minus the size (the top it keeps is NULL). */
  pthread_attr_getstack(attr, &lo, &size);
  if (lo && (uintptr_t)lo + size != 0) {
    a->stackaddr = lo;
    a->stacksize = size;
  } else {
    /* an explicit size, 8 MiB included, is honoured; none: ITO_STACK_SIZE */
    a->stacksize = asked_stacksize(attr, size);
  }
  int inherit = PTHREAD_INHERIT_SCHED, policy = SCHED_OTHER;
  struct sched_param sp = {0};
  pthread_attr_getinheritsched(attr, &inherit);
  pthread_attr_getschedpolicy(attr, &policy);
  pthread_attr_getschedparam(attr, &sp);
  if (inherit == PTHREAD_EXPLICIT_SCHED) { /* kept and read back, as glibc would set it */
    int rc = sched_check(policy, sp.sched_priority);
    if (rc) return rc;
    a->explicit_sched = 1;
    a->policy = policy;
    a->prio = sp.sched_priority;
  }
  sigset_t mask;
  if (pthread_attr_getsigmask_np(attr, &mask) == 0) { /* the child's mask */
    a->has_sigmask = 1;
    memcpy(&a->sigmask, &mask, sizeof a->sigmask);
  }
  return 0;
}

/* A child created with an affinity attribute takes its home first thing
 * (it runs at once, work first: a later call would come after). */
struct affine_start {
  void *(*fn)(void *);
  void *arg;
  cpu_set_t cpus;
};

/* The library's answer to a set whose CPUs have no worker: EINVAL, and
 * one line that says why. */
static int affinity_result(int rc) {
  if (rc != ENODEV) return rc;
  return REFUSE("pthread_setaffinity_np", "a CPU set none of whose CPUs has a worker",
                "ITO_NUM_WORKERS is below the number of CPUs; raise it", EINVAL);
}

static void *affine_entry(void *p) {
  struct affine_start s = *(struct affine_start *)p;
  free(p);
  ito__dropin_affinity_set(ito_self(), sizeof s.cpus, &s.cpus);
  return s.fn(s.arg);
}

/* Does the set hold a CPU the process may run on? */
static int cpus_usable(size_t size, const cpu_set_t *set) {
  cpu_set_t all;
  if (ito__dropin_process_cpus(&all) != 0) return 1;
  for (int c = 0; c < CPU_SETSIZE && (size_t)c / 8 < size; c++)
    if (CPU_ISSET(c, &all) && CPU_ISSET_S(c, size, set)) return 1;
  return 0;
}

ITO_PT_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                                 void *arg) {
  ITO_PT_ENTER(pthread_create, thread, attr, fn, arg);
  struct ito_dropin_attr a;
  int rc = read_attr(attr, &a);
  if (rc) return rc;
  cpu_set_t cpus;
  if (attr && pthread_attr_getaffinity_np(attr, sizeof cpus, &cpus) == 0 &&
      CPU_COUNT(&cpus) != CPU_SETSIZE) {
    if (!cpus_usable(sizeof cpus, &cpus)) return EINVAL;
    struct affine_start *s = malloc(sizeof *s);
    if (!s) return EAGAIN;
    *s = (struct affine_start){fn, arg, cpus};
    ito_thread_t h;
    rc = ito__dropin_create(&h, &a, affine_entry, s);
    if (rc == 0)
      *thread = (pthread_t)h;
    else
      free(s);
    return rc;
  }
  ito_thread_t h;
  rc = ito__dropin_create(&h, attr ? &a : NULL, fn, arg);
  if (rc == 0) *thread = (pthread_t)h;
  return rc;
}

ITO_PT_EXPORT int pthread_join(pthread_t t, void **ret) {
  ITO_PT_ENTER(pthread_join, t, ret);
  ito__pt_testcancel();
  if (!is_ito(t)) return ito__pt_real.pthread_join(t, ret);
  int rc = ito__dropin_check_join((ito_thread_t)t);
  if (rc) return rc;
  /* a request ended the wait: act on it; t stays joinable */
  while ((rc = ito__dropin_join((ito_thread_t)t, ret)) == ECANCELED) ito__pt_cancel_check();
  return rc;
}

ITO_PT_EXPORT int pthread_tryjoin_np(pthread_t t, void **ret) {
  ITO_PT_ENTER(pthread_tryjoin_np, t, ret);
  if (!is_ito(t)) return ito__pt_real.pthread_tryjoin_np(t, ret);
  int rc = ito__dropin_check_join((ito_thread_t)t);
  if (rc) return rc;
  return ito__dropin_tryjoin((ito_thread_t)t, ret);
}

/* Timed joins poll every millisecond (docs/dropin.md section 6). */
static int timed_join(pthread_t t, void **ret, clockid_t clock, const struct timespec *abs) {
  ito__pt_testcancel();
  int rc = ito__dropin_check_join((ito_thread_t)t);
  if (rc) return rc;
  if (abs && ito__pt_bad_time(abs)) return EINVAL;
  if (!ito__pt_clock_ok(clock)) return EINVAL;
  for (;;) {
    rc = ito__dropin_tryjoin((ito_thread_t)t, ret);
    if (rc != EBUSY) return rc;
    if (abs && ns_until(clock, abs) == 0) return ETIMEDOUT;
    struct timespec ms = {0, 1000000};
    ito_nanosleep(&ms);
    ito__pt_testcancel(); /* a cancellation point all along the wait */
  }
}

ITO_PT_EXPORT int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abs) {
  ITO_PT_ENTER(pthread_timedjoin_np, t, ret, abs);
  if (!is_ito(t)) return ito__pt_real.pthread_timedjoin_np(t, ret, abs);
  return timed_join(t, ret, CLOCK_REALTIME, abs);
}

ITO_PT_EXPORT int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clock,
                                       const struct timespec *abs) {
  ITO_PT_ENTER(pthread_clockjoin_np, t, ret, clock, abs);
  if (!is_ito(t)) return ito__pt_real.pthread_clockjoin_np(t, ret, clock, abs);
  return timed_join(t, ret, clock, abs);
}

ITO_PT_EXPORT int pthread_detach(pthread_t t) {
  ITO_PT_ENTER(pthread_detach, t);
  if (!is_ito(t)) return ito__pt_real.pthread_detach(t);
  int rc = ito__dropin_check_join((ito_thread_t)t);
  if (rc) return rc;
  return ito_detach((ito_thread_t)t);
}

ITO_PT_HIDDEN void ito__pt_exit_cleanup(void *value) __attribute__((noreturn));
ITO_PT_HIDDEN void ito__pt_exit_thread(void *value) __attribute__((noreturn));

ITO_PT_EXPORT void pthread_exit(void *value) {
  if (UNLIKELY(ito__pt_to_libc()) || !ito_self()) {
    ito__pt_real.pthread_exit(value);
    __builtin_unreachable();
  }
  ito__pt_exit_cleanup(value); /* runs the cleanup handlers, then ito__pt_exit_thread */
}

void ito__pt_exit_thread(void *value) {
  if (ito__dropin_is_root()) {
    /* main ends: the process lives on until the other threads are done,
     * then exits with status 0, as glibc does after the last thread */
    while (ito__dropin_live() > 0) {
      struct timespec ms = {0, 1000000};
      ito_nanosleep(&ms);
    }
    exit(0);
  }
  ito_exit(value);
}

ITO_PT_EXPORT pthread_t pthread_self(void) {
  ITO_PT_ENTER(pthread_self);
  return ito__pt_self();
}

ITO_PT_EXPORT int pthread_equal(pthread_t a, pthread_t b) { return a == b; }

/* The main thread keeps glibc's id; while the runtime runs it is the root
 * lightweight thread, and its signals are its own. */
static int is_root_id(pthread_t t) { return ito__pt_main_id && t == ito__pt_main_id && ito_self(); }

ITO_PT_EXPORT int pthread_kill(pthread_t t, int sig) {
  ITO_PT_ENTER(pthread_kill, t, sig);
  if (is_root_id(t)) return ito__dropin_sigsend(0, sig, NULL);
  if (!is_ito(t)) return ito__pt_real.pthread_kill(t, sig);
  int rc = ito__dropin_check((ito_thread_t)t);
  if (rc == ESRCH) return ESRCH;
  return ito__dropin_sigsend((ito_thread_t)t, sig, NULL);
}

ITO_PT_EXPORT int pthread_sigqueue(pthread_t t, int sig, const union sigval v) {
  ITO_PT_ENTER(pthread_sigqueue, t, sig, v);
  if (is_root_id(t)) return ito__dropin_sigsend(0, sig, &v);
  if (!is_ito(t)) return ito__pt_real.pthread_sigqueue(t, sig, v);
  if (ito__dropin_check((ito_thread_t)t) == ESRCH) return ESRCH;
  return ito__dropin_sigsend((ito_thread_t)t, sig, &v);
}

/* ---- cancellation (docs/dropin.md section 6) ------------------------------------------------
 * Deferred: a request is acted on at the thread's next cancellation point
 * (the blocking calls POSIX names, which the shim interposes, and
 * pthread_testcancel); a thread parked in one of them is woken for it.
 * Acting is pthread_exit(PTHREAD_CANCELED): cleanup handlers and C++
 * destructors run (cleanup.c). The asynchronous type is kept and reported;
 * the thread then acts at once when the request finds it enabled in a
 * call of its own, and otherwise at its next cancellation point. */
#define CP ITO_DROPIN_CANCEL_PENDING
#define CD ITO_DROPIN_CANCEL_DISABLED
#define CA ITO_DROPIN_CANCEL_ASYNC
#define CX ITO_DROPIN_CANCEL_ACTING

static void __attribute__((noreturn)) act_on_cancel(int *w) {
  __atomic_fetch_or(w, CX, __ATOMIC_ACQ_REL);
  pthread_exit(PTHREAD_CANCELED);
}

void ito__pt_cancel_async(void) {
  int *w = ito__dropin_cancel_word();
  if (w) act_on_cancel(w);
}

bool ito__pt_cancel_async_due(void) {
  int *w = ito__dropin_cancel_word();
  return w && (__atomic_load_n(w, __ATOMIC_ACQUIRE) & (CP | CA | CD | CX)) == (CP | CA);
}

void ito__pt_cancel_async_check(void) {
  int *w = ito__dropin_cancel_word();
  if (w && (__atomic_load_n(w, __ATOMIC_ACQUIRE) & (CP | CA | CD | CX)) == (CP | CA))
    act_on_cancel(w);
}

void ito__pt_cancel_check(void) {
  int *w = ito__dropin_cancel_word();
  if (w && (__atomic_load_n(w, __ATOMIC_ACQUIRE) & (CP | CD | CX)) == CP) act_on_cancel(w);
}

ITO_PT_EXPORT int pthread_cancel(pthread_t t) {
  ITO_PT_ENTER(pthread_cancel, t);
  int rc;
  if (is_root_id(t)) {
    rc = ito__dropin_cancel(0);
  } else if (is_ito(t)) {
    rc = ito__dropin_check((ito_thread_t)t);
    if (rc == ESRCH) return ESRCH;
    rc = ito__dropin_cancel((ito_thread_t)t);
  } else {
    return ito__pt_real.pthread_cancel(t);
  }
  if (rc == 0 && pthread_equal(t, ito__pt_self())) { /* itself, asynchronous: now */
    int *w = ito__dropin_cancel_word();
    if (w && (__atomic_load_n(w, __ATOMIC_ACQUIRE) & (CP | CD | CA | CX)) == (CP | CA))
      act_on_cancel(w);
  }
  return rc;
}

ITO_PT_EXPORT int pthread_setcancelstate(int state, int *old) {
  ITO_PT_ENTER(pthread_setcancelstate, state, old);
  if (state != PTHREAD_CANCEL_ENABLE && state != PTHREAD_CANCEL_DISABLE) return EINVAL;
  int *w = ito__dropin_cancel_word();
  if (!w) return ito__pt_real.pthread_setcancelstate(state, old);
  int prev = state == PTHREAD_CANCEL_DISABLE ? __atomic_fetch_or(w, CD, __ATOMIC_ACQ_REL)
                                             : __atomic_fetch_and(w, ~CD, __ATOMIC_ACQ_REL);
  if (old) *old = (prev & CD) ? PTHREAD_CANCEL_DISABLE : PTHREAD_CANCEL_ENABLE;
  if (state == PTHREAD_CANCEL_ENABLE && (prev & (CP | CA | CX)) == (CP | CA)) act_on_cancel(w);
  return 0;
}

ITO_PT_EXPORT int pthread_setcanceltype(int type, int *old) {
  ITO_PT_ENTER(pthread_setcanceltype, type, old);
  if (type != PTHREAD_CANCEL_DEFERRED && type != PTHREAD_CANCEL_ASYNCHRONOUS) return EINVAL;
  int *w = ito__dropin_cancel_word();
  if (!w) return ito__pt_real.pthread_setcanceltype(type, old);
  int prev = type == PTHREAD_CANCEL_ASYNCHRONOUS ? __atomic_fetch_or(w, CA, __ATOMIC_ACQ_REL)
                                                 : __atomic_fetch_and(w, ~CA, __ATOMIC_ACQ_REL);
  if (old) *old = (prev & CA) ? PTHREAD_CANCEL_ASYNCHRONOUS : PTHREAD_CANCEL_DEFERRED;
  if (type == PTHREAD_CANCEL_ASYNCHRONOUS && (prev & (CP | CD | CX)) == CP) act_on_cancel(w);
  return 0;
}

ITO_PT_EXPORT void pthread_testcancel(void) {
  if (UNLIKELY(ito__pt_state == 2)) {
    ito__pt_real.pthread_testcancel();
    return;
  }
  ito__pt_testcancel();
}

ITO_PT_EXPORT int pthread_getattr_np(pthread_t t, pthread_attr_t *attr) {
  ITO_PT_ENTER(pthread_getattr_np, t, attr);
  if (is_root_id(t)) { /* main: glibc's report, with the policy and priority kept here */
    struct ito_dropin_tattr ta;
    int rc = ito__pt_real.pthread_getattr_np(t, attr);
    if (rc || ito__dropin_tattr_get(0, &ta)) return rc;
    struct sched_param sp = {.sched_priority = ta.prio};
    pthread_attr_setschedpolicy(attr, ta.policy);
    pthread_attr_setschedparam(attr, &sp);
    return 0;
  }
  if (!is_ito(t)) return ito__pt_real.pthread_getattr_np(t, attr);
  struct ito_dropin_tattr ta;
  if (ito__dropin_check((ito_thread_t)t) == ESRCH || ito__dropin_tattr_get((ito_thread_t)t, &ta))
    return ESRCH;
  int rc = pthread_attr_init(attr);
  if (rc) return rc;
  /* as glibc reports a thread: its detach state, how it was created, its
   * policy and priority now, its stack */
  pthread_attr_setdetachstate(attr,
                              ta.detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
  if (ta.explicit_sched) pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED);
  struct sched_param sp = {.sched_priority = ta.prio};
  pthread_attr_setschedpolicy(attr, ta.policy);
  pthread_attr_setschedparam(attr, &sp);
  if (ta.stack_lo) pthread_attr_setstack(attr, ta.stack_lo, ta.stack_size);
  return 0;
}

ITO_PT_EXPORT int pthread_setname_np(pthread_t t, const char *name) {
  ITO_PT_ENTER(pthread_setname_np, t, name);
  if (!is_ito(t)) return ito__pt_real.pthread_setname_np(t, name);
  if (ito__pt_null(name)) return EINVAL;
  if (strlen(name) > 15) return ERANGE;
  return ito__dropin_tattr_set((ito_thread_t)t, name, NULL);
}

/* A thread never named has the name it was born with: the process's (the
 * kernel copies the creator's; main's is the usual one). */
ITO_PT_EXPORT int pthread_getname_np(pthread_t t, char *buf, size_t len) {
  ITO_PT_ENTER(pthread_getname_np, t, buf, len);
  if (!is_ito(t)) return ito__pt_real.pthread_getname_np(t, buf, len);
  if (len < 16) return ERANGE;
  struct ito_dropin_tattr ta;
  if (ito__dropin_tattr_get((ito_thread_t)t, &ta)) return ESRCH;
  if (ta.name[0]) {
    memcpy(buf, ta.name, 16);
    return 0;
  }
  return ito__pt_main_id ? ito__pt_real.pthread_getname_np(ito__pt_main_id, buf, len)
                         : (prctl(PR_GET_NAME, buf) == 0 ? 0 : errno);
}

ITO_PT_EXPORT int pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set) {
  ITO_PT_ENTER(pthread_setaffinity_np, t, size, set);
  if (is_root_id(t)) return affinity_result(ito__dropin_affinity_set(0, size, set));
  if (!is_ito(t)) return ito__pt_real.pthread_setaffinity_np(t, size, set);
  if (ito__dropin_check((ito_thread_t)t) == ESRCH) return ESRCH;
  /* the thread gets a home worker bound to a CPU of the set */
  return affinity_result(ito__dropin_affinity_set((ito_thread_t)t, size, set));
}

ITO_PT_EXPORT int pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t *set) {
  ITO_PT_ENTER(pthread_getaffinity_np, t, size, set);
  if (is_root_id(t)) return ito__dropin_affinity_get(0, size, set);
  if (!is_ito(t)) return ito__pt_real.pthread_getaffinity_np(t, size, set);
  if (ito__dropin_check((ito_thread_t)t) == ESRCH) return ESRCH;
  return ito__dropin_affinity_get((ito_thread_t)t, size, set);
}

/* Policies and priorities are kept per lightweight thread (main's in the
 * root while the runtime runs) and read back; a new thread takes its
 * creator's unless its attribute is PTHREAD_EXPLICIT_SCHED. */
/* Is t a thread whose scheduling the library keeps? *h: its handle, 0
 * for the root (main's own id while the runtime runs). */
static int sched_target(pthread_t t, ito_thread_t *h) {
  if (is_root_id(t)) {
    *h = 0;
    return 1;
  }
  *h = (ito_thread_t)t;
  return is_ito(t);
}

static int sched_set(ito_thread_t h, int policy, int prio) {
  int rc = sched_check(policy, prio);
  if (rc) return rc;
  int pp[2] = {policy & ~SCHED_RESET_ON_FORK, prio};
  return ito__dropin_tattr_set(h, NULL, pp);
}

ITO_PT_EXPORT int pthread_setschedparam(pthread_t t, int policy, const struct sched_param *p) {
  ITO_PT_ENTER(pthread_setschedparam, t, policy, p);
  ito_thread_t h;
  if (!sched_target(t, &h)) return ito__pt_real.pthread_setschedparam(t, policy, p);
  if (ito__pt_null(p)) return EINVAL;
  return sched_set(h, policy, p->sched_priority);
}

ITO_PT_EXPORT int pthread_getschedparam(pthread_t t, int *policy, struct sched_param *p) {
  ITO_PT_ENTER(pthread_getschedparam, t, policy, p);
  ito_thread_t h;
  if (!sched_target(t, &h)) return ito__pt_real.pthread_getschedparam(t, policy, p);
  struct ito_dropin_tattr ta;
  if (ito__dropin_tattr_get(h, &ta)) return ESRCH;
  *policy = ta.policy;
  p->sched_priority = ta.prio;
  return 0;
}

ITO_PT_EXPORT int pthread_setschedprio(pthread_t t, int prio) {
  ITO_PT_ENTER(pthread_setschedprio, t, prio);
  ito_thread_t h;
  if (!sched_target(t, &h)) return ito__pt_real.pthread_setschedprio(t, prio);
  struct ito_dropin_tattr ta;
  if (ito__dropin_tattr_get(h, &ta)) return ESRCH;
  return sched_set(h, ta.policy, prio);
}

/* sched_setscheduler, sched_getscheduler, sched_setparam and
 * sched_getparam of the calling thread (pid 0) are its own, as the
 * pthread calls above; any other pid is the kernel's. -1 with errno, as
 * libc's. */
static int sched_self(pid_t pid, ito_thread_t *h) {
  *h = ito__dropin_is_root() ? 0 : ito_self();
  return pid == 0 && ito_self();
}

static int sched_result(int rc) {
  if (rc == 0) return 0;
  errno = rc;
  return -1;
}

ITO_PT_EXPORT int sched_setscheduler(pid_t pid, int policy, const struct sched_param *p) {
  ITO_PT_ENTER(sched_setscheduler, pid, policy, p);
  ito_thread_t h;
  if (!sched_self(pid, &h)) return ito__pt_real.sched_setscheduler(pid, policy, p);
  if (ito__pt_null(p)) return sched_result(EINVAL);
  return sched_result(sched_set(h, policy, p->sched_priority));
}

ITO_PT_EXPORT int sched_getscheduler(pid_t pid) {
  ITO_PT_ENTER(sched_getscheduler, pid);
  ito_thread_t h;
  if (!sched_self(pid, &h)) return ito__pt_real.sched_getscheduler(pid);
  struct ito_dropin_tattr ta;
  if (ito__dropin_tattr_get(h, &ta)) return sched_result(ESRCH);
  return ta.policy;
}

ITO_PT_EXPORT int sched_setparam(pid_t pid, const struct sched_param *p) {
  ITO_PT_ENTER(sched_setparam, pid, p);
  ito_thread_t h;
  if (!sched_self(pid, &h)) return ito__pt_real.sched_setparam(pid, p);
  if (ito__pt_null(p)) return sched_result(EINVAL);
  struct ito_dropin_tattr ta;
  if (ito__dropin_tattr_get(h, &ta)) return sched_result(ESRCH);
  return sched_result(sched_set(h, ta.policy, p->sched_priority));
}

ITO_PT_EXPORT int sched_getparam(pid_t pid, struct sched_param *p) {
  ITO_PT_ENTER(sched_getparam, pid, p);
  ito_thread_t h;
  if (!sched_self(pid, &h)) return ito__pt_real.sched_getparam(pid, p);
  if (ito__pt_null(p)) return sched_result(EINVAL);
  struct ito_dropin_tattr ta;
  if (ito__dropin_tattr_get(h, &ta)) return sched_result(ESRCH);
  p->sched_priority = ta.prio;
  return 0;
}

ITO_PT_EXPORT int pthread_getcpuclockid(pthread_t t, clockid_t *c) {
  ITO_PT_ENTER(pthread_getcpuclockid, t, c);
  if (is_root_id(t)) return ito__dropin_cpuclock(0, c);
  if (!is_ito(t)) return ito__pt_real.pthread_getcpuclockid(t, c);
  if (ito__dropin_check((ito_thread_t)t) == ESRCH) return ESRCH;
  return ito__dropin_cpuclock((ito_thread_t)t, c); /* its own CPU time (docs/signals.md) */
}

/* A thread's CPU clock, and CLOCK_THREAD_CPUTIME_ID of an ito thread, are
 * the runtime's; every other clock is libc's. */
ITO_PT_EXPORT int clock_gettime(clockid_t c, struct timespec *ts) {
  ITO_PT_ENTER(clock_gettime, c, ts);
  if (LIKELY(c >= 0 && c != CLOCK_THREAD_CPUTIME_ID)) return ito__pt_real.clock_gettime(c, ts);
  int rc = ito__dropin_cpuclock_read(c, ts);
  if (rc == ENOENT) return ito__pt_real.clock_gettime(c, ts);
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

ITO_PT_EXPORT int clock_getres(clockid_t c, struct timespec *ts) {
  ITO_PT_ENTER(clock_getres, c, ts);
  struct timespec now;
  if (LIKELY(c >= 0 && c != CLOCK_THREAD_CPUTIME_ID)) return ito__pt_real.clock_getres(c, ts);
  int rc = ito__dropin_cpuclock_read(c, &now);
  if (rc == ENOENT) return ito__pt_real.clock_getres(c, ts);
  if (rc) {
    errno = rc;
    return -1;
  }
  if (ts) ts->tv_sec = 0, ts->tv_nsec = 1;
  return 0;
}

/* sched_setaffinity/sched_getaffinity of the calling thread (pid 0) are its
 * pthread_*affinity_np; any other pid is the kernel's. */
ITO_PT_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set) {
  ITO_PT_ENTER(sched_setaffinity, pid, size, set);
  ito_thread_t self = ito_self();
  if (pid != 0 || !self) return ito__pt_real.sched_setaffinity(pid, size, set);
  int rc = affinity_result(ito__dropin_affinity_set(ito__dropin_is_root() ? 0 : self, size, set));
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

ITO_PT_EXPORT int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set) {
  ITO_PT_ENTER(sched_getaffinity, pid, size, set);
  ito_thread_t self = ito_self();
  if (pid != 0 || !self) return ito__pt_real.sched_getaffinity(pid, size, set);
  int rc = ito__dropin_affinity_get(ito__dropin_is_root() ? 0 : self, size, set);
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}
