// Drop-in test: the C++ standard library's threads, on top of pthreads.
// std::thread, mutex, condition_variable (wait, and wait_for that times out),
// call_once, shared_mutex, this_thread::sleep_for and yield; and catch blocks
// that block on a contended mutex while other threads throw and catch.
//
// A plain pthread program (docs/dropin.md, section 8): it runs natively and
// under libito-pthread.so, and both.sh compares the outputs. The output is
// deterministic; a failed check prints a line on stderr and exits 1.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "cxx_threads: FAILED: %s\n", what);
  std::exit(1);
}

void check(bool ok, const char *what) {
  if (!ok) fail(what);
}

using steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---- std::thread and std::mutex
void mutex_test() {
  constexpr int kThreads = 8, kIncrements = 20000;
  std::mutex m;
  long counter = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++)
    threads.emplace_back([&] {
      for (int j = 0; j < kIncrements; j++) {
        std::lock_guard<std::mutex> g(m);
        counter++;
      }
    });
  for (auto &t : threads) t.join();
  check(counter == long(kThreads) * kIncrements, "std::mutex counter");
  std::printf("std::mutex: %d threads, counter %ld\n", kThreads, counter);
}

// ---- std::condition_variable: a ping-pong with wait, then wait_for timeouts
void condvar_test() {
  constexpr int kRounds = 10000;
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;  // 0: ping's turn, 1: pong's
  long pings = 0, pongs = 0;
  std::thread pong([&] {
    for (int i = 0; i < kRounds; i++) {
      std::unique_lock<std::mutex> lk(m);
      cv.wait(lk, [&] { return turn == 1; });
      pongs++;
      turn = 0;
      cv.notify_one();
    }
  });
  for (int i = 0; i < kRounds; i++) {
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return turn == 0; });
    pings++;
    turn = 1;
    cv.notify_one();
  }
  pong.join();
  check(pings == kRounds && pongs == kRounds, "condition_variable ping-pong counts");
  std::printf("std::condition_variable wait: %ld pings, %ld pongs\n", pings, pongs);

  // wait_for with a predicate that stays false: returns false, not early.
  {
    std::unique_lock<std::mutex> lk(m);
    auto t0 = steady::now();
    bool got = cv.wait_for(lk, milliseconds(50), [] { return false; });
    auto waited = steady::now() - t0;
    check(!got, "wait_for with a false predicate returned true");
    check(waited >= milliseconds(50), "wait_for (predicate) returned before its timeout");
    std::printf("std::condition_variable wait_for with a predicate: %s\n", got ? "true" : "false");
  }
  // wait_for without a predicate: cv_status::timeout (a spurious wake-up
  // waits again for the rest).
  {
    std::unique_lock<std::mutex> lk(m);
    auto t0 = steady::now();
    auto deadline = t0 + milliseconds(50);
    std::cv_status st;
    do st = cv.wait_for(lk, deadline - steady::now());
    while (st == std::cv_status::no_timeout);
    check(st == std::cv_status::timeout, "wait_for did not time out");
    check(steady::now() >= deadline, "wait_for returned before its timeout");
    std::printf("std::condition_variable wait_for: %s\n",
                st == std::cv_status::timeout ? "timeout" : "no_timeout");
  }
}

// ---- std::call_once from every thread
void call_once_test() {
  constexpr int kThreads = 8;
  std::once_flag flag;
  std::atomic<int> runs{0}, calls{0};
  int value = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++)
    threads.emplace_back([&] {
      std::call_once(flag, [&] {
        runs++;
        std::this_thread::sleep_for(milliseconds(10));  // the others wait for it
        value = 42;
      });
      check(value == 42, "call_once returned before the function finished");
      calls++;
    });
  for (auto &t : threads) t.join();
  check(runs == 1, "call_once ran its function more than once");
  std::printf("std::call_once: %d calls, the function ran %d time(s)\n", calls.load(), runs.load());
}

// ---- std::shared_mutex: readers and writers check exclusion
void shared_mutex_test() {
  constexpr int kReaders = 4, kWriters = 2, kReads = 20000, kWrites = 5000;
  std::shared_mutex sm;
  std::atomic<int> readers_in{0}, writers_in{0};
  std::atomic<long> reads{0}, writes{0};
  long a = 0, b = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < kReaders; i++)
    threads.emplace_back([&] {
      for (int j = 0; j < kReads; j++) {
        std::shared_lock<std::shared_mutex> lk(sm);
        readers_in++;
        check(writers_in == 0, "shared_mutex: a reader entered while a writer was in");
        long x = a;
        if (j % 64 == 0) std::this_thread::yield();
        check(x == b, "shared_mutex: a reader saw a write in progress");
        readers_in--;
        reads++;
      }
    });
  for (int i = 0; i < kWriters; i++)
    threads.emplace_back([&] {
      for (int j = 0; j < kWrites; j++) {
        std::unique_lock<std::shared_mutex> lk(sm);
        check(writers_in++ == 0, "shared_mutex: two writers were in at once");
        check(readers_in == 0, "shared_mutex: a writer entered while a reader was in");
        a++;
        if (j % 64 == 0) std::this_thread::yield();
        b++;
        writers_in--;
        writes++;
      }
    });
  for (auto &t : threads) t.join();
  check(reads == long(kReaders) * kReads && writes == long(kWriters) * kWrites && a == writes &&
            b == writes,
        "shared_mutex totals");
  std::printf("std::shared_mutex: %d readers %d writers: reads %ld writes %ld value %ld\n",
              kReaders, kWriters, reads.load(), writes.load(), a);
}

// ---- std::this_thread::sleep_for and yield
void sleep_yield_test() {
  constexpr int kSleepers = 8;
  std::atomic<int> slept{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSleepers; i++)
    threads.emplace_back([&] {
      auto t0 = steady::now();
      std::this_thread::sleep_for(milliseconds(20));
      check(steady::now() - t0 >= milliseconds(20), "sleep_for returned early");
      slept++;
    });
  for (auto &t : threads) t.join();
  std::printf("std::this_thread::sleep_for: %d threads slept at least 20 ms\n", slept.load());

  // Two threads take turns, each waiting for its turn with yield.
  constexpr int kTurns = 2000;
  std::atomic<int> turn{0};
  long passes[2] = {0, 0};
  auto player = [&](int me) {
    for (int i = 0; i < kTurns; i++) {
      while (turn.load() != me) std::this_thread::yield();
      passes[me]++;
      turn.store(1 - me);
    }
  };
  std::thread other(player, 1);
  player(0);
  other.join();
  std::printf("std::this_thread::yield: turns taken %ld and %ld\n", passes[0], passes[1]);
}

// ---- exceptions: catch blocks that block on a contended mutex
struct Thrown {
  int thread, iteration;
};
struct Inner {
  int thread, iteration;
};

void exception_test() {
  constexpr int kThreads = 8, kIterations = 2000;
  std::mutex m;
  long in_catch = 0;
  std::atomic<long> rethrown_ok{0}, inner_ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; i++) {
        try {
          try {
            throw Thrown{t, i};
          } catch (Thrown &e) {
            check(e.thread == t && e.iteration == i, "caught another thread's exception");
            check(std::uncaught_exceptions() == 0, "uncaught_exceptions() in a catch block");
            {
              std::lock_guard<std::mutex> g(m);  // contended: may block here
              in_catch++;
              if (i % 8 == 0) std::this_thread::yield();  // hold it a while
            }
            try {
              throw Inner{t, i};  // a second caught exception on top of the first
            } catch (Inner &inner) {
              std::lock_guard<std::mutex> g(m);
              check(inner.thread == t && inner.iteration == i,
                    "caught another thread's inner exception");
              inner_ok++;
            }
            check(std::current_exception() != nullptr, "no current exception in a catch block");
            throw;  // rethrows the exception this thread is handling
          }
        } catch (Thrown &again) {
          check(again.thread == t && again.iteration == i,
                "rethrow gave another thread's exception");
          rethrown_ok++;
        } catch (...) {
          fail("rethrow gave an exception of another type");
        }
      }
    });
  for (auto &th : threads) th.join();
  long want = long(kThreads) * kIterations;
  check(in_catch == want && rethrown_ok == want && inner_ok == want, "exception totals");
  std::printf(
      "exceptions: %d threads x %d: %ld catch blocks took the mutex, %ld inner, %ld rethrown "
      "intact\n",
      kThreads, kIterations, in_catch, inner_ok.load(), rethrown_ok.load());
}

}  // namespace

int main() {
  mutex_test();
  condvar_test();
  call_once_test();
  shared_mutex_test();
  sleep_yield_test();
  exception_test();
  return 0;
}
