/* Preemption of program threads: which threads, the table of code that is
 * not the program's, the signal and its handler. Invariants at the top of
 * preempt.h; design in docs/monitor.md, "Preemption". */
#define _GNU_SOURCE
#include "preempt.h"

#include "config.h"
#include "fiber.h"
#include "forkpart.h"
#include "monitor.h"
#include "os.h"
#include "sched.h"
#include "signal.h"
#include "thread.h"
#include "tls.h"
#include "worker.h"

#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* ITO_PREEMPT_MS (config.h) */
static struct { long ms; } preempt_cfg;
static const struct ito_cfg preempt_rows[] = {
    {.name = "ITO_PREEMPT_MS",
     .kind = ITO_CFG_INT,
     .dst = &preempt_cfg.ms,
     .lo = 0,
     .hi = 100000,
     .dflt = "10",
     .what = "time slice in milliseconds of a pthread or OpenMP team member, after which the "
             "monitor preempts it while other threads wait (0: never)"},
};
static void preempt_defaults(void *settings) { *(long *)settings = 10; }
ITO_CONFIG_MODULE(preempt_config, preempt_rows, preempt_cfg, preempt_defaults, NULL);

int ito__preempt_enabled, ito__preempt_threads;

/* ito's preemption signal: SI_QUEUE from our pid, its value the fiber's
 * address (64-byte aligned) with these low bits set (qemu-user drops
 * si_errno, so the mark is in the value) */
#define PREEMPT_MARK 0x2aUL
#define MARK_BITS 0x3fUL
/* Stack the handler wants left below its own frame before it yields: the
 * scheduler's path and a context switch. */
#define ROOM 4096

/* ---- code that is not the program's (invariant 2) ---------------------------------------- */

struct range {
  uintptr_t lo, hi;
};
#define MAX_RANGES 96
struct table {
  int n;
  struct range r[MAX_RANGES];
};
/* Two tables: the handler reads the current one; a rebuild fills the other
 * once no handler reads it (readers). */
static struct table tables[2];
static struct table *cur_table;
static int readers;
static int build_lock;
/* the loader's counts of objects loaded and unloaded when it was built */
static unsigned long long built_adds, built_subs;

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* Objects whose code may hold locks tied to the OS thread or ito's state:
 * the C library, loader and unwinder, the C++ runtimes (ito's switch calls
 * their __cxa_get_globals), the sanitizers' and Valgrind's, and ito's. */
static bool foreign(const char *path) {
  static const char *const prefixes[] = {
      "libc.so",      "ld-linux",   "ld64.so",      "libpthread.so", "libdl.so",     "librt.so",
      "libgcc_s.so",  "libito",     "linux-vdso",   "linux-gate",    "libasan.so",   "libtsan.so",
      "libubsan.so",  "liblsan.so", "libhwasan.so", "vgpreload_",    "libresolv.so", "libnss_",
      "libstdc++.so", "libc++.so",  "libc++abi.so",
  };
  const char *b = base_name(path);
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (!strncmp(b, prefixes[i], strlen(prefixes[i]))) return true;
  return false;
}

static int load_counts(struct dl_phdr_info *info, size_t size, void *arg) {
  unsigned long long *c = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
  }
  return 1; /* (the first object says it) */
}

static bool holds(const struct dl_phdr_info *info, uintptr_t a) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD && a >= lo && a < lo + p->p_memsz) return true;
  }
  return false;
}

static int note_object(struct dl_phdr_info *info, size_t size, void *arg) {
  struct table *t = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
    built_adds = info->dlpi_adds;
    built_subs = info->dlpi_subs;
  }
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  /* the object that holds this code: ito itself, even linked statically;
   * and the allocator in use, which ito calls with its own locks held
   * (jemalloc, tcmalloc, mimalloc: preloaded or linked as a library; one
   * defined in the executable is the program's code) */
  bool mine = holds(info, (uintptr_t)&note_object);
  bool allocator = name[0] && holds(info, (uintptr_t)&malloc);
  if (!mine && !allocator && !foreign(name)) return 0;
  for (int i = 0; i < info->dlpi_phnum && t->n < MAX_RANGES; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    t->r[t->n++] = (struct range){lo, lo + p->p_memsz};
  }
  return 0;
}

static void build(void) {
  spin_lock(&build_lock, LR_LEAF);
  struct table *t = LOAD_ACQ(&cur_table) == &tables[0] ? &tables[1] : &tables[0];
  /* a handler that read the old pointer before the last swap is done with
   * it: a handler's look-up never blocks, so this ends (readers and the
   * pointer are sequentially consistent: a reader that counted itself
   * after this read sees the pointer of the last swap) */
  while (__atomic_load_n(&readers, __ATOMIC_SEQ_CST)) cpu_relax();
  t->n = 0;
  dl_iterate_phdr(note_object, t);
  __atomic_store_n(&cur_table, t, __ATOMIC_SEQ_CST);
  spin_unlock(&build_lock);
}

static bool programs_code(uintptr_t pc) {
  __atomic_add_fetch(&readers, 1, __ATOMIC_SEQ_CST);
  const struct table *t = __atomic_load_n(&cur_table, __ATOMIC_SEQ_CST);
  bool ok = t != NULL;
  for (int i = 0; ok && i < t->n; i++)
    if (pc >= t->r[i].lo && pc < t->r[i].hi) ok = false;
  __atomic_sub_fetch(&readers, 1, __ATOMIC_SEQ_CST);
  return ok;
}

/* In the child of a fork: the other threads are gone, with whatever they
 * held (a rebuild's lock, a handler's count). */
static void preempt_fork_child(worker *w, ithread *self) {
  (void)w, (void)self;
  build_lock = 0;
  readers = 0;
}
ITO_FORK_PART(preempt_fork, .child_order = FORK_PREEMPT, .child = preempt_fork_child);

void ito__preempt_modules_changed(void) {
  if (LOAD_ACQ(&cur_table)) build();
}

void ito__preempt_refresh(void) {
  unsigned long long c[2] = {built_adds, built_subs};
  dl_iterate_phdr(load_counts, c);
  if (c[0] != built_adds || c[1] != built_subs) build();
}

/* ---- which threads --------------------------------------------------------------------------- */

bool ito__preemptible(const ithread *t) {
  return t && (LOAD_RLX(&t->preempt) || (ito__preempt_threads && !(LOAD_RLX(&t->flags) & TH_ANON)));
}

/* ---- the handler ----------------------------------------------------------------------------- */

/* The kernel's sigaction (glibc's refuses its reserved signals). */
struct ksigaction {
  void *handler;
  unsigned long flags;
  void *restorer;
  uint64_t mask;
};
#define K_SA_RESTORER 0x04000000UL

static struct ksigaction chained; /* what the kernel held before ours (glibc's, if any) */
static int installed;
static pid_t self_pid;
static unsigned long n_done, n_refused;

bool ito__preempt_ready(void) { return LOAD_ACQ(&installed) != 0; }

void ito__preempt_counts(unsigned long *done, unsigned long *refused) {
  *done = __atomic_load_n(&n_done, __ATOMIC_RELAXED);
  *refused = __atomic_load_n(&n_refused, __ATOMIC_RELAXED);
}

static uintptr_t context_pc(const ucontext_t *uc) {
#if defined(__x86_64__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0;
#endif
}

static uintptr_t context_sp(const ucontext_t *uc) {
#if defined(__x86_64__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.sp;
#else
  (void)uc;
  return 0;
#endif
}

static void (*cancel_act)(void);
void ito__preempt_on_cancel(void (*act)(void)) { STORE_REL(&cancel_act, act); }

bool ito__preempt_cancel_due(const ithread *t) {
  return t && (LOAD_ACQ(&t->cancel) & (CANCEL_PENDING | CANCEL_ASYNC | CANCEL_DISABLED |
                                       CANCEL_ACTING)) == (CANCEL_PENDING | CANCEL_ASYNC);
}

/* Invariants 1-3 for fiber f on worker w, interrupted at uc. *in_kwait:
 * the exception to invariant 2 (an asynchronous cancellation due inside an
 * announced lock or barrier wait of glibc's). */
static bool may_preempt(worker *w, fiber *f, const ucontext_t *uc, bool *in_kwait) {
  *in_kwait = false;
  ithread *t = f->thread;
  bool cancel = ito__preempt_cancel_due(t);
  if (!t || !(ito__preemptible(t) || cancel) || f->in_handler || f->callout || w->post_fn)
    return false;
  /* a pinned thread stays on its OS thread: never suspended, but an
   * asynchronous cancellation acts on it there, as glibc's does */
  if (t->pin && !(cancel && LOAD_ACQ(&cancel_act))) return false;
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  uintptr_t sp = context_sp(uc);
  uintptr_t lo = (uintptr_t)f->lo, hi = (uintptr_t)f->hi;
  if (fp < lo + ROOM || fp >= hi || sp < lo || sp >= hi) return false; /* another stack */
  if (ito__sig_on) { /* the mask ito set for the thread (not a handler's) */
    uint64_t m;
    memcpy(&m, &uc->uc_sigmask, sizeof m);
    if (m != w->os_sigmask) return false;
  }
  if (programs_code(context_pc(uc))) return true;
  *in_kwait = LOAD_ACQ(&w->kwait) == KWAIT_ASYNC && ito__preempt_cancel_due(t) &&
              LOAD_ACQ(&cancel_act) != NULL;
  return *in_kwait;
}

/* Invariant 4: the frame returns into the OS thread the fiber now runs on. */
void ito__frame_adopt_stack(void *ucv) {
  ucontext_t *uc = ucv;
  stack_t ss;
  if (ito__os.syscall(SYS_sigaltstack, NULL, &ss) == 0) {
    ss.ss_flags &= ~SS_ONSTACK;
    uc->uc_stack = ss;
  }
}

static void adopt_os_state(ucontext_t *uc) {
  ito__frame_adopt_stack(uc);
  uint64_t m = 0;
  if (ito__os.syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, (size_t)8) == 0) {
    sigemptyset(&uc->uc_sigmask);
    memcpy(&uc->uc_sigmask, &m, sizeof m);
  }
}

static void chain(int sig, siginfo_t *si, void *uc) {
  void *h = chained.handler;
  if (h == (void *)SIG_DFL || h == (void *)SIG_IGN) return;
  if (chained.flags & SA_SIGINFO)
    ((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
  else
    ((void (*)(int))h)(sig);
}

static void on_signal(int sig, siginfo_t *si, void *ucv) {
  uintptr_t v = si ? (uintptr_t)si->si_value.sival_ptr : 0;
  if (!si || si->si_code != SI_QUEUE || (v & MARK_BITS) != PREEMPT_MARK || si->si_pid != self_pid) {
    chain(sig, si, ucv);
    return;
  }
  int saved = errno;
  /* invariant 5: this frame returns through code that is not the program's */
  ITO_ASSERT(!programs_code((uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0))));
  worker *w = cur_worker();
  fiber *f = w ? w->cur : NULL;
  bool in_kwait;
  if (f && (uintptr_t)f == (v & ~MARK_BITS) && may_preempt(w, f, ucv, &in_kwait)) {
    void (*act)(void) = LOAD_ACQ(&cancel_act);
    if (act && ito__preempt_cancel_due(f->thread)) {
      /* pthread_exit from here: the unwind goes through this frame into
       * the interrupted code's (the frame's mask and stack are the
       * thread's: nothing to restore); a wait in the kernel ends first */
      if (in_kwait) ito__monitor_kwait_end();
      errno = saved;
      act();
    }
    if (in_kwait || f->thread->pin) { /* (the request is gone: never suspended
                                       * inside libc, nor a pinned thread) */
      __atomic_add_fetch(&n_refused, 1, __ATOMIC_RELAXED);
      errno = saved;
      return;
    }
    __atomic_add_fetch(&n_done, 1, __ATOMIC_RELAXED);
    ito__suspend(ACT_PREEMPT, NULL, NULL, NULL);
    /* invariant 4: with worker TLS, back on the worker it left */
    ITO_ASSERT(ito__tls_mode || cur_worker() == w);
    adopt_os_state(ucv);
#if ITO_ASSERTS
    if (ito__sig_on) { /* the frame's mask is the worker's, as signal.h's invariant 1 keeps it */
      uint64_t m;
      memcpy(&m, &((ucontext_t *)ucv)->uc_sigmask, sizeof m);
      ITO_ASSERT(m == cur_worker()->os_sigmask);
    }
#endif
  } else {
    __atomic_add_fetch(&n_refused, 1, __ATOMIC_RELAXED);
  }
  errno = saved;
}

#if defined(__x86_64__)
/* The return from a handler: rt_sigreturn, in the very bytes of glibc's
 * __restore_rt, which the unwinder recognises (an unwind through the frame
 * goes on into the interrupted code). No unwind table of its own. */
void ito__preempt_restorer(void) HIDDEN;
/* (a nop before it, as glibc has: the unwinder looks up the address before
 * a return address, which must not fall in the previous function's table) */
__asm__(
    ".text\n"
    ".align 16\n"
    "nop\n"
    ".type ito__preempt_restorer,@function\n"
    "ito__preempt_restorer:\n"
    "\tmovq $15, %rax\n"
    "\tsyscall\n"
    "\thlt\n"
    ".size ito__preempt_restorer,.-ito__preempt_restorer\n");
#elif defined(__aarch64__)
/* The same on AArch64, where the kernel would return through the vDSO's
 * trampoline and qemu-user through a page of its own that no loaded object
 * holds (so the table above would call it the program's code, invariant 5):
 * the two instructions of the kernel's __kernel_rt_sigreturn, which
 * libgcc's unwinder and gdb recognise. */
void ito__preempt_restorer(void) HIDDEN;
__asm__(
    ".text\n"
    ".align 4\n"
    "nop\n"
    ".type ito__preempt_restorer,%function\n"
    "ito__preempt_restorer:\n"
    "\tmov x8, #139\n"
    "\tsvc #0\n"
    "\tbrk #0\n"
    ".size ito__preempt_restorer,.-ito__preempt_restorer\n");
#endif

static int ksigaction(const struct ksigaction *act, struct ksigaction *old) {
  return (int)ito__os.syscall(SYS_rt_sigaction, ITO_PREEMPT_SIG, act, old, (size_t)8);
}

/* Ours in the kernel, with what was there chained (glibc's SIGCANCEL
 * handler, installed at a program's first pthread_cancel without the
 * pthread library, may replace it: each send puts ours back). */
static void install(void) {
  struct ksigaction now;
  if (ksigaction(NULL, &now) != 0) return;
  if (now.handler == (void *)on_signal) {
    STORE_REL(&installed, 1); /* (from an earlier start) */
    return;
  }
  struct ksigaction sa = {
      .handler = (void *)on_signal,
      /* the thread's own stack (invariant 1); no mask change, so that the
       * frame's saved mask is the thread's */
      .flags = SA_SIGINFO | SA_RESTART | SA_NODEFER,
      .mask = 0,
  };
#if defined(__x86_64__) || defined(__aarch64__)
  sa.flags |= K_SA_RESTORER; /* (invariant 5) */
  sa.restorer = (void *)ito__preempt_restorer;
#endif
  chained = now;
  if (ksigaction(&sa, NULL) == 0) STORE_REL(&installed, 1);
}

bool ito__preempt_setup(long long *slice_ns) {
  STORE_REL(&installed, 0);
  *slice_ns = 0;
#if ITO_TSAN || (!defined(__x86_64__) && !defined(__aarch64__))
  /* ThreadSanitizer runs handlers late, with a context of its own */
  return false;
#else
  if (!ito__preempt_enabled) return false;
  self_pid = getpid();
  build();
  install(); /* (also for asynchronous cancellation, with no time slice) */
  if (!LOAD_ACQ(&installed)) return false;
  *slice_ns = preempt_cfg.ms * 1000000LL;
  return true;
#endif
}

void ito__preempt_cancel(ithread *t) {
  if (!LOAD_ACQ(&installed) || !ito__preempt_cancel_due(t)) return;
  worker *w = ito__worker_running(t);
  if (w) ito__preempt_send(w, fiber_of_thread(t));
}

void ito__preempt_send(worker *w, fiber *f) {
  int tid = LOAD_RLX(&w->os_tid);
  if (tid <= 0) return;
  install(); /* (one sigaction call: still ours?) */
  ito__queue_signal(tid, ITO_PREEMPT_SIG, (void *)((uintptr_t)f | PREEMPT_MARK));
}
