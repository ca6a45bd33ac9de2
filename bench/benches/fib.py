"""fib: what one spawn and one sync per call cost a fine-grained recursion.

fib_<system> N REPS computes fib(N) with one spawn and one sync in every
call, and the plain serial fib compiled into the same binary, REPS times
each; it runs at each worker count (serial: the smallest). The report gives
the parallel time against the serial one (*ratio*), the speedup over 1
worker and the time against ito's; fib.png plots the ratio against the
worker count.
"""
import os

from harness import (Benchmark, Run, each_system, fmt, md_table, plot_link, plot_with,
                     ratio_summary, ratio_table, sys_order, with_others, worker_env,
                     workers_for)
from harness import plot

COLS = ["system", "workers", "n", "rep", "serial_s", "parallel_s", "ratio"]


class Fib(Benchmark):
    names = ["fib"]
    columns = COLS

    def plan(self, args):
        runs, skipped = [], []
        for s, b in each_system(args.bindir, "fib", skipped):
            for w in workers_for(args, s):
                runs.append(Run("fib", f"fib {s} workers={w}",
                                [b, str(args.fib_n), str(args.reps)], worker_env(w), COLS,
                                args.reps))
        return runs, skipped

    def section(self, ctx):
        rep = ["## fib\n"]
        s = ratio_summary(ctx.results["fib"], lambda g: {"n": int(g[0]["n"])})
        if not s:
            rep.append("No fib results.\n")
            return with_others(ctx.runner, "fib", rep)
        n = next(iter(s.values()))["n"]
        rep.append(f"fib({n}) with one spawn and one sync per call; times are medians over "
                   "the repetitions. *ratio* is the parallel "
                   "time divided by the time of the plain serial fib compiled into the same "
                   "binary (median and min-max over the repetitions). *speedup* is the median "
                   "parallel time at 1 worker divided by that at this worker count. *vs ito* is "
                   "the median parallel time divided by ito's (task_group) at the same worker "
                   "count.\n")
        rep.append(ratio_table(s))
        rep.append("")
        if any(w == 2 for _, w in s) and any(w == 1 for _, w in s):
            rep.append("Speedup from 1 to 2 workers (median parallel time at 1 / at 2):\n")
            sp = []
            for sysname in sorted({k[0] for k in s}, key=sys_order):
                a, b = s.get((sysname, 1)), s.get((sysname, 2))
                if a and b and b["par_med"] > 0:
                    sp.append([sysname, fmt(a["par_med"] / b["par_med"])])
            rep.append(md_table(["system", "speedup 2 vs 1"], sp))
            rep.append("")
        points = [{"system": sy, "workers": w, "med": v["ratio_med"], "min": v["ratio_min"],
                   "max": v["ratio_max"], "n": v["n"]} for (sy, w), v in s.items()]
        drawn = plot_with(points, os.path.join(ctx.out, "fib.png"), draw_plot)
        rep.append(plot_link(drawn, "fib.png", "fib: time relative to serial vs workers"))
        return with_others(ctx.runner, "fib", rep)


def draw_plot(points, path):
    return plot.draw_errorbars(points, path, "workers",
                               "time relative to serial fib (median, min-max)",
                               f"fib({points[0]['n']}), one spawn and one sync per call")


BENCH = Fib()
