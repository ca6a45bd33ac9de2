/* Symbol lookup without dlsym (src/core/elfsym.c), white box: for libc's
 * functions, versioned ones included, and for names nobody defines, the
 * lookup gives what the dynamic linker's dlsym and dlvsym give. */
#define _GNU_SOURCE
#include "../../src/core/elfsym.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "../check.h"

static const char *const names[] = {
    "pthread_create",
    "pthread_join",
    "pthread_mutex_lock",
    "pthread_cond_wait",
    "read",
    "write",
    "syscall",
    "sigaction",
    "epoll_wait",
    "sched_yield",
    "nanosleep",
    "clock_nanosleep",
    "memcpy",
    "strlen",
    "gettimeofday",
    "environ",
    "dlsym",
    "__cxa_finalize",
};

int main(void) {
  int n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *want = dlsym(RTLD_DEFAULT, names[i]);
    void *got = ito__elf_sym(NULL, names[i], NULL);
    if (got != want) {
      fprintf(stderr, "%s: elfsym %p, dlsym %p\n", names[i], got, want);
      CHECK(got == want);
    }
    CHECK(got != NULL);
    /* after this program: libc's definitions, as RTLD_NEXT from here */
    void *next = ito__elf_sym((const void *)&main, names[i], NULL);
    void *want_next = dlsym(RTLD_NEXT, names[i]);
    if (next != want_next) {
      fprintf(stderr, "%s: elfsym after the program %p, RTLD_NEXT %p\n", names[i], next, want_next);
      CHECK(next == want_next);
    }
    n++;
  }
#if defined(__x86_64__)
  /* a symbol in two versions: the one asked for, and the default */
  void *old = ito__elf_sym(NULL, "pthread_cond_wait", "GLIBC_2.2.5");
  void *cur = ito__elf_sym(NULL, "pthread_cond_wait", "GLIBC_2.3.2");
  CHECK(old != NULL && cur != NULL && old != cur);
  CHECK(old == dlvsym(RTLD_DEFAULT, "pthread_cond_wait", "GLIBC_2.2.5"));
  CHECK(cur == dlvsym(RTLD_DEFAULT, "pthread_cond_wait", "GLIBC_2.3.2"));
  n += 3;
#endif
  CHECK(ito__elf_sym(NULL, "pthread_cond_wait", "NO_SUCH_VERSION") == NULL);
  CHECK(ito__elf_sym(NULL, "ito_no_such_function_anywhere", NULL) == NULL);
  printf("unit_elfsym: %d lookups agree with the dynamic linker: PASS\n", n + 2);
  return 0;
}
