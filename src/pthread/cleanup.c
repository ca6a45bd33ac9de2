/* pthread_cleanup_push/pop in C and pthread_exit (docs/dropin.md section
 * 6). glibc's macros keep a jump buffer per handler in the caller's frame
 * and link it into the OS thread's TCB; for an ito thread the shim keeps
 * that chain per lightweight thread instead (a thread may pop on another
 * OS thread than it pushed on). pthread_exit jumps to the innermost
 * buffer; the macro's code runs the handler and calls
 * __pthread_unwind_next, which jumps to the next one, and after the last
 * ends the thread. C++ destructors of the frames left are not run: there is
 * no forced unwind yet. */
#include "shim.h"

#include <stdlib.h>

/* libc's longjmp, taking the buffer untyped: a cleanup buffer is a jmp_buf
 * without the saved signal mask, which longjmp reads only when
 * __mask_was_saved is set (the macros save with a mask flag of 0). */
extern void shim_longjmp(void *env, int val) __asm__("longjmp") __attribute__((noreturn));

/* glibc keeps the link to the outer buffer in the first private word. */
#define PREV(b) ((b)->__pad[0])

static int ito_thread(void) { return ito_self() != 0; }

SHIM_EXPORT void __pthread_register_cancel(__pthread_unwind_buf_t *b) {
  SHIM_ENTER_VOID(__pthread_register_cancel, b);
  if (!ito_thread()) return shim_real.__pthread_register_cancel(b);
  PREV(b) = ito_getspecific(shim_cleanup_key);
  ito_setspecific(shim_cleanup_key, b);
}

SHIM_EXPORT void __pthread_unregister_cancel(__pthread_unwind_buf_t *b) {
  SHIM_ENTER_VOID(__pthread_unregister_cancel, b);
  /* a buffer pushed before the thread became an ito thread (main, before
   * the runtime started) is in libc's chain */
  if (!ito_thread() || ito_getspecific(shim_cleanup_key) != b)
    return shim_real.__pthread_unregister_cancel(b);
  ito_setspecific(shim_cleanup_key, PREV(b));
}

SHIM_HIDDEN void shim_exit_thread(void *value) __attribute__((noreturn));

/* Jumps to the innermost buffer left, or ends the thread. */
static void __attribute__((noreturn)) unwind_to(__pthread_unwind_buf_t *b) {
  if (b) {
    ito_setspecific(shim_cleanup_key, PREV(b));
    shim_longjmp(b->__cancel_jmp_buf, 1);
  }
  shim_exit_thread(ito_getspecific(shim_exit_key));
}

SHIM_EXPORT void __pthread_unwind_next(__pthread_unwind_buf_t *b) {
  if (UNLIKELY(shim_state == 2) || !ito_thread()) shim_real.__pthread_unwind_next(b);
  unwind_to(ito_getspecific(shim_cleanup_key));
}

SHIM_HIDDEN void shim_exit_cleanup(void *value) __attribute__((noreturn));
void shim_exit_cleanup(void *value) {
  ito_setspecific(shim_exit_key, value);
  unwind_to(ito_getspecific(shim_cleanup_key));
}
