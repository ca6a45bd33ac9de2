"""create_p: task creation on P workers at once.

create_p_<system> ITERS MEAS DROP: the root spawns P tasks (P = workers)
that meet at a spin barrier and then each run `for ITERS times:
spawn(null_task); sync;` as one measurement; at each worker count (serial:
1). It shows whether creating tasks on one worker slows the others down
(shared queues, locks, allocation). Taura and Nakashima, 'A Comparative
Study of Six Task Parallel Programming Systems', section 5.3 and figure 2
(docs/references.md); create_p.png is that figure for this run.
"""
import os
import statistics

from harness import (Benchmark, Run, by_system, each_system, fmt, group_rows, md_table,
                     plot_link, plot_with, with_others, worker_env)
from harness import plot

COLS = ["system", "workers", "measurement", "ns_per_iter"]
# (iters, measurements, dropped): default and --quick
ARGS = {False: (1000, 31, 5), True: (100, 4, 1)}


class CreateP(Benchmark):
    names = ["create_p"]
    columns = COLS

    def plan(self, args):
        it, meas, drop = ARGS[args.quick]
        runs, skipped = [], []
        for s, b in each_system(args.bindir, "create_p", skipped):
            for w in ([1] if s == "serial" else args.workers):
                runs.append(Run("create_p", f"create_p {s} workers={w}",
                                [b, str(it), str(meas), str(drop)], worker_env(w), COLS,
                                meas - drop))
        return runs, skipped

    def section(self, ctx):
        it, meas, drop = ARGS[ctx.args.quick]
        rep = ["## create_p: task creation on P workers at once\n"]
        rep.append("Taura and Nakashima, 'A Comparative Study of Six Task Parallel Programming "
                   "Systems', section 5.3 (docs/references.md): the root spawns P tasks "
                   "(P = workers) that meet at a spin barrier "
                   f"and then each run `for {it} times: spawn(null_task); sync;` as one measurement "
                   f"(a barrier before each), {meas} measurements, the first {drop} dropped. "
                   "ns per iteration is the mean over the P tasks of each task's own time per "
                   "iteration; the table gives its median (min, max) over the measurements, "
                   "*vs 1 worker* the median divided by this system's median at 1 worker, and "
                   "*vs ito* the median divided by ito's (task_group) median at the same worker "
                   "count in this run. The plot is the paper's figure 2: time per task vs "
                   "workers, log scale.\n")
        groups = group_rows(ctx.results["create_p"], lambda r: float(r["ns_per_iter"]))
        if not groups:
            return with_others(ctx.runner, "create_p",
                               rep + ["No create_p results (see Failures).\n"])
        table, points = [], []
        for (sysname, w) in by_system(groups):
            v = groups[(sysname, w)]
            med = statistics.median(v)
            one = groups.get((sysname, 1))
            ito = groups.get(("ito", w))
            table.append([sysname, w, len(v), fmt(med), fmt(min(v)), fmt(max(v)),
                          fmt(med / statistics.median(one)) if one else "n/a",
                          fmt(med / statistics.median(ito)) if ito else "n/a"])
            points.append({"system": sysname, "workers": w, "med": med, "min": min(v),
                           "max": max(v), "iters": it})
        rep.append(md_table(["system", "workers", "measurements", "median ns/iter", "min",
                             "max", "vs 1 worker", "vs ito"], table))
        rep.append("")
        if len({w for _, w in groups}) < 2:
            rep.append("(No plot: one worker count only.)\n")
        else:
            drawn = plot_with(points, os.path.join(ctx.out, "create_p.png"), draw_plot)
            rep.append(plot_link(drawn, "create_p.png", "create_p: ns per task vs workers"))
        return with_others(ctx.runner, "create_p", rep)


def draw_plot(points, path):
    return plot.draw_errorbars(
        points, path, "workers (P tasks creating at once)",
        "ns per spawn+sync per worker (median, min-max)",
        "create_p: time per task on P workers at once (Taura and Nakashima, 5.3, figure 2)",
        fontsize="medium")


BENCH = CreateP()
