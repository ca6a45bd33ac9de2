/* pthread_cleanup_push/pop in C and pthread_exit (docs/dropin.md section
 * 6). glibc's macros keep a jump buffer per handler in the caller's frame
 * and link it into the OS thread's TCB; for an ito thread the shim keeps
 * that chain per lightweight thread instead (a thread may pop on another
 * OS thread than it pushed on). pthread_exit and cancellation unwind
 * the stack as glibc's do (below), running each buffer's handler where its
 * frame is left and C++ destructors on the way. */
#include "shim.h"

#include <stdlib.h>
#include <string.h>
#include <unwind.h>

/* libc's longjmp, taking the buffer untyped: a cleanup buffer is a jmp_buf
 * without the saved signal mask, which longjmp reads only when
 * __mask_was_saved is set (the macros save with a mask flag of 0). */
static void __attribute__((noreturn)) ito__pt_longjmp(void *env, int val) {
  ito__pt_real.longjmp(env, val);
  __builtin_unreachable();
}

/* glibc keeps the link to the outer buffer in the first private word. */
#define PREV(b) ((b)->__pad[0])

static int ito_thread(void) { return ito_self() != 0; }

ITO_PT_EXPORT void __pthread_register_cancel(__pthread_unwind_buf_t *b) {
  ITO_PT_ENTER_VOID(__pthread_register_cancel, b);
  if (!ito_thread()) return ito__pt_real.__pthread_register_cancel(b);
  PREV(b) = ito__dropin_key_get(ito__pt_cleanup_key);
  ito__dropin_key_set(ito__pt_cleanup_key, b);
}

ITO_PT_EXPORT void __pthread_unregister_cancel(__pthread_unwind_buf_t *b) {
  ITO_PT_ENTER_VOID(__pthread_unregister_cancel, b);
  /* a buffer pushed before the thread became an ito thread (main, before
   * the runtime started) is in libc's chain */
  if (!ito_thread() || ito__dropin_key_get(ito__pt_cleanup_key) != b)
    return ito__pt_real.__pthread_unregister_cancel(b);
  ito__dropin_key_set(ito__pt_cleanup_key, PREV(b));
}

ITO_PT_HIDDEN void ito__pt_exit_thread(void *value) __attribute__((noreturn));

/* ---- the thread's exit: a forced unwind, as glibc's ----------------------------------------
 * pthread_exit (and a cancellation acted on) unwinds the thread's stack
 * with _Unwind_ForcedUnwind: C++ destructors run, a catch (...) sees it
 * and must rethrow, and the C cleanup buffers are run where their frames
 * are left (the stop function jumps into the macro's code, which runs the
 * handler and calls __pthread_unwind_next, which unwinds on). The unwind
 * stops where the thread's function was called from: a frame of the
 * runtime (libito.so), or the end of the stack (the main thread). */

struct exit_unwind {
  struct _Unwind_Exception exc; /* first */
  void *value;
};

static uintptr_t core_lo, core_hi; /* libito.so's code */

static int find_core(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t a = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (a >= lo && a < hi) {
      core_lo = lo;
      core_hi = hi;
      return 1;
    }
  }
  return 0;
}

/* A catch (...) that ended the unwind without rethrowing: as glibc. */
static void exit_caught(_Unwind_Reason_Code r, struct _Unwind_Exception *e) {
  (void)r, (void)e;
  static const char m[] =
      "ito-pthread: a thread's exit or cancellation was caught and not "
      "rethrown (a catch (...) must rethrow)\n";
  ito__pt_real.write(2, m, sizeof m - 1);
  abort();
}

/* Jumps to the innermost buffer left, or ends the thread. */
static void __attribute__((noreturn)) unwind_to(__pthread_unwind_buf_t *b, void *value) {
  if (b) {
    ito__dropin_key_set(ito__pt_cleanup_key, PREV(b));
    ito__pt_longjmp(b->__cancel_jmp_buf, 1);
  }
  ito__pt_exit_thread(value);
}

static _Unwind_Reason_Code exit_stop(int version, _Unwind_Action actions,
                                     _Unwind_Exception_Class cls, struct _Unwind_Exception *exc,
                                     struct _Unwind_Context *ctx, void *param) {
  (void)version, (void)cls, (void)exc;
  struct exit_unwind *x = param;
  uintptr_t ip = (actions & _UA_END_OF_STACK) ? 0 : _Unwind_GetIP(ctx);
  int end = (actions & _UA_END_OF_STACK) || (ip >= core_lo && ip < core_hi);
  uintptr_t cfa = end ? UINTPTR_MAX : _Unwind_GetCFA(ctx);
  __pthread_unwind_buf_t *b = ito__dropin_key_get(ito__pt_cleanup_key);
  /* a C cleanup buffer lies in the frame now left (above the callee's CFA) */
  if (b && (uintptr_t)b < cfa) unwind_to(b, x->value);
  if (end) ito__pt_exit_thread(x->value);
  return _URC_NO_REASON;
}

/* Unwinds from here; returns only if the unwinder cannot (no unwind
 * information): the C buffers then run by jumps alone. */
static void __attribute__((noreturn)) unwind_on(struct exit_unwind *x) {
  _Unwind_ForcedUnwind(&x->exc, exit_stop, x);
  unwind_to(ito__dropin_key_get(ito__pt_cleanup_key), x->value);
}

ITO_PT_EXPORT void __pthread_unwind_next(__pthread_unwind_buf_t *b) {
  if (UNLIKELY(ito__pt_state == 2) || !ito_thread()) ito__pt_real.__pthread_unwind_next(b);
  struct exit_unwind *x = ito__dropin_key_get(ito__pt_exit_key);
  if (!x) /* (a buffer jumped to by hand: nothing to unwind for) */
    unwind_to(ito__dropin_key_get(ito__pt_cleanup_key), NULL);
  unwind_on(x);
}

ITO_PT_HIDDEN void ito__pt_exit_cleanup(void *value) __attribute__((noreturn));
void ito__pt_exit_cleanup(void *value) {
  if (!__atomic_load_n(&core_hi, __ATOMIC_ACQUIRE))
    dl_iterate_phdr(find_core, (void *)(uintptr_t)&ito_create);
  struct exit_unwind *x = ito__dropin_key_get(ito__pt_exit_key);
  if (!x && !(x = calloc(1, sizeof *x))) unwind_to(ito__dropin_key_get(ito__pt_cleanup_key), value);
  memset(&x->exc, 0, sizeof x->exc);
  memcpy(&x->exc.exception_class, "ITO\0PTHR", sizeof x->exc.exception_class);
  x->exc.exception_cleanup = exit_caught;
  x->value = value;
  ito__dropin_key_set(ito__pt_exit_key, x); /* freed at the thread's end (the key's destructor) */
  unwind_on(x);
}
