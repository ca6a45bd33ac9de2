"""spreading: how fast tasks reach all P workers.

spreading_<system> TRIALS LEAVES BUSY_US, at the largest worker count P: a
binary tree of spawns with P leaves; each leaf records its start time
relative to the root's start and busy-waits BUSY_US, so that the leaves must
spread over the workers. serial runs the same P leaves one after another:
the no-spreading baseline. Taura and Nakashima, 'A Comparative Study of Six
Task Parallel Programming Systems', section 5.4.2 and figure 5
(docs/references.md); spreading.png is that figure for this run.
"""
import os
import statistics

from harness import (Benchmark, Run, by_system, each_system, fmt, md_table, plot_link,
                     plot_with, sys_color, sys_order, with_others, worker_env)
from harness import plot

COLS = ["system", "workers", "trial", "leaf", "start_us"]
# (trials, busy_us): default and --quick
ARGS = {False: (30, 1000), True: (3, 200)}


class Spreading(Benchmark):
    names = ["spreading"]
    columns = COLS

    def plan(self, args):
        trials, busy = ARGS[args.quick]
        w = max(args.workers)
        runs, skipped = [], []
        for s, b in each_system(args.bindir, "spreading", skipped):
            # serial runs the same w leaves one after another: the baseline
            runs.append(Run("spreading", f"spreading {s} workers={w}",
                            [b, str(trials), str(w), str(busy)], worker_env(w), COLS,
                            trials * w))
        return runs, skipped

    def section(self, ctx):
        trials, busy = ARGS[ctx.args.quick]
        rep = ["## spreading: tasks reaching P workers\n"]
        rep.append("Taura and Nakashima, 'A Comparative Study of Six Task Parallel Programming "
                   "Systems', section 5.4.2 (docs/references.md): a binary tree of spawns with "
                   "P leaves (P = workers); each leaf "
                   f"records its start time relative to the root's start and busy-waits {busy} us, "
                   f"so the leaves must spread over the workers. {trials} trials. *last leaf* is the "
                   "time until the last leaf started (median, min, max over the trials); *median "
                   "leaf* the median over all leaves and trials; *vs ito* the *last leaf* median "
                   "divided by ito's (task_group) in this run. serial runs the same P leaves one "
                   f"after another (about (P-1) x {busy} us): the no-spreading baseline.\n")
        per = {}
        for r in ctx.results["spreading"]:
            per.setdefault((r["system"], int(r["workers"])), {}).setdefault(
                int(r["trial"]), []).append(float(r["start_us"]))
        if not per:
            return with_others(ctx.runner, "spreading",
                               rep + ["No spreading results (see Failures).\n"])
        ito = [k for k in per if k[0] == "ito"]
        ito_last = statistics.median(max(v) for v in per[ito[0]].values()) if ito else None
        table, points = [], []
        for (sysname, w) in by_system(per):
            tr = per[(sysname, w)]
            last = [max(v) for v in tr.values()]
            allv = [x for v in tr.values() for x in v]
            table.append([sysname, w, len(next(iter(tr.values()))), len(tr),
                          fmt(statistics.median(last)), fmt(min(last)), fmt(max(last)),
                          fmt(statistics.median(allv)),
                          fmt(statistics.median(last) / ito_last) if ito_last else "n/a"])
            # the paper's figure 5 overlays 20 of its 30 trials: the first 10 are left out
            keep = sorted(tr)[10:] if len(tr) > 10 else sorted(tr)
            points.append({"system": sysname, "workers": w, "busy": busy,
                           "dropped": len(tr) - len(keep),
                           "trials": [sorted(tr[t]) for t in keep]})
        rep.append(md_table(["system", "workers", "leaves", "trials", "last leaf us (median)",
                             "min", "max", "median leaf us", "vs ito"], table))
        rep.append("")
        drawn = plot_with(points, os.path.join(ctx.out, "spreading.png"), draw_plot)
        rep.append(plot_link(drawn, "spreading.png",
                             "spreading: sorted leaf start times per trial, one panel per system"))
        return with_others(ctx.runner, "spreading", rep)


def draw_plot(points, path):
    """The paper's figure 5: per system, each trial's leaf start times sorted,
    as a curve over the leaf's rank (point (x, y): the x-th leaf to start
    started at y). All panels share a log time axis."""
    plt = plot.pyplot()
    points = sorted(points, key=lambda p: sys_order(p["system"]))
    n = len(points)
    cols = min(3, n)
    nrows = (n + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.4 * cols + 0.6, 3.0 * nrows + 0.8),
                             sharey=True, squeeze=False)
    floor = 0.01  # us: a leaf that started "at once" still shows on the log axis
    for i, p in enumerate(points):
        ax = axes[i // cols][i % cols]
        color = sys_color(p["system"])
        leaves = max(len(t) for t in p["trials"])
        ranks = list(range(1, leaves + 1))
        for t in p["trials"]:
            ax.plot(ranks[:len(t)], [max(x, floor) for x in t], marker="o", markersize=3,
                    color=color, alpha=0.35, linewidth=1)
        med = [statistics.median(t[j] for t in p["trials"] if j < len(t)) for j in range(leaves)]
        ax.plot(ranks, [max(x, floor) for x in med], color="black", linewidth=1.5,
                linestyle="--", label="median")
        ax.set_yscale("log")
        ax.set_title(f"{p['system']} ({p['workers']} worker{'s' if p['workers'] != 1 else ''})",
                     fontsize="medium")
        ax.set_xticks(ranks if leaves <= 16 else None)
        ax.set_xlim(0.7, leaves + 0.3)
        ax.grid(True, which="both", alpha=0.3)
        if i % cols == 0:
            ax.set_ylabel("leaf start time (us)")
        if i // cols == nrows - 1 or i + cols >= n:
            ax.set_xlabel("leaf, in order of start")
        if i == 0:
            ax.legend(fontsize="x-small", loc="upper left")
    for j in range(n, nrows * cols):
        axes[j // cols][j % cols].axis("off")
    p0 = points[0]
    kept = len(p0["trials"])
    fig.suptitle("spreading (Taura and Nakashima, 5.4.2, figure 5): sorted leaf start times, "
                 f"{kept} trials"
                 + (f" (first {p0['dropped']} left out)" if p0["dropped"] else "")
                 + f", leaves busy {p0['busy']} us", fontsize="medium")
    return plot.save(plt, fig, path)


BENCH = Spreading()
