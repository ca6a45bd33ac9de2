"""migration: the time for one task to move to another worker.

migration_<system> REPS DROP, at the largest worker count (at least 2; serial
is not run): the parent records t0 and spawns a child, which records t1 as it
starts; the parent records t2 when it resumes after the spawn; each then
waits until the other has started, so that one of them must move. The
larger of t1 - t0 and t2 - t0 is the least time to add one to the
parallelism, and which one is late tells work-first from help-first. Taura
and Nakashima, 'A Comparative Study of Six Task Parallel Programming
Systems', section 5.4.1 (docs/references.md); migration.png shows the
medians as bars.
"""
import os
import statistics

from harness import (Benchmark, Run, SYSTEMS, by_system, each_system, fmt, group_rows,
                     md_table, percentile, plot_link, plot_with, sys_order, with_others,
                     worker_env)
from harness import plot

COLS = ["system", "workers", "rep", "child_start_ns", "parent_resume_ns"]
# (reps, dropped): default and --quick
ARGS = {False: (10000, 1000), True: (200, 20)}


class Migration(Benchmark):
    names = ["migration"]
    columns = COLS

    def plan(self, args):
        reps, drop = ARGS[args.quick]
        w = max(2, max(args.workers))
        runs, skipped = [], []
        # not serial: the handshake needs two workers
        for s, b in each_system(args.bindir, "migration", skipped,
                                [s for s in SYSTEMS if s != "serial"]):
            runs.append(Run("migration", f"migration {s} workers={w}", [b, str(reps), str(drop)],
                            worker_env(w), COLS, reps - drop))
        return runs, skipped

    def section(self, ctx):
        reps, drop = ARGS[ctx.args.quick]
        rep = ["## migration: time for one task to move\n"]
        rep.append("Taura and Nakashima, 'A Comparative Study of Six Task Parallel Programming "
                   "Systems', section 5.4.1 (docs/references.md): the parent records t0 and "
                   "spawns a child, which records t1 as "
                   "it starts; the parent records t2 when it resumes after the spawn; each then "
                   "waits until the other has started, so one of them must move to the other "
                   f"worker. {reps} repetitions, the first {drop} dropped; CLOCK_MONOTONIC. "
                   "Medians (and 10th - 90th percentiles) of t1 - t0 (*child start*) and t2 - t0 "
                   "(*parent resume*). *late* names the larger median: *parent* suggests "
                   "work-first (the child runs at once, the parent's continuation is stolen), "
                   "*child* help-first (the parent goes on, the child is stolen). The larger one, "
                   "*move*, is the least time to add one to the parallelism; *vs ito* is a system's "
                   "*move* divided by ito's (task_group) in this run. (serial is not run: the "
                   "handshake needs two workers.) The plot's whiskers are the 10th - 90th "
                   "percentiles.\n")
        groups = group_rows(ctx.results["migration"],
                            lambda r: (float(r["child_start_ns"]), float(r["parent_resume_ns"])))
        if not groups:
            return with_others(ctx.runner, "migration",
                               rep + ["No migration results (see Failures).\n"])

        pct = percentile  # short: the table and plot lines below use it eight times
        table, points = [], []
        ito = groups.get(("ito", max(w for _, w in groups)))
        ito_move = max(statistics.median(x[0] for x in ito),
                       statistics.median(x[1] for x in ito)) if ito else None
        for (sysname, w) in by_system(groups):
            v = groups[(sysname, w)]
            c = [x[0] for x in v]
            p = [x[1] for x in v]
            cm, pm = statistics.median(c), statistics.median(p)
            late = "parent" if pm > cm else "child"
            move = max(cm, pm)
            table.append([sysname, w, len(v), fmt(cm), f"{fmt(pct(c, 0.1))} - {fmt(pct(c, 0.9))}",
                          fmt(pm), f"{fmt(pct(p, 0.1))} - {fmt(pct(p, 0.9))}", late,
                          "work-first" if late == "parent" else "help-first", fmt(move),
                          fmt(move / ito_move) if ito_move else "n/a"])
            points.append({"system": sysname, "child": cm, "parent": pm, "workers": w,
                           "child_lo": pct(c, 0.1), "child_hi": pct(c, 0.9),
                           "parent_lo": pct(p, 0.1), "parent_hi": pct(p, 0.9)})
        rep.append(md_table(["system", "workers", "reps", "child start ns (median)", "p10 - p90",
                             "parent resume ns (median)", "p10 - p90", "late", "looks like",
                             "move ns", "vs ito"], table))
        rep.append("")
        drawn = plot_with(points, os.path.join(ctx.out, "migration.png"), draw_plot)
        rep.append(plot_link(drawn, "migration.png",
                             "migration: median child start and parent resume"))
        return with_others(ctx.runner, "migration", rep)


def draw_plot(points, path):
    plt = plot.pyplot()
    points = sorted(points, key=lambda p: sys_order(p["system"]))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    xs = list(range(len(points)))
    for off, key, label, color in ((-0.2, "child", "child start (t1 - t0)", "#1f77b4"),
                                   (0.2, "parent", "parent resume (t2 - t0)", "#ff7f0e")):
        med = [max(p[key], 1) for p in points]
        err = [[m - max(p[key + "_lo"], 1) for m, p in zip(med, points)],
               [max(p[key + "_hi"], 1) - m for m, p in zip(med, points)]]
        ax.bar([x + off for x in xs], med, width=0.4, yerr=err, capsize=3, color=color,
               ecolor="black", label=label)
    ax.set_xticks(xs)
    ax.set_xticklabels([p["system"] for p in points])
    ax.set_yscale("log")
    ax.set_ylabel("ns (median; whiskers p10 - p90)")
    ax.set_title(f"migration latency with {points[0]['workers']} workers "
                 "(Taura and Nakashima, 5.4.1)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return plot.save(plt, fig, path)


BENCH = Migration()
