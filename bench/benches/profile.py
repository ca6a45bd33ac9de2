"""profile: what ito's profiler sees in the application benchmarks.

Each application benchmark built for ito (fib, nqueens, quicksort, uts,
bin: their first parameter set) runs once more at 1 worker and at the most
workers with ITO_PROFILE=summary,csv,trace (docs/profile.md), and so do
the nested quicksort and the Jacobi `depend` program of bench/omp/ (the
same gcc binaries under libito-omp.so; their figures are the whole run's,
data set-up and checks included, as they have no region of their own). Every timed
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

It also measures what recording costs on the finest-grained program, fib
on one worker: fib_ito plain, under ITO_PROFILE=summary (subtrees of fine
tasks collapsed), under ITO_PROFILE=summary with ITO_PROFILE_COLLAPSE=0
(every fork recorded), and the builds fib_ito_clock1 and fib_ito_clock3
that only read the cycle counter at one or at the three points of each
fork where an exact span recorder must (bench/fib.cpp), without any
recorder. The five alternate in rounds
(paired), and the report gives each one's time over the plain run's of
the same round, as the median and range over the rounds.
"""
import copy
import os
import re
import subprocess
import sys
import time

from harness import Benchmark, Run, fmt, md_table, plot_link
from harness.machine import ROOT
from harness.systems import worker_env

APPS = ["fib", "nqueens", "quicksort", "uts", "bin"]
COLS = ["bench", "workers", "instances", "elapsed_s", "t1_s", "tinf_s", "parallelism",
        "burdened_parallelism", "work_pct", "runtime_pct", "idle_pct", "ready_pct",
        "blocked_pct", "os_pct", "diagnosis"]

RUN = re.compile(
    r"^ito profile \(run 1, (\d+) workers?\):\n"
    r"  work T1 ([0-9.]+) s, span Tinf ([0-9.]+) s, parallelism ([0-9.]+)\n"
    r"  burdened span [0-9.]+ s \([0-9.]+ us per fork on the path\), burdened parallelism "
    r"([0-9.]+)\n"
    r"  elapsed Tp ([0-9.]+) s, .*\n"
    r"  worker time P x Tp [0-9.]+ s: work ([0-9.]+)%, runtime ([0-9.]+)%, idle ([0-9.]+)%, "
    r"idle while work was ready ([0-9.]+)%, blocked ([0-9.]+)%, off the CPU "
    r"([0-9.]+)%\n"
    r"(?:  .*\n)*?"
    r"  diagnosis: (.*)$", re.M)
# The OpenMP programs of bench/omp/, unchanged gcc binaries under
# libito-omp.so: the whole run (they have no region of their own).
OMP_APPS = ["omp_qsort", "omp_jacobi"]

REGION = re.compile(
    r"^  region parallel: (\d+) instances?, elapsed ([0-9.]+) s, work ([0-9.]+) s, span "
    r"([0-9.]+) s, parallelism ([0-9.]+), burdened parallelism ([0-9.]+).*\n"
    r"    worker time: work ([0-9.]+)%, runtime ([0-9.]+)%, idle ([0-9.]+)%, idle while work "
    r"was ready ([0-9.]+)%, blocked ([0-9.]+)%, off the CPU ([0-9.]+)%\n"
    r"    diagnosis: (.*)$", re.M)


# What recording costs: (label, binary, extra environment), alternated.
COST_VARIANTS = [("plain", "fib_ito", {}),
                 ("ITO_PROFILE=summary", "fib_ito", {"ITO_PROFILE": "summary"}),
                 ("ITO_PROFILE=summary, every fork recorded (ITO_PROFILE_COLLAPSE=0)", "fib_ito",
                  {"ITO_PROFILE": "summary", "ITO_PROFILE_COLLAPSE": "0"}),
                 ("1 clock read a fork, no recorder", "fib_ito_clock1", {}),
                 ("3 clock reads a fork, no recorder", "fib_ito_clock3", {})]
COST_COLS = ["variant", "round", "n", "parallel_s"]


class Profile(Benchmark):
    names = ["profile"]
    columns = COLS

    def keys(self, name):
        return ["profile", "profile_cost"]

    def csv_cols(self):
        return {"profile": COLS, "profile_cost": COST_COLS}

    def _cost_plan(self, args, bindir):
        """Rounds of the fib variants on one worker, alternating."""
        n, rounds = (30, 3) if getattr(args, "quick", False) else (35, 7)
        runs = []
        for k in range(rounds):
            for label, binary, extra in COST_VARIANTS:
                env = {k: v for k, v in worker_env(1).items() if not k.startswith("ITO_PROFILE")}
                env.update(extra)
                runs.append(Run("profile_cost", f"profile cost {label} round {k}",
                                [os.path.join(bindir, binary), str(n), "3"], env, None, None,
                                spec={"cost": label, "round": k, "n": n}))
        return runs

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
                runs.append(self._run(args, app, w, picked[w], False))
        # the OpenMP programs: the OpenMP benchmark's ito runs, first round
        omp = next((named[n] for n in OMP_APPS if n in named), None)
        if omp is not None and hasattr(args, "omp_args"):
            a2 = copy.copy(args)
            a2.benches = list(OMP_APPS)
            theirs, _ = omp.plan(a2)
            for app in OMP_APPS:
                picked = {}
                for r in theirs:
                    spec = r.spec or {}
                    if (r.bench == app and spec.get("system") == "ito" and spec.get("round") == 0
                            and spec.get("workers") in counts):
                        picked.setdefault(spec["workers"], r)
                if not picked:
                    skipped.append(f"{app} ito (profile)")
                for w in sorted(picked):
                    runs.append(self._run(args, app, w, picked[w], True))
        # what recording costs: needs the clock builds next to fib_ito
        fib = next((r.cmd[0] for r in runs if os.path.basename(r.cmd[0]) == "fib_ito"), None)
        if fib is not None:
            bindir = os.path.dirname(fib)
            if all(os.path.exists(os.path.join(bindir, b)) for _, b, _ in COST_VARIANTS):
                runs.extend(self._cost_plan(args, bindir))
            else:
                skipped.append("fib_ito_clock1/3 (profile cost)")
        return runs, skipped

    @staticmethod
    def _proc(runner, run):
        """The finished process, or None after the runner recorded why not."""
        try:
            return subprocess.run(run.cmd, env=run.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=runner.timeout)
        except (subprocess.TimeoutExpired, OSError) as e:
            runner.fail(run.what, f"did not run: {e}", "")
            return None

    def _cost(self, runner, run):
        proc = self._proc(runner, run)
        if proc is None:
            return []
        times = []
        for line in proc.stdout.splitlines():
            f = line.split(",")
            if len(f) == 7 and f[0] == "ito":
                times.append(float(f[5]))
        if proc.returncode != 0 or not times:
            runner.fail(run.what, f"exit status {proc.returncode}, {len(times)} timings",
                        proc.stderr)
            return []
        times.sort()
        t = times[len(times) // 2]
        print(f"    {t * 1e3:.1f} ms", flush=True)
        return [{"variant": run.spec["cost"], "round": str(run.spec["round"]),
                 "n": str(run.spec["n"]), "parallel_s": f"{t:.6f}"}]

    @staticmethod
    def _run(args, app, w, r, whole):
        prefix = os.path.join(os.path.abspath(args.out), "profile", f"{app}_w{w}")
        env = dict(r.env)
        env.update({"ITO_PROFILE": "summary,csv,trace", "ITO_PROFILE_OUT": prefix})
        return Run("profile", f"profile {app} workers={w}", r.cmd, env, getattr(r, "cols", None),
                   r.nrows, spec={"bench": app, "workers": w, "prefix": prefix, "whole": whole})

    def execute(self, runner, run):
        runner.done += 1
        print(f"[{runner.done}/{runner.total}] {run.what}: "
              f"{os.path.basename(run.cmd[0])} {' '.join(run.cmd[1:])}", flush=True)
        if run.spec.get("cost"):
            return self._cost(runner, run)
        os.makedirs(os.path.dirname(run.spec["prefix"]), exist_ok=True)
        t0 = time.monotonic()
        proc = self._proc(runner, run)
        if proc is None:
            return []
        if proc.returncode != 0:
            runner.fail(run.what, f"exit status {proc.returncode}", proc.stderr)
            return []
        if run.spec["whole"]:
            m = RUN.search(proc.stderr)
            g = m.groups() if m else None
            if g:  # the same columns as a region's: instances 1
                g = (g[0], "1", g[5], g[1], g[2], g[3], g[4]) + g[6:]
                g = g[1:]
        else:
            m = REGION.search(proc.stderr)
            g = m.groups() if m else None
        if not g:
            runner.fail(run.what, "no figures in the profile's summary", proc.stderr)
            return []
        label = run.spec["bench"] + (" (whole run)" if run.spec["whole"] else "")
        row = dict(zip(COLS, [label, str(run.spec["workers"])] + list(g)))
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
                   "ready, *blk* blocked, *os* off the CPU in the program's or the runtime's code (preempted, the hypervisor, a system call ito does not see). These runs carry the "
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
            app = r["bench"].split(" ")[0]
            trace = os.path.join(ctx.out, "profile", f"{app}_w{most}.trace.json")
            png = f"profile_{app}.png"
            drawn = False
            if os.path.exists(trace):
                p = subprocess.run([sys.executable, plotter, trace, os.path.join(ctx.out, png),
                                    "--title", f"{app}, {most} workers"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                drawn = p.returncode == 0
            rep.append(plot_link(drawn, png, f"{app}: timeline, {most} workers"))
        rep.extend(self._cost_section(ctx.results.get("profile_cost", [])))
        return rep

    @staticmethod
    def _cost_section(rows):
        if not rows:
            return []
        by = {}
        for r in rows:
            by.setdefault(r["round"], {})[r["variant"]] = float(r["parallel_s"])
        rep = ["", "### What recording costs\n",
               f"fib({rows[0]['n']}) on one worker, the benchmark's own parallel time (median of "
               "3 repetitions), the variants alternating in rounds; each one's time over "
               "the plain run's of the same round, median (min to max) over "
               f"{len(by)} rounds. `summary` collapses the subtrees of fine tasks; with "
               "`ITO_PROFILE_COLLAPSE=0` every fork is recorded. The clock builds read the "
               "cycle counter where an exact span recorder must (bench/fib.cpp) and record "
               "nothing: the least recording every fork can cost here (docs/profile.md, "
               "\"What it costs\").\n"]
        table = []
        for label, _, _ in COST_VARIANTS:
            ratios = sorted(v[label] / v["plain"] for v in by.values()
                            if label in v and "plain" in v and v["plain"] > 0)
            ts = sorted(v[label] for v in by.values() if label in v)
            if not ratios:
                continue
            med = ratios[len(ratios) // 2]
            table.append([label, fmt(ts[len(ts) // 2] * 1e3),
                          f"{med:.2f} ({ratios[0]:.2f} to {ratios[-1]:.2f})"])
        rep.append(md_table(["variant", "ms", "over plain"], table))
        rep.append("")
        return rep


BENCH = Profile()
