/* Counting live threads (src/core/thread.h, invariant 4), white box: the
 * count ito_finalize waits on is taken while a thread is created on one
 * worker and another ends on a second one. The interleaving is forced:
 * worker 1's counters sit on a page that is made unreadable, and the first
 * read of it faults into a handler that plays the two events, then lets
 * the read go on.
 *
 * The situation: thread T (created on worker 1) creates T2 on worker 0
 * and then ends on worker 1, exactly while the count has read worker 0
 * and not yet worker 1. Summing each worker's created-minus-ended in one
 * pass would then read 0 (worker 0 before T2's creation, worker 1 after
 * T's end) while T2 runs; reading every ended counter before any created
 * one cannot. */
#define _GNU_SOURCE
#include "../../src/core/sched.h"
#include "../../src/core/thread.h"
#include "../../src/core/monitor.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../check.h"

static worker *fake[2];
static int injected;

static void on_fault(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)uc;
  char *page = (char *)((uintptr_t)si->si_addr & ~(uintptr_t)4095);
  if (injected || page != (char *)((uintptr_t)&fake[1]->ended & ~(uintptr_t)4095)) abort();
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
  fake[0]->created++; /* T creates T2 on worker 0, already read */
  fake[1]->ended++;   /* T ends on worker 1, not yet read */
  injected = 1;
}

int main(void) {
  for (int i = 0; i < 2; i++) {
    fake[i] = mmap(NULL, sizeof(worker) + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    CHECK(fake[i] != MAP_FAILED);
  }
  ito__workers = fake;
  ito__nworkers = 2;
  ito__nslots = 2;
  ito__slots_counted = 2; /* (the counts sum every slot ever used) */
  fake[1]->created = 1;   /* T, alive */
  CHECK_EQ(ito__live_threads(), 1);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  CHECK_EQ(sigaction(SIGSEGV, &sa, NULL), 0);
  CHECK_EQ(mprotect((void *)((uintptr_t)&fake[1]->ended & ~(uintptr_t)4095), 4096, PROT_NONE), 0);
  long live = ito__live_threads();
  CHECK(injected);
  printf("count: T2 created on a worker already read, T ended on one not yet read: %ld alive\n",
         live);
  CHECK_EQ(live, 1); /* T2 */
  CHECK_EQ(ito__live_threads(), 1);
  puts("test_count: OK");
  return 0;
}
