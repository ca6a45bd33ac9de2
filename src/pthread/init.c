/* Set-up of the shim: libc's definitions, resolved once; the runtime's
 * table of real calls; ITO_PTHREAD and ITO_PTHREAD_VERIFY, parsed by the
 * runtime's configuration table (docs/dropin.md sections 2 and 3). */
#include "shim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

struct ito__pt_real ito__pt_real;
int ito__pt_state;
pthread_t ito__pt_main_id;
ito_key_t ito__pt_cleanup_key, ito__pt_exit_key;
static int init_lock;
static int verify;

/* Through libc's write, once resolved: the shim's own write would come
 * back here while the set-up is not finished. */
static void die(const char *msg) {
  ssize_t r = ito__pt_real.write ? ito__pt_real.write(2, msg, strlen(msg))
                                 : (ssize_t)syscall(SYS_write, 2, msg, strlen(msg));
  (void)r;
  _exit(2);
}

static int on = 1;
static const struct ito_cfg_choice on_off[] = {{"on", 1}, {"1", 1}, {"off", 0}, {"0", 0}, {0, 0}};
static const struct ito_cfg_choice zero_one[] = {{"0", 0}, {"1", 1}, {0, 0}};
/* (a table: one row per variable, packed) */
/* clang-format off */
static const struct ito_cfg rows[] = {
    {.name = "ITO_PTHREAD", .kind = ITO_CFG_CHOICE, .dst = &on, .choices = on_off, .dflt = "on",
     .what = "off: libito-pthread.so forwards every call to libc"},
    {.name = "ITO_PTHREAD_VERIFY", .kind = ITO_CFG_CHOICE, .dst = &verify, .choices = zero_one,
     .dflt = "0", .what = "1: libito-pthread.so prints at exit how many threads ran as ito threads"},
};
/* clang-format on */

/* Functions that exist in more than one version in libc are resolved at
 * the version a program linked today gets: dlsym's choice before glibc
 * 2.36 was the oldest (docs/dropin.md section 2). */
#if defined(__x86_64__)
#define COND_VERSION "GLIBC_2.3.2"
#elif defined(__aarch64__)
#define COND_VERSION "GLIBC_2.17"
#else
#define COND_VERSION NULL
#endif

/* Without dlsym: it may allocate through the program's own allocator,
 * whose locks are the shim's (docs/dropin.md section 2). */
static void *resolve(const char *name) {
  void *p = NULL;
  if (COND_VERSION && !strncmp(name, "pthread_cond_", 13) && strcmp(name, "pthread_cond_clockwait"))
    p = ito__dropin_sym((const void *)&ito__pt_init, name, COND_VERSION);
  if (!p) p = ito__dropin_sym((const void *)&ito__pt_init, name, NULL);
  return p;
}

static void verify_report(void) {
  char buf[128];
  int n = snprintf(buf, sizeof buf, "ito-pthread: %lu threads ran as ito threads\n",
                   ito__dropin_created());
  if (n > 0) {
    ssize_t r = write(2, buf, (size_t)n);
    (void)r;
  }
}

/* The OS thread that runs the set-up, while it does. */
static int setup_tid;

void ito__pt_init(void) {
  if (__atomic_load_n(&ito__pt_state, __ATOMIC_ACQUIRE)) return;
  int me = (int)syscall(SYS_gettid);
  if (__atomic_exchange_n(&init_lock, 1, __ATOMIC_ACQUIRE)) {
    /* a call the set-up made itself (a program's allocator taking its
     * lock inside a libc call): state stays 0 and the caller goes to libc,
     * resolved first, before anything the set-up calls can come back */
    if (__atomic_load_n(&setup_tid, __ATOMIC_RELAXED) == me) return;
    while (!__atomic_load_n(&ito__pt_state, __ATOMIC_ACQUIRE)) syscall(SYS_sched_yield);
    return;
  }
  __atomic_store_n(&setup_tid, me, __ATOMIC_RELAXED);
#define ITO_PT_RESOLVE(name, ret, args) ito__pt_real.name = (ret(*) args)resolve(#name);
  ITO_PT_REAL_LIST(ITO_PT_RESOLVE)
#undef ITO_PT_RESOLVE
  if (!ito__pt_real.pthread_create || !ito__pt_real.pthread_join || !ito__pt_real.pthread_self ||
      !ito__pt_real.nanosleep || !ito__pt_real.clock_nanosleep || !ito__pt_real.sched_yield)
    die("ito-pthread: cannot find libc's pthread functions (is libito-pthread.so loaded before "
        "libc? use LD_PRELOAD or link it first)\n");
  struct ito_os os = {
      .pthread_create = ito__pt_real.pthread_create,
      .pthread_join = ito__pt_real.pthread_join,
      .pthread_self = ito__pt_real.pthread_self,
      .pthread_getattr_np = ito__pt_real.pthread_getattr_np,
      .pthread_setaffinity_np = ito__pt_real.pthread_setaffinity_np,
      .sched_yield = ito__pt_real.sched_yield,
      .nanosleep = ito__pt_real.nanosleep,
      .clock_nanosleep = ito__pt_real.clock_nanosleep,
      .write = ito__pt_real.write,
      .syscall = (long (*)(long, ...))resolve("syscall"),
      .sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))resolve("sigaction"),
  };
  /* libc's calls in the runtime's table first: a bad value's message then
   * goes out through libc's write, not the shim's */
  ito__dropin_os_install(&os);
  ito__dropin_config_read(rows, (int)(sizeof rows / sizeof rows[0]));
  int off = !on;
  if (!off) {
    /* pthreads each have their own thread-local storage, as with glibc
     * (docs/tls.md); ITO_TLS=worker asks for the worker's */
    ito__dropin_config_default("ITO_TLS", "thread", "libito-pthread.so");
    ito__dropin_sig_enable(); /* masks and signals per thread (docs/signals.md) */
    /* pthreads are preempted, and cancelled asynchronously wherever they
     * compute (docs/monitor.md) */
    ito__dropin_preempt_enable(1, ito__pt_cancel_async);
    /* libito-omp.so's sleeps are cancellation points too */
    __atomic_store_n(&ito__dropin_cancel_check, ito__pt_cancel_check, __ATOMIC_RELEASE);
    /* fork: first registered, so that ito's prepare runs after the
     * program's and its child and parent handlers before (atfork.h) */
    pthread_atfork(ito__dropin_atfork_prepare, ito__dropin_atfork_parent, ito__dropin_atfork_child);
    if (ito__dropin_key_create(&ito__pt_cleanup_key, NULL) ||
        ito__dropin_key_create(&ito__pt_exit_key, free))
      die("ito-pthread: cannot create its thread-specific keys\n");
    ito__dropin_fd_view_tracked();
    ito__dropin_io_early(); /* its descriptors made while the table has room */
    /* the program's main thread keeps its own id when the runtime adopts
     * it as the root thread */
    if (syscall(SYS_gettid) == getpid()) ito__pt_main_id = ito__pt_real.pthread_self();
    if (verify) atexit(verify_report);
  }
  __atomic_store_n(&setup_tid, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&ito__pt_state, off ? 2 : 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void ito__pt_ctor(void) { ito__pt_init(); }

/* The runtime calls it before it starts (src/dropin/ito_dropin.h). */
ITO_PT_EXPORT void __ito_dropin_setup(void) { ito__pt_init(); }

pthread_t ito__pt_self(void) {
  ito_thread_t h = ito_self();
  if (!h) return ito__pt_real.pthread_self();
  if (ito__dropin_is_root() && ito__pt_main_id) return ito__pt_main_id;
  return (pthread_t)h;
}

int ito__pt_refuse(int *once, const char *call, const char *what, const char *hint, int err) {
  if (!__atomic_exchange_n(once, 1, __ATOMIC_RELAXED)) {
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "ito-pthread: %s: %s is not supported with lightweight threads (%s)\n", call,
                     what, hint);
    if (n > 0) {
      if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
      ssize_t r = write(2, buf, (size_t)n);
      (void)r;
    }
  }
  return err;
}

int ito__pt_null(const void *p) { return p == NULL; }

int ito__pt_bad_time(const struct timespec *ts) { return !ts || !ts_valid(ts); }
