/* The sanitizers' annotations of stack switches (san.h). */
#define _GNU_SOURCE
#include "san.h"

/* ---- sanitizer annotations ----------------------------------------------------------- */

#if ITO_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
void ito__san_setup(void) {}
void ito__asan_start(void **fake, const void *lo, size_t size) {
  __sanitizer_start_switch_fiber(fake, lo, size);
}
void ito__asan_finish(void *fake) { __sanitizer_finish_switch_fiber(fake, NULL, NULL); }
void ito__asan_unpoison(const void *lo, size_t size) { ASAN_UNPOISON_MEMORY_REGION(lo, size); }
#include <sanitizer/lsan_interface.h>
void ito__lsan_root(const void *lo, size_t size) { __lsan_register_root_region(lo, size); }
#else
/* The program's AddressSanitizer runtime, when it has one: its interface,
 * found by name (it is in the program, or in libasan.so before every other
 * object). */
#include "elfsym.h"
int ito__asan_dyn;
static struct {
  void (*start)(void **fake, const void *lo, size_t size);
  void (*finish)(void *fake, const void **lo, size_t *size);
  void (*unpoison)(const volatile void *lo, size_t size);
  void (*root)(const void *lo, size_t size);
} asan;

void ito__san_setup(void) {
  if (LOAD_ACQ(&ito__asan_dyn)) return;
  void *start = ito__elf_sym(NULL, "__sanitizer_start_switch_fiber", NULL);
  void *finish = ito__elf_sym(NULL, "__sanitizer_finish_switch_fiber", NULL);
  void *unpoison = ito__elf_sym(NULL, "__asan_unpoison_memory_region", NULL);
  if (!start || !finish || !unpoison || !ito__elf_sym(NULL, "__asan_init", NULL)) return;
  asan.start = (void (*)(void **, const void *, size_t))start;
  asan.finish = (void (*)(void *, const void **, size_t *))finish;
  asan.unpoison = (void (*)(const volatile void *, size_t))unpoison;
  asan.root =
      (void (*)(const void *, size_t))ito__elf_sym(NULL, "__lsan_register_root_region", NULL);
  STORE_REL(&ito__asan_dyn, 1);
}
void ito__asan_start(void **fake, const void *lo, size_t size) {
  if (asan.start) asan.start(fake, lo, size);
}
void ito__asan_finish(void *fake) {
  if (asan.finish) asan.finish(fake, NULL, NULL);
}
void ito__asan_unpoison(const void *lo, size_t size) {
  if (asan.unpoison) asan.unpoison(lo, size);
}
void ito__lsan_root(const void *lo, size_t size) {
  if (asan.root) asan.root(lo, size);
}
#endif

#if ITO_TSAN
#include <sanitizer/tsan_interface.h>
/* Contexts are costly to make (hundreds of microseconds) and
 * ThreadSanitizer allows about 8,000 at once, so a stack keeps its context
 * while it sits in a free list; the context is renewed only when a thread
 * left frames on the stack without returning through them (ito_exit),
 * since their entries would stay on the context's shadow call stack. */
void *ito__tsan_new_ctx(void) { return __tsan_create_fiber(0); }
void *ito__tsan_current(void) { return __tsan_get_current_fiber(); }
void ito__tsan_to_ctx(void *ctx) { __tsan_switch_to_fiber(ctx, 0); }
void ito__tsan_to(void **ctx) {
  if (!*ctx) *ctx = __tsan_create_fiber(0);
  __tsan_switch_to_fiber(*ctx, 0);
}
void ito__tsan_renew(void **ctx, int *dirty) {
  if (*dirty) {
    __tsan_destroy_fiber(*ctx);
    *ctx = NULL;
    *dirty = 0;
  }
}
#endif

/* ---- Valgrind ------------------------------------------------------------------------ */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>) && __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define ITO_HAVE_VALGRIND 1
#endif
#endif

#ifdef ITO_HAVE_VALGRIND
unsigned ito__vg_stack_register(const void *lo, const void *hi) {
  return VALGRIND_STACK_REGISTER(lo, hi);
}
void ito__vg_stack_deregister(unsigned id) { VALGRIND_STACK_DEREGISTER(id); }
void ito__vg_resume_at(void *sp) {
  if (RUNNING_ON_VALGRIND) (void)VALGRIND_MAKE_MEM_UNDEFINED((char *)sp - 4096, 4096);
}
void ito__vg_usable(void *lo, size_t size) {
  if (RUNNING_ON_VALGRIND) (void)VALGRIND_MAKE_MEM_UNDEFINED(lo, size);
}
#else
unsigned ito__vg_stack_register(const void *lo, const void *hi) {
  (void)lo, (void)hi;
  return 0;
}
void ito__vg_stack_deregister(unsigned id) { (void)id; }
void ito__vg_resume_at(void *sp) { (void)sp; }
void ito__vg_usable(void *lo, size_t size) { (void)lo, (void)size; }
#endif
