/* The sanitizers' annotations of stack switches: AddressSanitizer's fake
 * stacks and poisoning, ThreadSanitizer's per-stack contexts. Empty
 * without a sanitizer. Every switch carries them (switch.h, invariant 1);
 * fibers renew and unpoison their stacks with them. Design:
 * docs/fibers.md, "Sanitizers". */
#ifndef ITO_CORE_SAN_H
#define ITO_CORE_SAN_H

#include "base.h"

/* ---- sanitizer annotations ------------------------------------------------------------- */
/* ASAN_ON: annotate this switch. Always in a build with AddressSanitizer;
 * in any other build, when the program carries it (its runtime is loaded:
 * a program built with -fsanitize=address linked with this library), so
 * that its checks see each stack as a stack. ito__san_setup looks for the
 * runtime, at the first start, before any switch. */
#if ITO_ASAN
#define ASAN_ON 1
#else
extern int ito__asan_dyn HIDDEN;
#define ASAN_ON UNLIKELY(LOAD_RLX(&ito__asan_dyn))
#endif
HIDDEN void ito__san_setup(void);
HIDDEN void ito__asan_start(void **fake, const void *lo, size_t size);
HIDDEN void ito__asan_finish(void *fake);
/* Frames that never returned left their redzones poisoned. */
HIDDEN void ito__asan_unpoison(const void *lo, size_t size);
/* LeakSanitizer: [lo, lo + size) (a fiber's header, in memory it does not
 * scan) holds pointers to the heap that count as references (a thread's
 * key values, between its end and its release, at exit). For ever. */
HIDDEN void ito__lsan_root(const void *lo, size_t size);
/* Valgrind: a stack registered with it (a client request, a few
 * instructions outside Valgrind; nothing where valgrind.h is missing), so
 * that memcheck sees a switch between two stacks as a switch, not as one
 * frame's allocation (stacks of one mapping lie closer than its
 * --max-stackframe). Returns the id to deregister with. */
HIDDEN unsigned ito__vg_stack_register(const void *lo, const void *hi);
HIDDEN void ito__vg_stack_deregister(unsigned id);
/* A continuation is resumed at stack pointer sp of a stack that another
 * thread last ran on (ito__resume): the dead frames below sp, where the
 * resume pushes and calls, are usable memory to memcheck again. */
HIDDEN void ito__vg_resume_at(void *sp);
/* [lo, lo + size) of a stack that is not running is written before the
 * stack runs (a continuation's start on a fresh stack): usable memory to
 * memcheck, whatever frames died there before. */
HIDDEN void ito__vg_usable(void *lo, size_t size);
#if ITO_TSAN
/* Switches to the context in *ctx, made first if it is NULL (a stack's,
 * kept with the stack). */
HIDDEN void ito__tsan_to(void **ctx);
HIDDEN void ito__tsan_to_ctx(void *ctx);
HIDDEN void *ito__tsan_new_ctx(void);
HIDDEN void *ito__tsan_current(void);
/* A stack whose frames were abandoned (*dirty) gets a fresh context. */
HIDDEN void ito__tsan_renew(void **ctx, int *dirty);
#define TSAN_TO(f) ito__tsan_to(&(f)->tsan)
#define TSAN_TO_CTX(c) ito__tsan_to_ctx(c)
#else
#define TSAN_TO(f) ((void)(f))
#define TSAN_TO_CTX(c) ((void)0) /* c names fields that exist only under ITO_TSAN */
#endif
#endif
