// The spawn + sync loops of the six-systems study, section 5.1, shared by spawn_loop (one
// worker) and create_p (P workers at once). Include after spawn.hpp.
#ifndef BENCH_COMMON_CREATE_LOOP_HPP
#define BENCH_COMMON_CREATE_LOOP_HPP

__attribute__((noinline)) static void null_task() { __asm__ volatile(""); }

__attribute__((noinline)) static void count_task(long *c) {
  __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

// One group, `iters` times spawn + sync (the loop of section 5.1).
__attribute__((noinline)) static void create_many(long iters) {
  BENCH_TASK_GROUP(tg);
  for (long i = 0; i < iters; i++) {
    BENCH_SPAWN(tg, null_task());
    BENCH_SYNC(tg);
  }
}

// Same loop with a visible effect; returns the first iteration whose sync
// returned before its child had run, or -1.
__attribute__((noinline)) static long create_many_checked(long iters, long *counter) {
  long bad = -1;
  BENCH_TASK_GROUP(tg);
  for (long i = 0; i < iters; i++) {
    BENCH_SPAWN(tg, count_task(counter));
    BENCH_SYNC(tg);
    if (bad < 0 && __atomic_load_n(counter, __ATOMIC_RELAXED) != i + 1) bad = i;
  }
  return bad;
}

#endif
