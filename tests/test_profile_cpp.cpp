// The profiler's C++ form (ito::profile, docs/profile.md): a region with
// its scope, the figures back, errors as exceptions. With ITO_PROFILE set
// (tests/profile/check.sh) a fan of 8 task_group children shows a
// parallelism near 8; without it, get() throws and region does nothing.
#include <ito/ito.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "check.h"

static std::atomic<std::uint64_t> sink{0};

static void consume() {
  std::uint64_t x = 0x2545F4914F6CDD1Dull;
  for (long i = 0; i < 1000000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x));
  }
  sink += x;
}

int main() {
  bool on = std::getenv("ITO_PROFILE") && std::getenv("ITO_PROFILE")[0] != '0';
  CHECK_EQ(ito_init(), 0);
  {
    ito::profile::region r("fan");
    ito::task_group tg;
    for (int i = 0; i < 8; i++) tg.run([] { consume(); });
    tg.wait();
  }
  bool threw = false;
  try {
    ito::profile::region bad("");
  } catch (const std::invalid_argument &) {
    threw = true;
  }
  CHECK(threw);
  if (on) {
    ito_profile f = ito::profile::get("fan");
    std::printf("fan: parallelism %.2f, span %.6f s, work %.6f s, elapsed %.6f s, "
                "descheduled %.6f s, %llu spawns\n",
                f.parallelism, f.span, f.work, f.elapsed, f.descheduled, f.spawns);
    std::fflush(stdout);
    CHECK_EQ(f.spawns, 8u);
#if !defined(__SANITIZE_THREAD__)
    // under an emulator (PROFILE_EMULATOR, set by tests/profile/check.sh
    // for a cross build) the runtime's code between a fork's events runs
    // far slower against the program's than on the machine: a looser shape
    if (std::getenv("PROFILE_EMULATOR") && std::getenv("PROFILE_EMULATOR")[0])
      CHECK(f.parallelism > 2 && f.parallelism < 10);
    else
      CHECK(f.parallelism > 6 && f.parallelism < 10);
#else
    // every child is a thread of its own there, whose set-up by the
    // sanitizer lies on the path (tests/test_profile.c, the tree)
    CHECK(f.parallelism > 2 && f.parallelism < 10);
#endif
    threw = false;
    try {
      ito::profile::get("never");
    } catch (const std::out_of_range &) {
      threw = true;
    }
    CHECK(threw);
  } else {
    threw = false;
    try {
      ito::profile::get();
    } catch (const std::runtime_error &) {
      threw = true;
    }
    CHECK(threw);
  }
  CHECK_EQ(ito_finalize(), 0);
  std::puts("test_profile_cpp: OK");
  return 0;
}
