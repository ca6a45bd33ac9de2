/* Fiber stacks (src/core/fiber.c), white box:
 *  - on a kernel with guard regions (Linux 6.13 and later), every pool
 *    stack gets a guard page, beyond the budget the mapping limit gives
 *    the older scheme, and the process's mappings do not grow with them;
 *    the guard is real (the kernel refuses to copy from it);
 *  - a stack larger than the pool's is mapped at the size asked for, with
 *    a guard, and reused for a request of the same size;
 *  - the caller's memory of PTHREAD_STACK_MIN (16 KiB) is accepted;
 *  - free stacks beyond ITO_STACK_CACHE give their pages back: the
 *    resident set falls when touched stacks are freed beyond the bound. */
#define _GNU_SOURCE
#include "../../src/core/config.h"
#include "../../src/core/fiber.h"
#include "../../src/core/handle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../check.h"

#define PAGE 4096UL

static long mappings(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  CHECK(f != NULL);
  long n = 0;
  int c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

static long resident_pages(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  CHECK(f != NULL);
  long size = 0, rss = 0;
  CHECK(fscanf(f, "%ld %ld", &size, &rss) == 2);
  fclose(f);
  return rss;
}

/* Does the kernel refuse to read the page at p (a guard)? */
static int guarded_page(int wfd, const char *p) {
  long r = write(wfd, p, 1);
  return r < 0 && errno == EFAULT;
}

int main(void) {
  int fds[2];
  CHECK(pipe2(fds, O_NONBLOCK) == 0);
  /* the kernel must have guard regions for the first part */
  char *probe = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(probe != MAP_FAILED);
  int regions =
      madvise(probe, PAGE, 102 /* MADV_GUARD_INSTALL */) == 0 && guarded_page(fds[1], probe);
  munmap(probe, 2 * PAGE);

  ito__fiber_setup(16UL << 10, GUARD_AUTO, 8UL << 20);
  int checks = 0;
  if (regions) {
    /* more stacks than the splitting scheme's budget at the default limit */
    enum { N = 32768 };
    long before = mappings();
    fiber **fs = malloc(N * sizeof *fs);
    CHECK(fs != NULL);
    for (int i = 0; i < N; i++) {
      fs[i] = ito__fiber_alloc(NULL);
      CHECK(fs[i] != NULL);
      CHECK(fs[i]->guarded);
    }
    long after = mappings();
    CHECK(guarded_page(fds[1], fs[0]->lo - PAGE));
    CHECK(guarded_page(fds[1], fs[N - 1]->lo - PAGE));
    CHECK(!guarded_page(fds[1], fs[N - 1]->lo));
    /* 32768 stacks of 20 KiB are 512 batches of 64: one mapping each
     * (ThreadSanitizer maps shadow memory beside each) */
#if !defined(__SANITIZE_THREAD__)
    CHECK(after - before < 1000);
#else
    (void)before, (void)after;
#endif
    for (int i = 0; i < N; i++) ito__fiber_free(NULL, fs[i]);
    free(fs);
    checks += 4;
  } else {
    printf("unit_fiber: this kernel has no guard regions (Linux 6.13): guard checks not run\n");
  }

  /* own stacks: the size asked for with the header inside it, a guard
   * right below it, reuse of exactly that size only */
  fiber *big = ito__own_fiber(8UL << 20);
  CHECK(big != NULL);
  CHECK((size_t)(big->hi - big->lo) <= 8UL << 20);
  CHECK((size_t)(big->hi - big->lo) >= (8UL << 20) - 1024);
  CHECK((char *)big + sizeof *big <= big->lo + (8UL << 20));
  CHECK(big->guarded);
  CHECK(guarded_page(fds[1], big->lo - PAGE));
  ito__fiber_free(NULL, big);
  fiber *again = ito__own_fiber(8UL << 20);
  CHECK(again == big);
  ito__fiber_free(NULL, again);
  fiber *small = ito__own_fiber(20480);
  CHECK(small != NULL && (size_t)(small->hi - small->lo) <= 20480);
  ito__fiber_free(NULL, small);
  fiber *smaller = ito__own_fiber(16384); /* not the larger one just freed */
  CHECK(smaller != NULL && smaller != small && (size_t)(smaller->hi - smaller->lo) <= 16384);
  CHECK(guarded_page(fds[1], smaller->lo - PAGE));
  ito__fiber_free(NULL, smaller);
  checks += 10;

  /* the caller's memory: PTHREAD_STACK_MIN is enough, less is not */
  void *mem = aligned_alloc(PAGE, 16384);
  CHECK(mem != NULL);
  fiber *u = ito__user_fiber(mem, 16384);
  CHECK(u != NULL);
  CHECK(u->lo == mem && (char *)u + sizeof *u <= (char *)mem + 16384);
  CHECK(ito__user_fiber(mem, 16383) == NULL);
  ito__handle_unregister(&u->th); /* the memory is the caller's again */
  free(mem);
  checks += 3;

  /* the resident bound: 64 own stacks of 1 MiB, each touched in full, are
   * freed with a bound of 8 MiB: at most 8 of them keep their pages */
  enum { M = 64 };
  fiber *own[M];
  for (int i = 0; i < M; i++) {
    own[i] = ito__own_fiber(1UL << 20);
    CHECK(own[i] != NULL);
    memset(own[i]->lo, 1, (size_t)(own[i]->hi - own[i]->lo));
  }
  long touched = resident_pages();
  for (int i = 0; i < M; i++) ito__fiber_free(NULL, own[i]);
  long freed = resident_pages();
  /* 56 MiB or more went back (14336 pages); allow for the process's noise */
  if (touched - freed < 13000) {
    fprintf(stderr, "resident pages: %ld with the stacks touched, %ld after freeing them\n",
            touched, freed);
    CHECK(touched - freed >= 13000);
  }
  /* and a stack taken again is usable (the pages come back as zero) */
  fiber *back = ito__own_fiber(1UL << 20);
  CHECK(back != NULL);
  memset(back->lo, 2, (size_t)(back->hi - back->lo));
  ito__fiber_free(NULL, back);
  checks += 2;
  printf("unit_fiber: %d checks%s: PASS\n", checks, regions ? ", guard regions included" : "");
  return 0;
}
