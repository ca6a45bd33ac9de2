/* The context switch and what every switch carries (invariants at the top
 * of switch.h). */
#define _GNU_SOURCE
#include "switch.h"

#include "hooks.h"

#include "elfsym.h"

#include <errno.h>
#include <string.h>

/* ---- contexts ---------------------------------------------------------------------------- */

/* The layout matches ito__ctx_jump's saved context (src/arch/ctx_*.S). */
void *ito__ctx_make(char *hi, void (*entry)(void *)) {
  uintptr_t top = (uintptr_t)hi & ~(uintptr_t)15;
#if defined(__x86_64__)
  uint64_t *sp = (uint64_t *)(top - 80);
  memset(sp, 0, 80);
  sp[0] = 0x1F80ULL | (0x037FULL << 32); /* default mxcsr and x87 control word */
  sp[4] = (uint64_t)(uintptr_t)entry;    /* r12 */
  sp[7] = (uint64_t)(uintptr_t)ito__ctx_start;
#elif defined(__aarch64__)
  uint64_t *sp = (uint64_t *)(top - 176);
  memset(sp, 0, 176);
  sp[0] = (uint64_t)(uintptr_t)entry;           /* x19 */
  sp[11] = (uint64_t)(uintptr_t)ito__ctx_start; /* x30 */
#endif
  return sp;
}

/* ---- the thread's own state ------------------------------------------------------------------ */

static void *(*eh_get)(void);

void ito__set_eh(void *(*get_globals)(void)) { STORE_RLX(&eh_get, get_globals); }
void ito__find_eh(void) {
  if (!LOAD_RLX(&eh_get))
    ito__set_eh((void *(*)(void))ito__elf_sym(NULL, "__cxa_get_globals", NULL));
}

/* Not inlined: errno's address must be computed afresh on the OS thread
 * the caller now runs on (__errno_location is a const function, so a
 * compiler may reuse the address across a switch). */
__attribute__((noinline)) void ito__save_thread_state(struct ito__switch_save *s) {
  s->err = errno;
  s->eh_caught = NULL;
  s->eh_uncaught = 0;
  void *(*get)(void) = LOAD_RLX(&eh_get);
  if (get) {
    /* __cxa_eh_globals: the caught exceptions (a list through the
     * exceptions themselves) and the count of uncaught ones */
    char *g = get();
    memcpy(&s->eh_caught, g, sizeof(void *));
    memcpy(&s->eh_uncaught, g + sizeof(void *), sizeof(unsigned));
    memset(g, 0, sizeof(void *) + sizeof(unsigned));
  }
}

__attribute__((noinline)) void ito__restore_thread_state(const struct ito__switch_save *s) {
  void *(*get)(void) = LOAD_RLX(&eh_get);
  if (get) {
    char *g = get();
    memcpy(g, &s->eh_caught, sizeof(void *));
    memcpy(g + sizeof(void *), &s->eh_uncaught, sizeof(unsigned));
  }
  errno = s->err;
}

/* ---- switching ------------------------------------------------------------------------------- */

void ito__arrive(void) {
  worker *w = cur_worker();
  if (ASAN_ON) ito__asan_finish(NULL);
  ito__run_post(w);
}

void ito__switch(worker *w, fiber *from, fiber *to, int from_dying) {
  ITO_ASSERT(w == cur_worker() && to != from);
  w->cur = to;
  void *dummy;
  if (ASAN_ON)
    ito__asan_start(from_dying ? NULL : &from->asan_fake, to->lo, (size_t)(to->hi - to->lo));
  (void)from_dying;
  TSAN_TO(to);
  posix_enter(w, to);
  ito__ctx_jump(from ? &from->sp : &dummy, to->sp, to);
  if (ASAN_ON) ito__asan_finish(from->asan_fake);
  ito__run_post(cur_worker());
}

void ito__worker_stop(worker *w) {
  void *dummy, *sp = w->native_sp;
  w->native_sp = NULL;
  posix_enter(w, NULL);
  if (ASAN_ON) ito__asan_start(NULL, w->native_lo, w->native_size);
  TSAN_TO_CTX(w->native_tsan);
  ito__ctx_jump(&dummy, sp, NULL);
  __builtin_unreachable();
}

void ito__run_fiber(worker *w, fiber *f) {
  HOOK(ITO_EV_RUN, w->id, f, 0);
  w->cur = f;
  enter_fiber(f);
  if (!f->sp) { /* a continuation taken from a fork record, not started */
    ito__vg_resume_at(rec_sp(&f->start));
    ito__resume(&f->start, rec_sp(&f->start));
  }
  void *dummy;
  ito__ctx_jump(&dummy, f->sp, f);
  __builtin_unreachable();
}

void ito__enter_fresh(void **save_sp, void **fake, char *lo, char *hi, void (*entry)(void *),
                      void *arg, void *tsan_ctx) {
  void *sp = ito__ctx_make(hi, entry), *dummy;
  /* each entry starts afresh at the top; the frames of the last one never
   * returned, so their redzones are still poisoned */
  ito__asan_unpoison(lo, (size_t)(hi - lo));
  if (ASAN_ON) ito__asan_start(fake, lo, (size_t)(hi - lo));
  (void)fake;
  TSAN_TO_CTX(tsan_ctx);
  (void)tsan_ctx;
  ito__ctx_jump(save_sp ? save_sp : &dummy, sp, arg);
  if (ASAN_ON) ito__asan_finish(fake ? *fake : NULL);
}
