// A program built with AddressSanitizer linked with a library built
// without it (the installed Release libito): the library annotates its
// stack switches for the program's runtime (docs/fibers.md,
// "Sanitizers"), so the program's checks see each lightweight thread's
// stack as a stack. Exceptions thrown in tasks of parallel_for cross
// stacks; threads that end with ito_exit leave frames (and their
// redzones) on stacks that later threads reuse. Any false report of
// AddressSanitizer fails the test (its exit status).
#include <ito/ito.h>
#include <ito/ito.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <stdexcept>

static std::atomic<long> sink{0};

static void touch(long i) {
  char buf[256];
  std::memset(buf, (int)(i & 0x7f), sizeof buf);
  sink += buf[i % 256];
}

extern "C" void *exiter(void *arg) {
  char frame[512];
  std::memset(frame, 1, sizeof frame);
  sink += frame[(long)arg % 512];
  ito_exit(arg);  // frames left on the stack, never returned through
}

extern "C" void *reuser(void *arg) {
  touch((long)arg);
  return arg;
}

int main() {
  int caught = 0;
  for (int round = 0; round < 20; round++) {
    try {
      ito::parallel_for(0L, 10000L, 16, [&](long i) {
        if (i == 5000 + round) throw std::runtime_error("boom");
        touch(i);
      });
    } catch (const std::runtime_error &) {
      caught++;
    }
  }
  if (caught != 20) {
    std::fprintf(stderr, "instrumented: %d exceptions caught of 20\n", caught);
    return 1;
  }
  for (int round = 0; round < 50; round++) {
    ito_thread_t t[16];
    void *(*fn)(void *) = round % 2 ? reuser : exiter;
    for (long i = 0; i < 16; i++)
      if (ito_create(fn, (void *)i, &t[i]) != 0) return 1;
    for (long i = 0; i < 16; i++) {
      void *r;
      if (ito_join(t[i], &r) != 0 || r != (void *)i) return 1;
    }
  }
  std::printf("instrumented: 20 exceptions across stacks, 800 threads on reused stacks: OK\n");
  return 0;
}
