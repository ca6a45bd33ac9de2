/* Stack overflow reports: the SIGSEGV handler, on a per-worker alternate
 * signal stack, tells an overflow into a fiber's guard page from any other
 * fault (docs/fibers.md, "Overflow"). */
#define _GNU_SOURCE
#include "overflow.h"

#include "config.h"
#include "elfsym.h"
#include "fiber.h"
#include "observe.h"
#include "os.h"
#include "signal.h"
#include "worker.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static struct sigaction old_segv, old_bus;

/* The default action again, through libc's own sigaction (a drop-in's
 * interposer takes locks, which a fault may find held). */
static void set_default(int sig) {
  struct sigaction d;
  memset(&d, 0, sizeof d);
  d.sa_handler = SIG_DFL;
  ito__os.sigaction(sig, &d, NULL);
}

/* Runs the handler of action a, if it has one; true if it did. */
static bool chain(const struct sigaction *a, int sig, siginfo_t *si, void *uc) {
  if (a->sa_flags & SA_SIGINFO) {
    if (!a->sa_sigaction) return false;
    a->sa_sigaction(sig, si, uc);
    return true;
  }
  if (a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN) return false;
  a->sa_handler(sig);
  return true;
}

static overflow_describe_fn describe;

void ito__overflow_describe(overflow_describe_fn fn) { STORE_REL(&describe, fn); }

/* "lightweight thread 5 "name", started at fn" or a drop-in library's
 * words for the code on the stack: who overflowed, for the report. */
static void who(const fiber *f, char *out, size_t len) {
  overflow_describe_fn d = LOAD_ACQ(&describe);
  void *fn = NULL;
  const ithread *t = f->thread;
  int n;
  if (d && f->ctx && d(f->ctx, out, len, &fn)) {
    n = (int)strnlen(out, len);
  } else {
    fn = t ? (void *)t->fn : NULL;
    if (!t || (t->flags & TH_ANON))
      n = snprintf(out, len, "a lightweight thread");
    else if (t->name[0])
      n = snprintf(out, len, "lightweight thread %u \"%.16s\"", t->idx, t->name);
    else
      n = snprintf(out, len, "lightweight thread %u", t->idx);
  }
  if (n < 0 || (size_t)n >= len || !fn) return;
  n += snprintf(out + n, len - (size_t)n, ", started at ");
  if ((size_t)n < len) ito__elf_name(fn, out + n, len - (size_t)n);
}

/* The variable that sets the stack size, to name: the one its value came
 * from (OMP_STACKSIZE under libito-omp.so), ITO_STACK_SIZE when that was
 * no variable (a library's own default). */
static const char *size_var(void) {
  const char *v = ito__config_blame("ITO_STACK_SIZE");
  for (const char *p = v; *p; p++)
    if (!(*p == '_' || (*p >= 'A' && *p <= 'Z'))) return "ITO_STACK_SIZE";
  return v;
}

static void segv_handler(int sig, siginfo_t *si, void *uc) {
  worker *w = ito__tls_worker;
  fiber *f = w ? w->cur : NULL;
  char *a = si->si_addr;
  if (f && (f->kind == FIBER_POOL || f->kind == FIBER_OWN) && f->guarded && a >= f->map &&
      a < f->lo + 256) {
    char buf[768], name[400];
    who(f, name, sizeof name);
    if (f->kind == FIBER_OWN) {
      /* a size the program asked for, overflowed: SIGSEGV, as natively (its
       * own handler, where it has one, runs here on the worker's
       * alternate stack) */
      struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus, prog;
      if (ito__sig_prog_action(sig, &prog)) old = &prog;
      if (chain(old, sig, si, uc)) return;
      snprintf(buf, sizeof buf,
               "ito: stack overflow in %s (stack of %zu bytes, asked for when it was "
               "created); ask for a larger stack\n",
               name, (size_t)(f->map + f->maplen - f->lo));
      ito__write_stderr(buf, strlen(buf));
      set_default(sig); /* the default action, taken when the access re-runs */
      return;
    }
    const char *var = size_var();
    snprintf(buf, sizeof buf,
             "ito: stack overflow in %s (stack of %zu bytes); raise %s (for example %s=%zuK)\n",
             name, ito__stack_size(), var, var, ito__stack_size() * 4 / 1024);
    ito__write_stderr(buf, strlen(buf));
    set_default(SIGABRT);
    abort();
  }
  struct sigaction *old = sig == SIGSEGV ? &old_segv : &old_bus, prog;
  if (ito__sig_prog_action(sig, &prog)) /* set since (through a drop-in library) */
    old = &prog;
  if (chain(old, sig, si, uc)) return;
  /* not ours: the default action, taken when the faulting access re-runs */
  set_default(sig);
}

static void install_segv(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ito__os.sigaction(SIGSEGV, &sa, &old_segv);
  ito__os.sigaction(SIGBUS, &sa, &old_bus);
  STORE_REL(&ito__segv_installed, 1);
}
ITO_OBSERVE(segv_observer, OBSERVE_SETUP, OBS_SEGV, install_segv);

/* An alternate signal stack for the calling OS thread; NULL if none. */
static char *altstack_setup(void) {
  size_t sz = 64 * 1024;
  char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  stack_t ss;
  ss.ss_sp = m;
  ss.ss_size = sz;
  ss.ss_flags = 0;
  if (ito__os.syscall(SYS_sigaltstack, &ss, NULL) == 0) return m; /* (past a drop-in's) */
  munmap(m, sz);
  return NULL;
}

static void altstack_at_worker(void) {
  worker *w = cur_worker();
  if (!w->altstack) w->altstack = altstack_setup();
}
ITO_OBSERVE(altstack_observer, OBSERVE_WORKER, OBS_ALTSTACK, altstack_at_worker);
