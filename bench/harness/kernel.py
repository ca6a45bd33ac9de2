"""Kernels: benchmarks built like fib, with parameters, timed against the
serial version of the same algorithm in the same binary.

<kernel>_<system> P1 P2 .. REPS prints a CSV
  system,workers,<params>,rep,serial_s,parallel_s,ratio[,<extra>]
and is run for each parameter set at each worker count (serial: the
smallest). A kernel module is a Kernel (or a subclass that adds to the
report) with its parameters and their default and --quick sets.
"""
import os

from . import plot
from .benchmark import Benchmark
from .report import plot_link, ratio_table
from .runner import Run
from .stats import ratio_summary
from .systems import each_system, sys_color, sys_order, worker_env, workers_for


class Kernel(Benchmark):
    def __init__(self, name, params, default, quick, what, extra=()):
        self.name = name
        self.names = [name]
        self.params = list(params)    # the parameter columns, the binary's first arguments
        self.default = default        # the parameter sets run by default and by --quick
        self.quick = quick            # (one run per set, system and worker count)
        self.what = what              # one line for the report
        self.extra = list(extra)      # columns after ratio
        self.columns = (["system", "workers"] + self.params
                        + ["rep", "serial_s", "parallel_s", "ratio"] + self.extra)

    def plan(self, args):
        runs, skipped = [], []
        sets = args.kernel_args[self.name]
        for cfg in sets:
            for s, b in each_system(args.bindir, self.name, skipped):
                for w in workers_for(args, s):
                    what = f"{self.name} {s} workers={w}"
                    if len(sets) > 1:
                        what = f"{self.name}({','.join(cfg)}) {s} workers={w}"
                    runs.append(Run(self.name, what, [b] + cfg + [str(args.kernel_reps)],
                                    worker_env(w), self.columns, args.kernel_reps))
        return runs, skipped

    def execute(self, runner, run):
        rows = super().execute(runner, run)
        want = run.cmd[1:1 + len(self.params)]
        for r in rows:
            got = [r[c] for c in self.params]
            if [int(x) for x in got] != [int(x) for x in want]:
                runner.fail(run.what, f"reported parameters {got}, asked for {want}", "")
                break
        return rows

    def configs(self, rows):
        """The parameter sets in the rows, in the order they were run."""
        seen = []
        for r in rows:
            cfg = tuple(r[c] for c in self.params)
            if cfg not in seen:
                seen.append(cfg)
        return seen

    def label(self, cfg):
        return ", ".join(f"{c}={v}" for c, v in zip(self.params, cfg))

    # a subclass's additions to the report: after the introduction, and
    # before and after the table of each parameter set
    def intro(self):
        return []

    def config_head(self, cfg):
        return []

    def config_tail(self, rows):
        return []

    def section(self, ctx):
        k, rows = self.name, ctx.results[self.name]
        rep = [f"## {k}\n"]
        configs = self.configs(rows)
        if not configs:
            rep.append(f"No {k} results (see Failures).\n")
            return rep
        rep.append(f"{self.what}; {'; '.join(self.label(c) for c in configs)}. Times are "
                   "medians over the repetitions (and min - max). *ratio* is "
                   "the parallel time divided by the time of the plain serial version of the same "
                   "algorithm compiled into the same binary (median and min-max over the "
                   "repetitions). *speedup* is the median parallel time at 1 worker divided by that "
                   "at this worker count. *vs ito* is the median parallel time divided by ito's "
                   "(task_group) at the same worker count, both from this run.\n")
        rep.extend(self.intro())
        panels = []
        for cfg in configs:
            crow = [r for r in rows if tuple(r[c] for c in self.params) == cfg]
            s = ratio_summary(
                crow, lambda g: {"params": ", ".join(f"{c}={g[0][c]}" for c in self.params)})
            if len(configs) > 1:
                rep.append(f"### {k}: {self.label(cfg)}\n")
            rep.extend(self.config_head(cfg))
            rep.append(ratio_table(s))
            rep.append("")
            rep.extend(self.config_tail(crow))
            panels.append((f"{k} ({self.label(cfg)})", s))
        png = f"{k}_speedup.png"
        if len({int(r["workers"]) for r in rows}) < 2:
            rep.append("(No speed-up plot: one worker count only.)\n")
        else:
            rep.append(plot_link(plot_speedup(panels, os.path.join(ctx.out, png)), png,
                                 f"{k}: speedup vs workers"))
        return rep


def parse_params(a, p, kernels):
    """a.kernel_args: kernel name -> parameter sets, from --param (a.param)
    over the kernels' default (or --quick) sets. The first --param for a
    kernel replaces its defaults, later ones add sets. Missing trailing
    values: the first default."""
    a.kernel_args = {k.name: [list(c) for c in (k.quick if a.quick else k.default)]
                     for k in kernels}
    by_name = {k.name: k for k in kernels}
    given = set()
    for spec in a.param:
        name, _, vals = spec.partition("=")
        vals = [v.strip() for v in vals.split(",") if v.strip()]
        if name not in by_name or not vals or len(vals) > len(by_name[name].params) or \
                not all(v.lstrip("-").isdigit() for v in vals):
            p.error(f"--param {spec}: want one of {', '.join(by_name)} = up to "
                    "that kernel's integer parameters")
        k = by_name[name]
        cfg = list((k.quick if a.quick else k.default)[0])
        cfg[:len(vals)] = vals
        if name not in given:
            a.kernel_args[name] = []
            given.add(name)
        a.kernel_args[name].append(cfg)


def plot_speedup(panels, path):
    """Speedup (median parallel time at 1 worker / at w) vs workers, one line
    per system and one panel per parameter set; panels: [(title, summary)]."""
    points = []
    for i, (title, summary) in enumerate(panels):
        for (s, w), v in summary.items():
            one = summary.get((s, 1))
            if s == "serial" or not one or v["par_med"] <= 0:
                continue
            points.append({"system": s, "workers": w, "speedup": one["par_med"] / v["par_med"],
                           "panel": i, "title": title})
    if not points:
        return False
    return plot.plot_with(points, path, draw_speedup_plot)


def draw_speedup_plot(points, path):
    plt = plot.pyplot()
    npanel = max(p["panel"] for p in points) + 1
    fig, axes = plt.subplots(1, npanel, figsize=(max(8.0, 4.2 * npanel + 1.6), 4.5),
                             squeeze=False)
    ws_all = sorted({p["workers"] for p in points})
    for i, ax in enumerate(axes[0]):
        pp = [p for p in points if p["panel"] == i]
        # on top of the systems' lines, which often lie on it
        ax.plot(ws_all, ws_all, linestyle=":", color="black", linewidth=1.5, zorder=5,
                label="ideal")
        for s in sorted({p["system"] for p in pp}, key=sys_order):
            ps = sorted((p for p in pp if p["system"] == s), key=lambda p: p["workers"])
            ax.plot([p["workers"] for p in ps], [p["speedup"] for p in ps], marker="o",
                    color=sys_color(s), label=s)
        ax.set_xlabel("workers")
        if i == 0:
            ax.set_ylabel("speedup vs 1 worker (median times)")
        ax.set_xticks(ws_all)
        ax.set_ylim(bottom=0)
        ax.set_title(pp[0]["title"] if pp else "", fontsize="medium")
        ax.grid(True, alpha=0.3)
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return plot.save(plt, fig, path)
