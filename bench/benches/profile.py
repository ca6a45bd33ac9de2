"""profile: what ito's profiler sees in the application benchmarks.

Each application benchmark built for ito (fib, nqueens, quicksort, uts,
bin: their first parameter set) runs once more at 1 worker and at the most
workers with ITO_PROFILE=summary,csv,trace (docs/profile.md). Every timed
parallel run of such a binary is an instance of the region "parallel"
(bench/common/spawn.hpp), so the figures are those of the parallel runs
alone, summed over the repetitions: work T1, span Tinf, parallelism, the
burdened parallelism, and the split of P x Tp (work, the runtime's code,
idle with no work, idle while work was ready, blocked, descheduled by the
OS), with the profiler's one-line diagnosis. The report also links one
timeline per benchmark (the run at the most workers), drawn by
tools/ito-profile-plot from the trace: the whole process, serial baseline
included, one track per worker, and below it how many workers ran program
code. The profiled runs are extra runs: the timings of the other sections
come from runs without the profiler.
"""
import os
import re
import subprocess
import sys
import time

from harness import Benchmark, Run, fmt, md_table, plot_link
from harness.machine import ROOT

APPS = ["fib", "nqueens", "quicksort", "uts", "bin"]
COLS = ["bench", "workers", "instances", "elapsed_s", "t1_s", "tinf_s", "parallelism",
        "burdened_parallelism", "work_pct", "runtime_pct", "idle_pct", "ready_pct",
        "blocked_pct", "os_pct", "diagnosis"]

REGION = re.compile(
    r"^  region parallel: (\d+) instances?, elapsed ([0-9.]+) s, work ([0-9.]+) s, span "
    r"([0-9.]+) s, parallelism ([0-9.]+), burdened parallelism ([0-9.]+).*\n"
    r"    worker time: work ([0-9.]+)%, runtime ([0-9.]+)%, idle ([0-9.]+)%, idle while work "
    r"was ready ([0-9.]+)%, blocked ([0-9.]+)%, descheduled by the OS ([0-9.]+)%\n"
    r"    diagnosis: (.*)$", re.M)


class Profile(Benchmark):
    names = ["profile"]
    columns = COLS

    def plan(self, args):
        import benches  # the other benchmarks' plans (a cycle at import time)
        named = benches.by_name()
        runs, skipped = [], []
        most = max(args.workers)
        counts = sorted({1, most})
        for app in APPS:
            if app not in named:
                continue
            theirs, _ = named[app].plan(args)
            picked = {}
            for r in theirs:
                if not os.path.basename(r.cmd[0]).endswith(f"{app}_ito"):
                    continue
                w = int(r.env.get("ITO_NUM_WORKERS", "0"))
                if w in counts and w not in picked:
                    picked[w] = r  # the first parameter set at this count
            if not picked:
                skipped.append(f"{app}_ito (profile)")
                continue
            for w in sorted(picked):
                r = picked[w]
                prefix = os.path.join(os.path.abspath(args.out), "profile", f"{app}_w{w}")
                env = dict(r.env)
                env.update({"ITO_PROFILE": "summary,csv,trace", "ITO_PROFILE_OUT": prefix})
                runs.append(Run("profile", f"profile {app} workers={w}", r.cmd, env, r.cols,
                                r.nrows, spec={"bench": app, "workers": w, "prefix": prefix}))
        return runs, skipped

    def execute(self, runner, run):
        runner.done += 1
        print(f"[{runner.done}/{runner.total}] {run.what}: "
              f"{os.path.basename(run.cmd[0])} {' '.join(run.cmd[1:])}", flush=True)
        os.makedirs(os.path.dirname(run.spec["prefix"]), exist_ok=True)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(run.cmd, env=run.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=runner.timeout)
        except (subprocess.TimeoutExpired, OSError) as e:
            runner.fail(run.what, f"did not run: {e}", "")
            return []
        if proc.returncode != 0:
            runner.fail(run.what, f"exit status {proc.returncode}", proc.stderr)
            return []
        m = REGION.search(proc.stderr)
        if not m:
            runner.fail(run.what, "no figures of the region 'parallel' in the profile's summary",
                        proc.stderr)
            return []
        g = m.groups()
        row = dict(zip(COLS, [run.spec["bench"], str(run.spec["workers"])] + list(g)))
        print(f"    {run.spec['bench']}: parallelism {row['parallelism']}, "
              f"{time.monotonic() - t0:.1f} s", flush=True)
        return [row]

    def section(self, ctx):
        rep = ["## What the profiler sees (ito)\n"]
        rows = ctx.results.get("profile", [])
        if not rows:
            rep.append("No profiled runs.\n")
            return rep
        rep.append("Each application benchmark once more under `ITO_PROFILE` "
                   "(docs/profile.md): the figures of its timed parallel runs (the region "
                   "`parallel`, summed over the repetitions). *T1* is the work (time in the "
                   "program's code, all workers), *Tinf* the span, *par* T1/Tinf, *burd* the "
                   "burdened parallelism (each fork on the critical path charged the steal and "
                   "sync cost measured in the run). The split of P x Tp: *work*, *rt* the "
                   "runtime's code, *idle* with no work anywhere, *ready* idle while work was "
                   "ready, *blk* blocked, *os* descheduled by the OS. These runs carry the "
                   "profiler's cost; the other sections' timings do not.\n")
        table = []
        for r in rows:
            table.append([r["bench"], r["workers"], fmt(float(r["t1_s"]) * 1e3),
                          fmt(float(r["tinf_s"]) * 1e3), r["parallelism"],
                          r["burdened_parallelism"], fmt(float(r["elapsed_s"]) * 1e3),
                          r["work_pct"], r["runtime_pct"], r["idle_pct"], r["ready_pct"],
                          r["blocked_pct"], r["os_pct"]])
        rep.append(md_table(["bench", "P", "T1 ms", "Tinf ms", "par", "burd", "Tp ms",
                             "work %", "rt %", "idle %", "ready %", "blk %", "os %"], table))
        rep.append("")
        rep.append("Diagnoses:\n")
        for r in rows:
            rep.append(f"- {r['bench']}, {r['workers']} workers: {r['diagnosis']}")
        rep.append("")
        most = max(int(r["workers"]) for r in rows)
        plotter = os.path.join(ROOT, "tools", "ito-profile-plot")
        for r in rows:
            if int(r["workers"]) != most:
                continue
            trace = os.path.join(ctx.out, "profile", f"{r['bench']}_w{most}.trace.json")
            png = f"profile_{r['bench']}.png"
            drawn = False
            if os.path.exists(trace):
                p = subprocess.run([sys.executable, plotter, trace, os.path.join(ctx.out, png),
                                    "--title", f"{r['bench']}, {most} workers"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                drawn = p.returncode == 0
            rep.append(plot_link(drawn, png, f"{r['bench']}: timeline, {most} workers"))
        return rep


BENCH = Profile()
