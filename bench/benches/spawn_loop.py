"""spawn_loop: the cost of one spawn and one sync on a single worker.

spawn_loop_<system> ITERS MEAS DROP times `for ITERS times: spawn(null_task);
sync;` as one measurement, MEAS measurements of which the first DROP are
dropped, with 1 worker; the task-creation microbenchmark of Taura and
Nakashima, 'A Comparative Study of Six Task Parallel Programming Systems',
sections 5.1-5.2 (docs/references.md). Reported in nanoseconds and in clocks
of the processor's counter per iteration.
"""
import statistics

from harness import (Benchmark, Run, by_system, each_system, fmt, group_rows, md_table,
                     meta_fields, with_others, worker_env)

ITERS, MEAS, DROP = 1000, 31, 5
COLS = ["system", "workers", "measurement", "ns_per_iter", "clocks_per_iter"]


class SpawnLoop(Benchmark):
    names = ["spawn_loop"]
    columns = COLS

    def plan(self, args):
        runs, skipped = [], []
        for s, b in each_system(args.bindir, "spawn_loop", skipped):
            runs.append(Run("spawn_loop", f"spawn_loop {s} workers=1",
                            [b, str(ITERS), str(MEAS), str(DROP)], worker_env(1), COLS,
                            MEAS - DROP))
        return runs, skipped

    def section(self, ctx):
        rep = ["## spawn loop\n"]
        clock = {}
        for m in ctx.runner.meta.get("spawn_loop", []):
            kv = meta_fields(m)
            if "clock" in kv and "ghz" in kv:
                clock.setdefault(kv["clock"], []).append(float(kv["ghz"]))
        clock_txt = ", ".join(f"`{c}` at {fmt(statistics.median(g), 4)} GHz (measured against "
                              "CLOCK_MONOTONIC)" for c, g in clock.items()) or "not reported"
        rep.append(f"`for {ITERS} times: spawn(null_task); sync;` timed as one measurement, "
                   f"{MEAS} measurements, the first {DROP} dropped (Taura and Nakashima, "
                   "'A Comparative Study of Six Task Parallel Programming Systems', sections "
                   "5.1-5.2, docs/references.md). "
                   "Nanoseconds and clocks per iteration (one spawn + one sync), median (min, "
                   "max) over the measurements; *vs ito* is the median divided by ito's "
                   f"(task_group) in this run. Clocks are the processor's counter: {clock_txt}.\n")
        groups = group_rows(ctx.results["spawn_loop"],
                            lambda r: (float(r["ns_per_iter"]), float(r["clocks_per_iter"])))
        ito = groups.get(("ito", 1))
        ito_med = statistics.median(x[0] for x in ito) if ito else None
        table = []
        for (sysname, w) in by_system(groups):
            v = [x[0] for x in groups[(sysname, w)]]
            c = [x[1] for x in groups[(sysname, w)]]
            med = statistics.median(v)
            table.append([sysname, w, len(v), fmt(med), fmt(min(v)), fmt(max(v)),
                          fmt(statistics.median(c)), f"{fmt(min(c))} - {fmt(max(c))}",
                          fmt(med / ito_med) if ito_med else "n/a"])
        rep.append(md_table(["system", "workers", "measurements", "median ns", "min ns", "max ns",
                             "median clocks", "clocks min - max", "vs ito"], table))
        rep.append("")
        return with_others(ctx.runner, "spawn_loop", rep)


BENCH = SpawnLoop()
