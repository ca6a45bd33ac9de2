// Cancellation and pthread_exit in C++, as natively: the stack is unwound,
// so destructors run in every frame left, a catch (...) that rethrows
// sees it, and the value reaches pthread_join. Output is deterministic;
// both.sh compares it with the native run.
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <string>

static void say(const char *s) { std::printf("  %s\n", s), std::fflush(stdout); }

struct Guard {
  std::string name;
  explicit Guard(const char *n) : name(n) {}
  ~Guard() { say(("destructor: " + name).c_str()); }
};

static volatile int started;

static void nested_exit(int depth) {
  Guard g(depth == 0 ? "innermost" : "nested");
  if (depth == 0) pthread_exit(reinterpret_cast<void *>(42));
  if (depth > 0) nested_exit(depth - 1);
}

static void *exits(void *) {
  Guard g("thread frame");
  nested_exit(2);
  return nullptr;
}

static void *cancelled(void *) {
  Guard g("thread frame");
  try {
    Guard inner("inside try");
    started = 1;
    for (;;) sleep(100);
  } catch (...) {
    say("catch (...): rethrows");
    throw;
  }
  return nullptr;
}

int main() {
  pthread_t t;
  void *ret = nullptr;
  std::printf("pthread_exit from depth 2:\n");
  pthread_create(&t, nullptr, exits, nullptr);
  pthread_join(t, &ret);
  std::printf("joined: %ld\n", reinterpret_cast<long>(ret));
  std::printf("cancelled in sleep:\n");
  pthread_create(&t, nullptr, cancelled, nullptr);
  while (!started) usleep(1000);
  usleep(20000);
  pthread_cancel(t);
  pthread_join(t, &ret);
  std::printf("joined: %s\n", ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "other");
  return 0;
}
