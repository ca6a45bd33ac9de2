/* The context switch and what every switch carries: the registers (the
 * assembly), errno and the C++ exception globals of the lightweight
 * thread, and the sanitizers' fiber annotations. Design: docs/fibers.md
 * ("Sanitizers"), docs/dropin.md section 5.
 *
 * Invariants:
 *  1. Every switch tells AddressSanitizer where it goes (start before,
 *     finish on arrival) and ThreadSanitizer which context runs next (just
 *     before).
 *  2. Work that must follow the switch (releasing the lock that publishes
 *     the fiber just left) is the target side's: post_fn, run on arrival
 *     by ito__run_post, after the leaving context is saved.
 *  3. A lightweight thread that parks keeps its errno and exception
 *     globals (ito__save_thread_state before, restore after); a fresh
 *     context starts with none. */
#ifndef ITO_CORE_SWITCH_H
#define ITO_CORE_SWITCH_H

#include "base.h"
#include "fiber.h"
#include "san.h"
#include "worker.h"

/* ---- the assembly (src/arch/ctx_*.S) ---------------------------------------------------- */
/* Saves the caller's context at *save_sp, resumes the one saved at to_sp,
 * where ito__ctx_jump returns arg. */
HIDDEN void *ito__ctx_jump(void **save_sp, void *to_sp, void *arg);
HIDDEN void ito__ctx_start(void);

/* A context at the top of [.., hi) that starts entry(arg) on its first
 * ito__ctx_jump (arg: the jump's); returns its stack pointer. */
HIDDEN void *ito__ctx_make(char *hi, void (*entry)(void *));

/* The process semantics the drop-ins turn on (posix_hooks.h): nonzero while
 * any is on; then every switch calls ito__posix_enter. */
extern int ito__posix_on HIDDEN;
/* What runs next on w, f (NULL: the scheduler), gets its thread pointer,
 * signal mask and CPU clock (posix.c). */
HIDDEN void ito__posix_enter(worker *w, fiber *f);
static inline void posix_enter(worker *w, fiber *f) {
  if (UNLIKELY(LOAD_RLX(&ito__posix_on))) ito__posix_enter(w, f);
}

/* Just before a switch: f's stack runs next, the current context is not
 * kept (a resumption or a first start): the sanitizers' annotations and
 * the thread pointer. */
static inline void enter_fiber(fiber *f) {
  if (ASAN_ON) ito__asan_start(NULL, f->lo, (size_t)(f->hi - f->lo));
  TSAN_TO(f);
  posix_enter(cur_worker(), f);
}

/* ---- the thread's own state across a switch (invariant 3) ------------------------------ */
struct ito__switch_save {
  int err;
  unsigned eh_uncaught;
  void *eh_caught;
};
/* Saving clears the exception globals for whatever runs next. */
HIDDEN void ito__save_thread_state(struct ito__switch_save *s);
HIDDEN void ito__restore_thread_state(const struct ito__switch_save *s);
/* The C++ runtime's __cxa_get_globals, if loaded (looked up at start; a
 * drop-in library hands it again after a dlopen). */
HIDDEN void ito__set_eh(void *(*get_globals)(void));
HIDDEN void ito__find_eh(void);

/* ---- switching ----------------------------------------------------------------------------- */
/* Runs the post function the last switch left (invariant 2). */
static inline void ito__run_post(worker *w) {
  void (*fn)(void *) = w->post_fn;
  if (fn) {
    w->post_fn = NULL;
    fn(w->post_arg);
  }
}
/* Direct switch between fibers on worker w; from's context is kept unless
 * from_dying. Returns when from is resumed. */
HIDDEN void ito__switch(worker *w, fiber *from, fiber *to, int from_dying);
/* Runs f on w: resumes its saved context, or starts it from its record
 * (a continuation not yet started). */
HIDDEN void ito__run_fiber(worker *w, fiber *f) __attribute__((noreturn));
/* A fresh context at the top of the stack [lo, hi) running entry(arg).
 * The caller's context is saved at *save_sp, and AddressSanitizer's fake
 * stack at *fake, unless they are NULL (the caller's context is then
 * gone). tsan_ctx: ThreadSanitizer's context of that stack. Returns when
 * the caller is resumed. */
HIDDEN void ito__enter_fresh(void **save_sp, void **fake, char *lo, char *hi, void (*entry)(void *),
                             void *arg, void *tsan_ctx);
/* The landing of ito__resume (the assembly) on its new stack. */
HIDDEN void ito__arrive(void);
/* The runtime stops: a worker's scheduler goes back to its OS thread's
 * own context (saved at native_sp when the worker started). */
HIDDEN void ito__worker_stop(worker *w) __attribute__((noreturn));

#endif
