#!/usr/bin/env python3
"""Run the ito benchmarks and write CSVs and a report.

Builds nothing: `make bench` (or `cmake --build build`) builds the binaries,
which this script finds in build/bench/ (or --bindir). For every system that
was built it runs

  fib         fib_<system> N REPS      at each worker count
  spawn_loop  spawn_loop_<system>      with 1 worker
  create_p    create_p_<system> ITERS MEAS DROP   at each worker count (serial: 1)
  migration   migration_<system> REPS DROP        at the largest worker count (>= 2; not serial)
  spreading   spreading_<system> TRIALS LEAVES BUSY_US   at the largest worker count
  nqueens     nqueens_<system> N REPS  at each worker count
  quicksort   quicksort_<system> N CUTOFF REPS          "
  uts         uts_<system> DEPTH MEAN SEED REPS         "
  bin         bin_<system> N K A REPS                   "  for each (N, K, A): by default
                                                           13,1,23000 and 9,2,750, the two
                                                           configurations of seed 000, 5.5
  million     million N                once, with the largest worker count
  idle_cpu, wake, alternate, policy, shutdown
              the idle-worker benchmarks of seed 003 (bench/idle_bench.py),
              at the largest worker count
  omp_fib, omp_qsort, omp_matmul, omp_jacobi, omp_sparselu
              the OpenMP programs of bench/omp/ (bench/omp/omp_bench.py), one
              gcc -fopenmp binary each, under libgomp, LLVM's libomp and
              libito-omp.so (LD_PRELOAD) at each worker count; the ito runs are
              skipped, with a note, while libito-omp.so is missing
  echo        only with --bench echo (not in the default set: it needs about
              2 x 10,000 file descriptors): echo/run_echo.py with
              echo/echo_threads natively (pthreads) and under
              LD_PRELOAD=libito-pthread.so (ito), and echo/echo_epoll (epoll)

and writes OUT/<bench>.csv for each and OUT/REPORT.md, plus, when matplotlib
can be imported (here or in /usr/bin/python3), the plots the report links:
fib.png, create_p.png (time per task vs workers, log scale: seed 000's
figure 2), migration.png (latency bars), spreading.png (sorted leaf start
times: figure 5) and <kernel>_speedup.png (speed-up curves: figure 6).
Everything in the report is computed from the CSVs of this run.

The worker count is handed to every runtime through its own variable:
ITO_NUM_WORKERS (ito), OMP_NUM_THREADS (OpenMP), BENCH_WORKERS (oneTBB).

Every benchmark checks its own answer and exits nonzero on a wrong one; this
script exits nonzero if any run failed or printed malformed output, so
`run.py --quick` is a correctness smoke test (it never judges timings).
"""
import argparse
import csv
import datetime
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import idle_bench

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "echo"))
import run_echo  # noqa: E402  (bench/echo/run_echo.py: the echo driver and its CSV columns)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "omp"))
import omp_bench  # noqa: E402  (bench/omp/omp_bench.py: the OpenMP runs and their report part)

SYSTEMS = ["serial", "ito", "ito_thread", "tbb", "gomp", "iomp"]
# Kernels: benchmarks built like fib whose CSV is
#   system,workers,<params>,rep,serial_s,parallel_s,ratio[,<extra>]
# name -> params: parameter columns; default / quick: the parameter sets run
# by default and by --quick (one run per set, system and worker count);
# extra: columns after ratio; what: one line for the report.
KERNELS = {
    "nqueens": dict(
        params=["n"], default=[["12"]], quick=[["8"]], extra=[],
        what="nqueens(n): solutions counted with one task per safe column at each row, "
             "each child with its own copy of the board"),
    "quicksort": dict(
        params=["n", "cutoff"], default=[[str(1 << 24), "2048"]], quick=[["100000", "2048"]],
        extra=[],
        what="quicksort of n fixed-seed pseudo-random integers (seed 004, figure 14): "
             "partition, spawn the left part, recurse on the right, sync; parts of at most "
             "*cutoff* elements go to std::sort"),
    "uts": dict(
        params=["depth", "mean", "seed"], default=[["11", "4", "19"]], quick=[["6", "4", "19"]],
        extra=[],
        what="unbalanced tree search: the nodes of a depth-limited geometric tree (child count "
             "geometric with the given mean, ids hashed with splitmix64) counted with one task "
             "per child"),
    # Seed 000, 5.5 runs bin at (n=18, K=1, A=23000) and (n=10, K=2, A=750)
    # (BIN_PAPER). Here K and A are the paper's (A in LCG steps of about 1 ns
    # rather than clock cycles) and n is smaller, so that T1 is about half a
    # second: the grain per task is the paper's, and T1/Tinf (about 900 and 260)
    # is still far above the worker counts of a small machine.
    "bin": dict(
        params=["n", "K", "A"], default=[["13", "1", "23000"], ["9", "2", "750"]],
        quick=[["5", "1", "23000"], ["4", "2", "750"]],
        extra=["consume_ns", "t1_s", "tinf_s", "bound_s"],
        what="bin(n, K, A) of seed 000, 5.5: consume(A); then K times: spawn bin(n-1); "
             "bin(n-1); sync; consume(A). A counts LCG steps (about 1 ns each)"),
}
BIN_PAPER = {("1", "23000"): "18", ("2", "750"): "10"}  # (K, A) -> the paper's n
BENCHES = (["fib", "spawn_loop", "create_p", "migration", "spreading"] + list(KERNELS) +
           ["million"] + idle_bench.BENCHES + omp_bench.BENCHES)
# Run only when named with --bench (docs/dropin.md, section 9).
OPTIONAL_BENCHES = ["echo"]
ECHO_COLS = run_echo.CSV_COLS
# (connections, warm-up s, measured s): default and --quick
ECHO_ARGS = {False: (10000, 2, 10), True: (200, 0, 1)}
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

FIB_COLS = ["system", "workers", "n", "rep", "serial_s", "parallel_s", "ratio"]
SPAWN_COLS = ["system", "workers", "measurement", "ns_per_iter"]  # create_p
SPAWN_LOOP_COLS = SPAWN_COLS + ["clocks_per_iter"]
MILLION_COLS = ["n", "workers", "wall_s", "create_s", "arrive_s", "finish_s",
                "hwm_start_kb", "hwm_end_kb", "rss_peak_kb", "pte_peak_kb",
                "bytes_per_thread"]
SPAWN_ITERS, SPAWN_MEAS, SPAWN_DROP = 1000, 31, 5
MIGRATION_COLS = ["system", "workers", "rep", "child_start_ns", "parent_resume_ns"]
SPREAD_COLS = ["system", "workers", "trial", "leaf", "start_us"]
# (iters, measurements, dropped) for create_p; (reps, dropped) for migration;
# (trials, busy_us) for spreading: default and --quick.
CREATE_P_ARGS = {False: (1000, 31, 5), True: (100, 4, 1)}
MIGRATION_ARGS = {False: (10000, 1000), True: (200, 20)}
SPREAD_ARGS = {False: (30, 1000), True: (3, 200)}


def ncpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_workers(text):
    try:
        ws = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("--workers wants a list like 1,2,4")
    if not ws or ws[0] < 1:
        raise argparse.ArgumentTypeError("worker counts must be >= 1")
    return ws


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", choices=BENCHES + OPTIONAL_BENCHES, action="append",
                   help="run only this benchmark (may be repeated); echo runs only when named")
    p.add_argument("--workers", type=parse_workers,
                   help="worker counts for fib and the kernels, e.g. 1,2 (default 1..nproc; --quick: 1,2)")
    p.add_argument("--quick", action="store_true",
                   help="tiny parameters (fib 20, nqueens 8, quicksort 100000, uts depth 6, bin 5,1,23000 and 4,2,750, million 1000, the OpenMP programs likewise, 2 reps): a smoke test")
    p.add_argument("--out", default=os.path.join(ROOT, "results"),
                   help="where the CSVs and REPORT.md go (default: results/)")
    p.add_argument("--bindir", default=os.path.join(ROOT, "build", "bench"),
                   help="where the benchmark binaries are (default: build/bench/)")
    p.add_argument("--fib-n", type=int, help="fib argument (default 35, --quick 20)")
    p.add_argument("--reps", type=int,
                   help="repetitions (default 5 for fib and 3 for the other kernels, --quick 2)")
    p.add_argument("--param", action="append", default=[], metavar="BENCH=A,B,..",
                   help="a kernel's parameters, e.g. nqueens=13, quicksort=1000000,2048, "
                        "uts=10,4,19, bin=14,2,500; repeat to run several sets (bin runs "
                        "13,1,23000 and 9,2,750 by default)")
    p.add_argument("--million-n", type=int,
                   help="threads for million (default 1000000, --quick 1000)")
    p.add_argument("--echo-conns", type=int, dest="echo_conns_arg", metavar="N",
                   help="connections for echo (default 10000, --quick 200)")
    p.add_argument("--shim", help="libito-pthread.so for echo's ito run "
                                  "(default: next to libito.so, the parent of --bindir)")
    p.add_argument("--timeout", type=float,
                   help="seconds one benchmark run may take (default 900, --quick 120)")
    omp_bench.add_args(p)
    a = p.parse_args(argv)
    a.benches = a.bench or BENCHES
    if a.workers is None:
        a.workers = [1, 2] if a.quick else list(range(1, ncpus() + 1))
    if a.fib_n is None:
        a.fib_n = 20 if a.quick else 35
    a.kernel_reps = a.reps if a.reps is not None else (2 if a.quick else 3)
    if a.reps is None:
        a.reps = 2 if a.quick else 5
    # kernel -> parameter sets; the first --param for a kernel replaces its
    # defaults, later ones add sets. Missing trailing values: the first default.
    a.kernel_args = {k: [list(c) for c in (v["quick"] if a.quick else v["default"])]
                     for k, v in KERNELS.items()}
    given = set()
    for spec in a.param:
        name, _, vals = spec.partition("=")
        vals = [v.strip() for v in vals.split(",") if v.strip()]
        if name not in KERNELS or not vals or len(vals) > len(KERNELS[name]["params"]) or \
                not all(v.lstrip("-").isdigit() for v in vals):
            p.error(f"--param {spec}: want one of {', '.join(KERNELS)} = up to "
                    "that kernel's integer parameters")
        cfg = list(KERNELS[name]["quick" if a.quick else "default"][0])
        cfg[:len(vals)] = vals
        if name not in given:
            a.kernel_args[name] = []
            given.add(name)
        a.kernel_args[name].append(cfg)
    if a.timeout is None:
        a.timeout = 120.0 if a.quick else 900.0
    if a.million_n is None:
        a.million_n = 1000 if a.quick else 1000000
    a.echo_conns, a.echo_warmup, a.echo_duration = ECHO_ARGS[a.quick]
    if a.echo_conns_arg is not None:
        a.echo_conns = a.echo_conns_arg
    omp_bench.finish_args(a, p)
    return a


def find_binary(bindir, name):
    path = os.path.join(bindir, name)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def worker_env(w):
    env = dict(os.environ)
    env["ITO_NUM_WORKERS"] = str(w)
    env["OMP_NUM_THREADS"] = str(w)
    env["BENCH_WORKERS"] = str(w)
    return env


class Runner:
    """Runs benchmark binaries, printing a progress line before each run."""

    def __init__(self, total, timeout):
        self.total = total
        self.done = 0
        self.timeout = timeout
        self.failures = []  # (what, message)
        self.meta = {}      # (bench, system) -> metadata line
        self.others = {}    # bench -> [CPU seconds of other processes, wall seconds]

    def run(self, what, cmd, env, expect_cols, expect_rows, bench=None):
        self.done += 1
        print(f"[{self.done}/{self.total}] {what}: {' '.join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))}",
              flush=True)
        busy0, kids0 = cpu_busy_s(), children_cpu_s()
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired as e:
            self.fail(what, f"timed out after {self.timeout:.0f} s", e.stderr)
            return []
        except OSError as e:
            self.fail(what, f"could not start: {e}", "")
            return []
        dt = time.monotonic() - t0
        if proc.returncode != 0:
            self.fail(what, f"exit status {proc.returncode}", proc.stderr)
            return []
        if proc.stderr.strip():
            sys.stderr.write(proc.stderr)
        meta, rows, err = parse_output(proc.stdout, expect_cols)
        if err:
            self.fail(what, err, proc.stdout)
            return []
        if expect_rows is not None and len(rows) != expect_rows:
            self.fail(what, f"printed {len(rows)} result lines, expected {expect_rows}", proc.stdout)
            return []
        for m in meta:
            self.meta.setdefault(what.split()[0], []).append(m)
        other = None
        busy1 = cpu_busy_s()
        if busy0 is not None and busy1 is not None:
            # CPU time the whole machine spent minus what this run used
            other = max(0.0, (busy1 - busy0) - (children_cpu_s() - kids0))
            acc = self.others.setdefault(bench or what.split()[0], [0.0, 0.0])
            acc[0] += other
            acc[1] += dt
        # (/proc/stat counts in ticks of 10 ms: say nothing about short runs)
        print(f"    ok in {dt:.1f} s" + (f" (other processes: {min(other / dt, ncpus()):.2f} cores)"
                                         if other is not None and dt >= 1 else ""), flush=True)
        return rows

    def others_line(self, bench):
        """The report's line on how busy the machine was with other work."""
        o = self.others.get(bench)
        if not o or o[1] < 1:  # too short to measure in 10 ms ticks
            return None
        return (f"While these runs took {fmt(o[1])} s, other processes used "
                f"{fmt(min(o[0] / o[1], ncpus()))} "
                f"of the {ncpus()} cores on average (from /proc/stat, less this benchmark's own "
                "CPU time); a parallel run with as many workers as cores loses that share.\n")

    def fail(self, what, msg, detail):
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        detail = (detail or "").strip()
        print(f"    FAILED: {msg}", flush=True)
        if detail:
            print("    | " + "\n    | ".join(detail.splitlines()[-20:]), flush=True)
        self.failures.append((what, msg, detail.splitlines()[-5:] if detail else []))


def cpu_busy_s():
    """Seconds of CPU time all processors have spent not idle since boot
    (guest time is counted inside user time), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal ...
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def parse_output(text, cols):
    """'#' lines are metadata; the first other line is the CSV header."""
    meta = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")]
    body = "\n".join(ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
    reader = csv.DictReader(io.StringIO(body))
    if reader.fieldnames != cols:
        return meta, [], f"unexpected CSV header {reader.fieldnames}, expected {cols}"
    rows = list(reader)
    for r in rows:
        for c in cols:
            if c == "system":
                continue
            try:
                float(r[c])
            except (TypeError, ValueError):
                return meta, [], f"malformed value {c}={r[c]!r}"
    return meta, rows, None


def write_csv(path, cols, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: r[c] for c in cols})


# --------------------------------------------------------------------------- report

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name") or ln.startswith("Model"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load1():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def fmt(x, digits=3):
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}g}"


def percentile(v, q):
    """The q-quantile (0..1) of v: the element at rank q * len(v) of the sorted values."""
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def group_rows(rows, value=lambda r: r):
    """(system, workers) -> [value(row), ...] over a benchmark's CSV rows."""
    groups = {}
    for r in rows:
        groups.setdefault((r["system"], int(r["workers"])), []).append(value(r))
    return groups


def ratio_summary(rows, extra):
    """(system, workers) -> medians, min and max of the serial/parallel CSV rows
    of one benchmark, ordered by system then workers; extra(group) adds the
    benchmark's own fields (its parameters)."""
    groups = group_rows(rows)
    out = {}
    for key in sorted(groups, key=lambda k: (sys_order(k[0]), k[1])):
        g = groups[key]
        ratios = [float(r["ratio"]) for r in g]
        par = [float(r["parallel_s"]) for r in g]
        out[key] = {
            "reps": len(g),
            "serial_med": statistics.median(float(r["serial_s"]) for r in g),
            "par_med": statistics.median(par),
            "par_min": min(par),
            "par_max": max(par),
            "ratio_med": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            **extra(g),
        }
    return out


def fib_summary(rows):
    return ratio_summary(rows, lambda g: {"n": int(g[0]["n"])})


def sys_order(s):
    return SYSTEMS.index(s) if s in SYSTEMS else len(SYSTEMS)


# One colour per system in every plot (matplotlib's tab10, in SYSTEMS order).
SYS_COLORS = ["#7f7f7f", "#1f77b4", "#17becf", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd"]


def sys_color(s):
    return SYS_COLORS[min(sys_order(s), len(SYS_COLORS) - 1)]


def plot_fib(summary, path):
    """Writes the fib plot; False when no matplotlib can be found.

    matplotlib is optional. When the running interpreter lacks it, a system
    python3 that has it (Debian's python3-matplotlib) draws the plot from the
    same numbers, passed as JSON."""
    points = [{"system": s, "workers": w, "med": v["ratio_med"], "min": v["ratio_min"],
               "max": v["ratio_max"], "n": v["n"]} for (s, w), v in summary.items()]
    return plot_with(points, path, draw_fib_plot, "--draw-fib-plot")


def plot_link(drawn, png, caption):
    """The report's line for a plot: a link to it, or why there is none."""
    if drawn:
        return f"![{caption}]({png})\n"
    return "(No plot: matplotlib is not importable, here or in /usr/bin/python3.)\n"


def plot_with(points, path, draw, flag):
    """draw(points, path) here, or in a system python3 that has matplotlib."""
    try:
        import matplotlib  # noqa: F401
        return draw(points, path)
    except ImportError:
        pass
    me = os.path.realpath(sys.executable or "")
    for py in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not os.access(py, os.X_OK) or os.path.realpath(py) == me:
            continue
        try:
            r = subprocess.run([py, os.path.abspath(__file__), flag, path],
                               input=json.dumps(points), text=True, capture_output=True,
                               timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and os.path.isfile(path):
            return True
    return False


def draw_fib_plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    systems = sorted({p["system"] for p in points}, key=sys_order)
    for s in systems:
        ps = sorted((p for p in points if p["system"] == s), key=lambda p: p["workers"])
        ws = [p["workers"] for p in ps]
        med = [p["med"] for p in ps]
        err = [[p["med"] - p["min"] for p in ps], [p["max"] - p["med"] for p in ps]]
        ax.errorbar(ws, med, yerr=err, marker="o", capsize=3, color=sys_color(s), label=s)
    ax.set_yscale("log")
    ax.set_xlabel("workers")
    ax.set_ylabel("time relative to serial fib (median, min-max)")
    ax.set_xticks(sorted({p["workers"] for p in points}))
    ax.set_title(f"fib({points[0]['n']}), one spawn and one sync per call")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def kernel_cols(k):
    return (["system", "workers"] + KERNELS[k]["params"] + ["rep", "serial_s", "parallel_s", "ratio"]
            + KERNELS[k]["extra"])


def kernel_configs(k, rows):
    """The parameter sets in a kernel's rows, in the order they were run."""
    seen = []
    for r in rows:
        cfg = tuple(r[c] for c in KERNELS[k]["params"])
        if cfg not in seen:
            seen.append(cfg)
    return seen


def kernel_summary(k, rows):
    return ratio_summary(
        rows, lambda g: {"params": ", ".join(f"{c}={g[0][c]}" for c in KERNELS[k]["params"])})


def plot_speedup(k, panels, path):
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
    return plot_with(points, path, draw_speedup_plot, "--draw-speedup-plot")


def draw_speedup_plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def ratio_table(s):
    """The table fib and every kernel report: per system and worker count, the
    serial and parallel medians, the ratio to serial, the speedup over 1 worker
    and the time relative to ito's at the same worker count."""
    table = []
    for (sysname, w), v in s.items():
        one = s.get((sysname, 1))
        speed = one["par_med"] / v["par_med"] if one and v["par_med"] > 0 else None
        ito = s.get(("ito", w))
        vs_ito = v["par_med"] / ito["par_med"] if ito and ito["par_med"] > 0 else None
        table.append([sysname, w, v["reps"], fmt(v["serial_med"] * 1e3), fmt(v["par_med"] * 1e3),
                      f"{fmt(v['par_min'] * 1e3)} - {fmt(v['par_max'] * 1e3)}",
                      fmt(v["ratio_med"]), f"{fmt(v['ratio_min'])} - {fmt(v['ratio_max'])}",
                      fmt(speed), fmt(vs_ito)])
    return md_table(["system", "workers", "reps", "serial ms", "parallel ms",
                     "parallel min - max", "ratio", "ratio min - max", "speedup", "vs ito"],
                    table)


def kernel_section(k, rows, out):
    rep = [f"## {k}\n"]
    configs = kernel_configs(k, rows)
    if not configs:
        rep.append(f"No {k} results (see Failures).\n")
        return rep
    pnames = KERNELS[k]["params"]
    label = lambda cfg: ", ".join(f"{c}={v}" for c, v in zip(pnames, cfg))
    rep.append(f"{KERNELS[k]['what']}; {'; '.join(label(c) for c in configs)}. Times are "
               "medians over the repetitions (and min - max). *ratio* is "
               "the parallel time divided by the time of the plain serial version of the same "
               "algorithm compiled into the same binary (median and min-max over the "
               "repetitions). *speedup* is the median parallel time at 1 worker divided by that "
               "at this worker count. *vs ito* is the median parallel time divided by ito's "
               "(task_group) at the same worker count, both from this run.\n")
    if k == "bin":
        rep.append(bin_intro())
    panels = []
    for cfg in configs:
        crow = [r for r in rows if tuple(r[c] for c in pnames) == cfg]
        s = kernel_summary(k, crow)
        if len(configs) > 1:
            rep.append(f"### {k}: {label(cfg)}\n")
        if k == "bin":
            rep.append(bin_config_text(cfg))
        rep.append(ratio_table(s))
        rep.append("")
        if k == "bin":
            rep.append(bin_bound_table(crow))
            rep.append("")
        panels.append((f"{k} ({label(cfg)})", s))
    png = f"{k}_speedup.png"
    if len({int(r["workers"]) for r in rows}) < 2:
        rep.append("(No speed-up plot: one worker count only.)\n")
    else:
        rep.append(plot_link(plot_speedup(k, panels, os.path.join(out, png)), png,
                             f"{k}: speedup vs workers"))
    return rep


def bin_t1_calls(n, k):
    """T1(n) / A and Tinf(n) / A by the closed forms of seed 000, 5.5."""
    t1 = (3 * k * (2 * k) ** n - (k + 1)) // (2 * k - 1)
    tinf = 2 * n + 1 if k == 1 else (2 * k ** (n + 1) - (k + 1)) // (k - 1)
    return t1, tinf


def bin_intro():
    return ("With *a* the time of one consume(A), measured by the binary itself before every "
            "repetition (median of five timed batches), the closed forms of seed 000, 5.5 give "
            "the work and the critical path:\n\n"
            "    T1(n)   = a / (2K-1) * (3K (2K)^n - (K+1))\n"
            "    Tinf(n) = a * (2n+1)                        if K = 1\n"
            "            = a / (K-1) * (2 K^(n+1) - (K+1))   if K > 1\n\n"
            "(they solve T1(n) = a + K (2 T1(n-1) + a), Tinf(n) = a + K (Tinf(n-1) + a), "
            "T1(0) = Tinf(0) = a; the paper writes Tinf = 2an for K = 1, leaving out the root's "
            "own a). A greedy scheduler on P workers needs at most T1/P + Tinf (the *bound*); "
            "*measured / bound* above 1 is time lost to the runtime: task overhead, stealing, "
            "idle workers. *serial / T1* is the plain serial recursion against T1 alone (the "
            "cost of the calls and loop around consume). serial runs with P = 1.\n")


def bin_config_text(cfg):
    n, k, a = int(cfg[0]), int(cfg[1]), cfg[2]
    t1, tinf = bin_t1_calls(n, k)
    line = (f"n={n}, K={k}, A={a}: T1 = {t1} a, Tinf = {tinf} a, T1/Tinf = {fmt(t1 / tinf)}.")
    paper_n = BIN_PAPER.get((str(k), str(a)))
    if paper_n is not None:
        pt1, ptinf = bin_t1_calls(int(paper_n), k)
        line += (f" The paper's configuration with this K and A is n={paper_n} (T1 = {pt1} a, "
                 f"Tinf = {ptinf} a, T1/Tinf = {fmt(pt1 / ptinf)}), A in clock cycles there"
                 + (", n reduced here so that a run takes seconds; K and the grain A are kept."
                    if n < int(paper_n) else "."))
    return line + "\n"


def bin_bound_table(rows):
    """Per system and worker count: a, T1, Tinf, the bound and the measured time."""
    groups = group_rows(rows)
    table = []
    for (sysname, w) in sorted(groups, key=lambda kk: (sys_order(kk[0]), kk[1])):
        g = groups[(sysname, w)]
        med = lambda c: statistics.median(float(r[c]) for r in g)
        par = [float(r["parallel_s"]) for r in g]
        bound = med("bound_s")
        # each repetition against its own bound, then the median
        over = statistics.median(float(r["parallel_s"]) / float(r["bound_s"]) for r in g
                                 if float(r["bound_s"]) > 0) if bound > 0 else None
        ser = statistics.median(float(r["serial_s"]) / float(r["t1_s"]) for r in g
                                if float(r["t1_s"]) > 0) if med("t1_s") > 0 else None
        table.append([sysname, w, fmt(med("consume_ns") / 1e3), fmt(med("t1_s") * 1e3),
                      fmt(med("tinf_s") * 1e3), fmt(bound * 1e3), fmt(statistics.median(par) * 1e3),
                      f"{fmt(min(par) * 1e3)} - {fmt(max(par) * 1e3)}", fmt(over), fmt(ser)])
    return md_table(["system", "P", "a us", "T1 ms", "Tinf ms", "T1/P + Tinf ms",
                     "measured ms", "min - max", "measured / bound", "serial / T1"], table)


def create_p_section(args, rows, out):
    it, meas, drop = CREATE_P_ARGS[args.quick]
    rep = ["## create_p: task creation on P workers at once\n"]
    rep.append(f"Seed 000, 5.3: the root spawns P tasks (P = workers) that meet at a spin barrier "
               f"and then each run `for {it} times: spawn(null_task); sync;` as one measurement "
               f"(a barrier before each), {meas} measurements, the first {drop} dropped. "
               "ns per iteration is the mean over the P tasks of each task's own time per "
               "iteration; the table gives its median (min, max) over the measurements, "
               "*vs 1 worker* the median divided by this system's median at 1 worker, and "
               "*vs ito* the median divided by ito's (task_group) median at the same worker "
               "count in this run. The plot is seed 000's figure 2: time per task vs workers, "
               "log scale.\n")
    groups = group_rows(rows, lambda r: float(r["ns_per_iter"]))
    if not groups:
        return rep + ["No create_p results (see Failures).\n"]
    table, points = [], []
    for (sysname, w) in sorted(groups, key=lambda k: (sys_order(k[0]), k[1])):
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
        drawn = plot_with(points, os.path.join(out, "create_p.png"), draw_create_p_plot,
                          "--draw-create-p-plot")
        rep.append(plot_link(drawn, "create_p.png", "create_p: ns per task vs workers"))
    return rep


def draw_create_p_plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for s in sorted({p["system"] for p in points}, key=sys_order):
        ps = sorted((p for p in points if p["system"] == s), key=lambda p: p["workers"])
        err = [[p["med"] - p["min"] for p in ps], [p["max"] - p["med"] for p in ps]]
        ax.errorbar([p["workers"] for p in ps], [p["med"] for p in ps], yerr=err, marker="o",
                    capsize=3, color=sys_color(s), label=s)
    ax.set_yscale("log")
    ax.set_xlabel("workers (P tasks creating at once)")
    ax.set_ylabel("ns per spawn+sync per worker (median, min-max)")
    ax.set_xticks(sorted({p["workers"] for p in points}))
    ax.set_title("create_p: time per task on P workers at once (seed 000, 5.3, figure 2)",
                 fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def migration_section(args, rows, out):
    reps, drop = MIGRATION_ARGS[args.quick]
    rep = ["## migration: time for one task to move\n"]
    rep.append(f"Seed 000, 5.4.1: the parent records t0 and spawns a child, which records t1 as "
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
    groups = group_rows(rows, lambda r: (float(r["child_start_ns"]), float(r["parent_resume_ns"])))
    if not groups:
        return rep + ["No migration results (see Failures).\n"]

    pct = percentile  # short: the table and plot lines below use it eight times
    table, points = [], []
    ito = groups.get(("ito", max(w for _, w in groups)))
    ito_move = max(statistics.median(x[0] for x in ito), statistics.median(x[1] for x in ito)) \
        if ito else None
    for (sysname, w) in sorted(groups, key=lambda k: (sys_order(k[0]), k[1])):
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
    drawn = plot_with(points, os.path.join(out, "migration.png"), draw_migration_plot,
                      "--draw-migration-plot")
    rep.append(plot_link(drawn, "migration.png", "migration: median child start and parent resume"))
    return rep


def draw_migration_plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    ax.set_title(f"migration latency with {points[0]['workers']} workers (seed 000, 5.4.1)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def spreading_section(args, rows, out):
    trials, busy = SPREAD_ARGS[args.quick]
    rep = ["## spreading: tasks reaching P workers\n"]
    rep.append(f"Seed 000, 5.4.2: a binary tree of spawns with P leaves (P = workers); each leaf "
               f"records its start time relative to the root's start and busy-waits {busy} us, "
               f"so the leaves must spread over the workers. {trials} trials. *last leaf* is the "
               "time until the last leaf started (median, min, max over the trials); *median "
               "leaf* the median over all leaves and trials; *vs ito* the *last leaf* median "
               "divided by ito's (task_group) in this run. serial runs the same P leaves one "
               f"after another (about (P-1) x {busy} us): the no-spreading baseline.\n")
    per = {}
    for r in rows:
        per.setdefault((r["system"], int(r["workers"])), {}).setdefault(
            int(r["trial"]), []).append(float(r["start_us"]))
    if not per:
        return rep + ["No spreading results (see Failures).\n"]
    ito = [k for k in per if k[0] == "ito"]
    ito_last = statistics.median(max(v) for v in per[ito[0]].values()) if ito else None
    table, points = [], []
    for (sysname, w) in sorted(per, key=lambda k: (sys_order(k[0]), k[1])):
        tr = per[(sysname, w)]
        last = [max(v) for v in tr.values()]
        allv = [x for v in tr.values() for x in v]
        table.append([sysname, w, len(next(iter(tr.values()))), len(tr),
                      fmt(statistics.median(last)), fmt(min(last)), fmt(max(last)),
                      fmt(statistics.median(allv)),
                      fmt(statistics.median(last) / ito_last) if ito_last else "n/a"])
        # seed 000's figure 5 overlays 20 of its 30 trials: the first 10 are left out
        keep = sorted(tr)[10:] if len(tr) > 10 else sorted(tr)
        points.append({"system": sysname, "workers": w, "busy": busy, "dropped": len(tr) - len(keep),
                       "trials": [sorted(tr[t]) for t in keep]})
    rep.append(md_table(["system", "workers", "leaves", "trials", "last leaf us (median)", "min",
                         "max", "median leaf us", "vs ito"], table))
    rep.append("")
    drawn = plot_with(points, os.path.join(out, "spreading.png"), draw_spreading_plot,
                      "--draw-spreading-plot")
    rep.append(plot_link(drawn, "spreading.png",
                         "spreading: sorted leaf start times per trial, one panel per system"))
    return rep


def draw_spreading_plot(points, path):
    """Seed 000's figure 5: per system, each trial's leaf start times sorted, as
    a curve over the leaf's rank (point (x, y): the x-th leaf to start started
    at y). All panels share a log time axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
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
    fig.suptitle(f"spreading (seed 000, 5.4.2, figure 5): sorted leaf start times, {kept} trials"
                 + (f" (first {p0['dropped']} left out)" if p0["dropped"] else "")
                 + f", leaves busy {p0['busy']} us", fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def total_others(runner):
    o = [sum(v[0] for v in runner.others.values()), sum(v[1] for v in runner.others.values())]
    if o[1] <= 0:
        return "unknown"
    return (f"{fmt(o[0] / o[1])} cores on average (CPU time not spent by the benchmarks, from "
            "/proc/stat); each section gives its own figure. They disturb the timings.")


def with_others(runner, bench, section):
    """A section's lines with the machine-load line after its heading."""
    line = runner.others_line(bench)
    return section[:1] + [line] + section[1:] if line else section


def write_report(args, out, results, runner, started, skipped):
    rep = []
    rep.append("# ito benchmark report\n")
    rep.append("Generated by `bench/run.py` from the CSVs of this run; nothing here is typed by hand.\n")
    rep.append(md_table(["", ""], [
        ["date", started.isoformat(timespec="seconds")],
        ["CPU", cpu_model()],
        ["cores (usable / online)", f"{ncpus()} / {os.cpu_count()}"],
        ["kernel", f"{platform.system()} {platform.release()} {platform.machine()}"],
        ["load average (1 min) at start / end", f"{fmt(args.load_start)} / {fmt(load1())}"],
        ["other processes during the runs", total_others(runner)],
        ["command", "`run.py " + " ".join(sys.argv[1:]) + "`"],
        ["binaries", f"`{os.path.relpath(args.bindir, ROOT) if args.bindir.startswith(ROOT) else args.bindir}`"],
    ]))
    rep.append("")
    if runner.meta:
        rep.append("Compilers, as each binary reports them:\n")
        seen = {}
        for what, ms in runner.meta.items():
            for m in ms:
                parts = dict(kv.split("=", 1) for kv in _split_meta(m) if "=" in kv)
                if "compiler" in parts and "system" in parts:
                    seen.setdefault(parts["system"], parts["compiler"].strip('"').strip())
        rep.append(md_table(["system", "compiler"],
                            [[s, f"`{c}`"] for s, c in sorted(seen.items(), key=lambda kv: sys_order(kv[0]))]))
        rep.append("")

    if skipped:
        rep.append("Not built, so not run: " + ", ".join(f"`{b}`" for b in skipped) + ".\n")

    if runner.failures:
        rep.append("## Failures\n")
        for what, msg, tail in runner.failures:
            rep.append(f"- **{what}**: {msg}")
            for ln in tail:
                rep.append(f"    - `{ln}`")
        rep.append("")

    if "fib" in results:
        rows = results["fib"]
        rep.append("## fib\n")
        if runner.others_line("fib"):
            rep.append(runner.others_line("fib"))
        s = fib_summary(rows)
        if not s:
            rep.append("No fib results.\n")
        else:
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
            rep.append(plot_link(plot_fib(s, os.path.join(out, "fib.png")), "fib.png",
                                 "fib: time relative to serial vs workers"))

    if "spawn_loop" in results:
        rows = results["spawn_loop"]
        rep.append("## spawn loop\n")
        if runner.others_line("spawn_loop"):
            rep.append(runner.others_line("spawn_loop"))
        clock = {}
        for m in runner.meta.get("spawn_loop", []):
            kv = dict(x.split("=", 1) for x in _split_meta(m) if "=" in x)
            if "clock" in kv and "ghz" in kv:
                clock.setdefault(kv["clock"], []).append(float(kv["ghz"]))
        clock_txt = ", ".join(f"`{c}` at {fmt(statistics.median(g), 4)} GHz (measured against "
                              "CLOCK_MONOTONIC)" for c, g in clock.items()) or "not reported"
        rep.append(f"`for {SPAWN_ITERS} times: spawn(null_task); sync;` timed as one measurement, "
                   f"{SPAWN_MEAS} measurements, the first {SPAWN_DROP} dropped (seed 000, 5.1-5.2). "
                   "Nanoseconds and clocks per iteration (one spawn + one sync), median (min, "
                   "max) over the measurements; *vs ito* is the median divided by ito's "
                   f"(task_group) in this run. Clocks are the processor's counter: {clock_txt}.\n")
        groups = group_rows(rows, lambda r: (float(r["ns_per_iter"]), float(r["clocks_per_iter"])))
        ito = groups.get(("ito", 1))
        ito_med = statistics.median(x[0] for x in ito) if ito else None
        table = []
        for (sysname, w) in sorted(groups, key=lambda k: (sys_order(k[0]), k[1])):
            v = [x[0] for x in groups[(sysname, w)]]
            c = [x[1] for x in groups[(sysname, w)]]
            med = statistics.median(v)
            table.append([sysname, w, len(v), fmt(med), fmt(min(v)), fmt(max(v)),
                          fmt(statistics.median(c)), f"{fmt(min(c))} - {fmt(max(c))}",
                          fmt(med / ito_med) if ito_med else "n/a"])
        rep.append(md_table(["system", "workers", "measurements", "median ns", "min ns", "max ns",
                             "median clocks", "clocks min - max", "vs ito"], table))
        rep.append("")

    if "create_p" in results:
        rep.extend(with_others(runner, "create_p", create_p_section(args, results["create_p"], out)))
    if "migration" in results:
        rep.extend(with_others(runner, "migration", migration_section(args, results["migration"], out)))
    if "spreading" in results:
        rep.extend(with_others(runner, "spreading", spreading_section(args, results["spreading"], out)))

    for k in KERNELS:
        if k in results:
            rep.extend(with_others(runner, k, kernel_section(k, results[k], out)))

    if "million" in results:
        rows = results["million"]
        rep.append("## million threads\n")
        if runner.others_line("million"):
            rep.append(runner.others_line("million"))
        rep.append("N ito threads alive at once, each blocked on one barrier of N+1 that the main "
                   "thread joins last; then all are joined. *bytes/thread* is the growth of the "
                   "peak resident set (VmHWM) over the run divided by N; RSS and page tables "
                   "(VmPTE) are sampled with all N threads blocked.\n")
        if rows:
            table = []
            for r in rows:
                table.append([r["n"], r["workers"], fmt(float(r["wall_s"])),
                              fmt(float(r["create_s"])), fmt(float(r["finish_s"])),
                              r["hwm_start_kb"], r["hwm_end_kb"], r["rss_peak_kb"],
                              r["pte_peak_kb"], fmt(float(r["bytes_per_thread"]), 4)])
            rep.append(md_table(["N", "workers", "wall s", "create s", "release+join s",
                                 "VmHWM start kB", "VmHWM end kB", "VmRSS peak kB",
                                 "VmPTE peak kB", "bytes/thread"], table))
        elif "million" in skipped:
            rep.append("Not built (it needs the ito library).")
        else:
            rep.append("No result (see Failures).")
        rep.append("")
        if rows:
            rep.append("One run, ito only (no other system here has blocking lightweight "
                       "threads), so there is neither a spread nor a ratio to ito.\n")

    rep.extend(idle_bench.section(sys.modules[__name__], args, results, runner))

    rep.extend(omp_bench.section(sys.modules[__name__], args, results, runner))

    if "echo" in results:
        rep.extend(with_others(runner, "echo", echo_section(results["echo"], runner)))

    plots = [ln for ln in rep if ln.startswith("![")]
    if plots:
        at = rep.index("## Failures\n") if "## Failures\n" in rep else next(
            i for i, ln in enumerate(rep) if ln.startswith("## "))
        pngs = [ln[ln.index("](") + 2:ln.rindex(")")] for ln in plots]
        rep[at:at] = ["Plots in this report: " + ", ".join(f"[{p}]({p})" for p in pngs) + ".\n"]
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("\n".join(rep) + "\n")


def echo_section(rows, runner):
    """docs/dropin.md, section 9: per system the medians over the repetitions,
    then the three targets (ito against pthreads and against epoll)."""
    rep = ["## echo: many connections\n"]
    rep.append("An echo server per system on 127.0.0.1, driven by `loadgen` (closed loop per "
               "connection: a 64-byte message with a sequence number, its echo checked byte "
               "for byte). *pthreads*: `echo_threads`, one OS thread per connection; *ito*: the "
               "same binary under `LD_PRELOAD=libito-pthread.so`; *epoll*: `echo_epoll`, one "
               "thread and level-triggered epoll. *rps/core*: requests/s divided by the "
               "server's CPU (utime+stime over the measured window, in cores). *peak RSS*: "
               "the server's VmHWM. Kernel memory: /proc/meminfo growth from before connecting "
               "to the largest sample in the window (system-wide: the client's sockets are in "
               "Slab too). Medians over the repetitions.\n")
    notes = sorted({m.split("note=", 1)[1].strip('"') for m in runner.meta.get("echo", [])
                    if "note=" in m})
    for n in notes:
        rep.append(f"**Note:** {n}.\n")
    by = {}
    for r in rows:
        by.setdefault(r["system"], []).append(r)
    if not by:
        return rep + ["No echo results (see Failures).\n"]
    med = {s: {c: statistics.median(float(r[c]) for r in g) for c in ECHO_COLS if c != "system"}
           for s, g in by.items()}
    table = []
    for s, m in med.items():
        kmem = m["kernel_stack_kib"] + m["page_tables_kib"] + m["slab_kib"]
        table.append([s, int(m["conns"]), len(by[s]), fmt(m["rps"]), fmt(m["server_cores"]),
                      fmt(m["rps_per_core"]), fmt(m["peak_rss_kib"] / 1024),
                      fmt(m["rss_per_conn_b"] / 1024), fmt(m["kernel_stack_kib"] / 1024),
                      fmt(m["page_tables_kib"] / 1024), fmt(m["slab_kib"] / 1024),
                      fmt(kmem / 1024), int(m["server_threads"])])
    rep.append(md_table(["system", "conns", "reps", "requests/s", "server cores", "rps/core",
                         "peak RSS MiB", "RSS KiB/conn", "KernelStack MiB", "PageTables MiB",
                         "Slab MiB", "kernel MiB", "OS threads"], table))
    rep.append("")
    ito, pt, ep = med.get("ito"), med.get("pthreads"), med.get("epoll")
    if ito:
        t = []
        if pt:
            kmem = lambda m: m["kernel_stack_kib"] + m["page_tables_kib"] + m["slab_kib"]
            t.append(["requests/s, ito / pthreads", fmt(ito["rps"] / pt["rps"]), ">= 2"])
            t.append(["peak RSS, ito / pthreads", fmt(ito["peak_rss_kib"] / pt["peak_rss_kib"]),
                      "<= 0.2"])
            t.append(["peak RSS + kernel memory, ito / pthreads",
                      fmt((ito["peak_rss_kib"] + kmem(ito)) / (pt["peak_rss_kib"] + kmem(pt))),
                      "(beside it)"])
        if ep and ep["rps_per_core"] > 0:
            t.append(["requests/s per core, ito / epoll",
                      fmt(ito["rps_per_core"] / ep["rps_per_core"]), ">= 0.8"])
        rep.append("Targets (docs/dropin.md, section 9; the RSS target is on RSS alone, the "
                   "row with kernel memory is beside it):\n")
        rep.append(md_table(["ratio", "measured", "target"], t))
        rep.append("")
    return rep


def _split_meta(m):
    """Splits 'a=1 b="x y"' into ['a=1', 'b="x y"']."""
    out, cur, q = [], "", False
    for ch in m:
        if ch == '"':
            q = not q
        if ch == " " and not q:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


# --------------------------------------------------------------------------- main

def main(argv):
    if len(argv) == 2 and argv[0] == "--draw-fib-plot":  # internal: see plot_fib
        return 0 if draw_fib_plot(json.load(sys.stdin), argv[1]) else 1
    if len(argv) == 2 and argv[0] == "--draw-speedup-plot":  # internal: see plot_speedup
        return 0 if draw_speedup_plot(json.load(sys.stdin), argv[1]) else 1
    if len(argv) == 2 and argv[0] == "--draw-create-p-plot":  # internal: see create_p_section
        return 0 if draw_create_p_plot(json.load(sys.stdin), argv[1]) else 1
    if len(argv) == 2 and argv[0] == "--draw-migration-plot":  # internal: see migration_section
        return 0 if draw_migration_plot(json.load(sys.stdin), argv[1]) else 1
    if len(argv) == 2 and argv[0] == "--draw-spreading-plot":  # internal: see spreading_section
        return 0 if draw_spreading_plot(json.load(sys.stdin), argv[1]) else 1
    if len(argv) == 2 and argv[0] == "--draw-wake-plot":  # internal: see idle_bench.wake_part
        return 0 if idle_bench.draw_wake_plot(json.load(sys.stdin), argv[1]) else 1
    args = parse_args(argv)
    args.bindir = os.path.abspath(args.bindir)
    out = os.path.abspath(args.out)
    if not os.path.isdir(args.bindir):
        print(f"run.py: no binaries: {args.bindir} does not exist (run `make bench` or "
              "`cmake --build build` first)", file=sys.stderr)
        return 2
    os.makedirs(out, exist_ok=True)
    started = datetime.datetime.now().astimezone()
    args.load_start = load1()

    plan = []  # (bench, what, cmd, env, cols, rows)
    skipped = []
    if "fib" in args.benches:
        for s in SYSTEMS:
            b = find_binary(args.bindir, f"fib_{s}")
            if not b:
                skipped.append(f"fib_{s}")
                continue
            ws = [min(args.workers)] if s == "serial" else args.workers
            for w in ws:
                plan.append(("fib", f"fib {s} workers={w}", [b, str(args.fib_n), str(args.reps)],
                             worker_env(w), FIB_COLS, args.reps))
    if "spawn_loop" in args.benches:
        for s in SYSTEMS:
            b = find_binary(args.bindir, f"spawn_loop_{s}")
            if not b:
                skipped.append(f"spawn_loop_{s}")
                continue
            plan.append(("spawn_loop", f"spawn_loop {s} workers=1",
                         [b, str(SPAWN_ITERS), str(SPAWN_MEAS), str(SPAWN_DROP)],
                         worker_env(1), SPAWN_LOOP_COLS, SPAWN_MEAS - SPAWN_DROP))
    if "create_p" in args.benches:
        it, meas, drop = CREATE_P_ARGS[args.quick]
        for s in SYSTEMS:
            b = find_binary(args.bindir, f"create_p_{s}")
            if not b:
                skipped.append(f"create_p_{s}")
                continue
            for w in ([1] if s == "serial" else args.workers):
                plan.append(("create_p", f"create_p {s} workers={w}",
                             [b, str(it), str(meas), str(drop)], worker_env(w), SPAWN_COLS,
                             meas - drop))
    if "migration" in args.benches:
        reps, drop = MIGRATION_ARGS[args.quick]
        w = max(2, max(args.workers))
        for s in SYSTEMS:
            if s == "serial":  # the handshake needs two workers
                continue
            b = find_binary(args.bindir, f"migration_{s}")
            if not b:
                skipped.append(f"migration_{s}")
                continue
            plan.append(("migration", f"migration {s} workers={w}", [b, str(reps), str(drop)],
                         worker_env(w), MIGRATION_COLS, reps - drop))
    if "spreading" in args.benches:
        trials, busy = SPREAD_ARGS[args.quick]
        w = max(args.workers)
        for s in SYSTEMS:
            b = find_binary(args.bindir, f"spreading_{s}")
            if not b:
                skipped.append(f"spreading_{s}")
                continue
            # serial runs the same w leaves one after another: the baseline
            plan.append(("spreading", f"spreading {s} workers={w}",
                         [b, str(trials), str(w), str(busy)], worker_env(w), SPREAD_COLS,
                         trials * w))
    for k in KERNELS:
        if k not in args.benches:
            continue
        for cfg in args.kernel_args[k]:
            for s in SYSTEMS:
                b = find_binary(args.bindir, f"{k}_{s}")
                if not b:
                    if f"{k}_{s}" not in skipped:
                        skipped.append(f"{k}_{s}")
                    continue
                ws = [min(args.workers)] if s == "serial" else args.workers
                for w in ws:
                    what = f"{k} {s} workers={w}"
                    if len(args.kernel_args[k]) > 1:
                        what = f"{k}({','.join(cfg)}) {s} workers={w}"
                    plan.append((k, what, [b] + cfg + [str(args.kernel_reps)],
                                 worker_env(w), kernel_cols(k), args.kernel_reps))
    if "million" in args.benches:
        b = find_binary(args.bindir, "million")
        if not b:
            skipped.append("million")
        else:
            w = max(args.workers)
            plan.append(("million", f"million workers={w}", [b, str(args.million_n)],
                         worker_env(w), MILLION_COLS, 1))

    if "echo" in args.benches:
        edir = os.path.join(args.bindir, "echo")
        thr, epl, lg = (find_binary(edir, n) for n in ("echo_threads", "echo_epoll", "loadgen"))
        shim = os.path.abspath(args.shim or os.path.join(os.path.dirname(args.bindir),
                                                         "libito-pthread.so"))
        systems = []
        if thr:
            systems.append(("pthreads", thr, {}))
            if os.path.isfile(shim):
                systems.append(("ito", thr, {"LD_PRELOAD": shim}))
            else:
                skipped.append(f"echo ito (no {shim})")
        if epl:
            systems.append(("epoll", epl, {}))
        if not lg or not systems:
            skipped.append("echo")
        else:
            for name, binary, env in systems:
                cmd = [sys.executable, run_echo.__file__, "--csv", "--name", name,
                       "--server", binary, "--loadgen", lg, "--conns", str(args.echo_conns),
                       "--warmup", str(args.echo_warmup), "--duration", str(args.echo_duration),
                       "--reps", str(args.kernel_reps)]
                cmd += [f"--env={k}={v}" for k, v in env.items()]
                plan.append(("echo", f"echo {name} conns={args.echo_conns}", cmd,
                             dict(os.environ), ECHO_COLS, args.kernel_reps))

    idle_plan, idle_skipped = idle_bench.plan(args, sys.modules[__name__])
    plan.extend(idle_plan)
    skipped.extend(idle_skipped)
    omp_plan, omp_skipped = omp_bench.plan(args, sys.modules[__name__])
    plan.extend(omp_plan)
    skipped.extend(omp_skipped)

    if skipped:
        print(f"run.py: not built, skipped: {', '.join(skipped)}", flush=True)
    if not plan:
        print(f"run.py: no benchmark binaries found in {args.bindir}", file=sys.stderr)
        return 2

    runner = Runner(len(plan), args.timeout)
    results = {b: [] for b in args.benches if b not in idle_bench.BENCHES}
    results.update({k: [] for k in idle_bench.result_keys(args.benches)})
    for bench, what, cmd, env, cols, nrows, *fields in plan:
        if bench in omp_bench.BENCHES:  # its own runner: keeps runs that did not finish
            results[bench].extend(omp_bench.execute(sys.modules[__name__], runner, bench, what,
                                                    cmd, env, nrows, fields[1]))
            continue
        rows = runner.run(what, cmd, env, cols, nrows, bench)
        if fields and fields[0]:  # e.g. a pseudo-system (ito_active runs ito's binary)
            for r in rows:
                r.update(fields[0])
        if bench == "million":
            for r in rows:
                if int(r["n"]) != args.million_n:
                    runner.fail(what, f"reported n={r['n']}, asked for {args.million_n}", "")
        if bench in KERNELS:
            want = cmd[1:1 + len(KERNELS[bench]["params"])]
            for r in rows:
                got = [r[c] for c in KERNELS[bench]["params"]]
                if [int(x) for x in got] != [int(x) for x in want]:
                    runner.fail(what, f"reported parameters {got}, asked for {want}", "")
                    break
        results[bench].extend(rows)

    cols = {"fib": FIB_COLS, "spawn_loop": SPAWN_LOOP_COLS, "million": MILLION_COLS,
            "create_p": SPAWN_COLS, "migration": MIGRATION_COLS, "spreading": SPREAD_COLS}
    cols.update({k: kernel_cols(k) for k in KERNELS})
    cols.update(idle_bench.CSV_COLS)
    cols["policy_bin"] = kernel_cols("bin") + ["round"]
    cols["echo"] = ECHO_COLS
    cols.update(omp_bench.CSV_COLS)
    for bench, rows in results.items():
        write_csv(os.path.join(out, f"{bench}.csv"), cols[bench], rows)
    write_report(args, out, results, runner, started, skipped)
    print(f"run.py: wrote {', '.join(b + '.csv' for b in results)} and REPORT.md in {out}")

    if runner.failures:
        print(f"run.py: {len(runner.failures)} of {len(plan)} runs FAILED:", file=sys.stderr)
        for what, msg, _ in runner.failures:
            print(f"  {what}: {msg}", file=sys.stderr)
        return 1
    print(f"run.py: all {len(plan)} runs passed their checks")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
