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
                                                           configurations of Taura and
                                                           Nakashima, section 5.5
  million     million N                once, with the largest worker count
  idle_cpu, wake, alternate, policy, shutdown
              the idle-worker benchmarks (bench/idle_bench.py), after Odo,
              Nakashima and Taura, at the largest worker count
  omp_fib, omp_qsort, omp_matmul, omp_jacobi, omp_jacobi_task, omp_sparselu,
  omp_sparselu_task, omp_strassen, omp_strassen_task, omp_wavefront, omp_taskred
              the OpenMP programs of bench/omp/ (bench/omp/omp_bench.py), one
              gcc -fopenmp binary each, under libgomp, LLVM's libomp and
              libito-omp.so (LD_PRELOAD) at the smallest, 2 and the largest
              worker count; the ito runs are skipped, with a note, while libito-omp.so is missing
  mpi_halo    bench/mpi/halo.cpp under mpirun -np 2 and 4: a halo-exchange
              stencil, MPI's blocking exchange against lightweight threads
              that park in it (libito-mpi.so)
  mpi_gups    bench/mpi/gups.cpp under mpirun -np 2 and 4: HPCC RandomAccess,
              HPCC's MPI algorithm against remote updates sent and received
              by lightweight threads parked in MPI_Send / MPI_Recv; HPCC's
              error rule checked
  mpi_dfib    bench/mpi/dfib.cpp under mpirun -np 1, 2 and 4: fib whose upper
              levels send subtrees to other ranks and wait for the answers
              in a blocking MPI_Recv (parked by libito-mpi.so)
  echo        only with --bench echo (not in the default set: it needs about
              2 x 10,000 file descriptors): echo/run_echo.py with
              echo/echo_threads natively (pthreads) and under
              LD_PRELOAD=libito-pthread.so (ito), and echo/echo_epoll (epoll)

and writes OUT/<bench>.csv for each and OUT/REPORT.md, plus, when matplotlib
can be imported (here or in /usr/bin/python3), the plots the report links:
fib.png, create_p.png (time per task vs workers, log scale: figure 2 of
Taura and Nakashima), migration.png (latency bars), spreading.png (sorted
leaf start times: their figure 5) and <kernel>_speedup.png (speed-up
curves: their figure 6). Everything in the report is computed from the CSVs
of this run.

The papers, by their authors (docs/references.md lists them): Taura and
Nakashima, 'A Comparative Study of Six Task Parallel Programming Systems';
Odo, Nakashima and Taura, 'Scheduling strategy focused on resource
efficiency in Task-Parallel framework'.

Each benchmark is one module of bench/benches/ (what it measures, its runs,
its CSV columns, its report section and plot); bench/harness/ holds what
they share, and says how to add one. This script parses the command line,
runs the benchmarks' runs and writes the report's header around their
sections.

The worker count is handed to every runtime through its own variable:
ITO_NUM_WORKERS (ito), OMP_NUM_THREADS (OpenMP), BENCH_WORKERS (oneTBB).

Every benchmark checks its own answer and exits nonzero on a wrong one; this
script exits nonzero if any run failed or printed malformed output, so
`run.py --quick` is a correctness smoke test (it never judges timings).
"""
import argparse
import datetime
import os
import platform
import sys

import benches
from harness import (ROOT, Context, Kernel, Runner, cpu_model, fmt, load1, md_table,
                     meta_fields, ncpus, sys_order, write_csv)
from harness import kernel, plot


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
    p.add_argument("--bench", choices=benches.default_names() + benches.optional_names(),
                   action="append",
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
    for b in benches.ALL:  # options of a benchmark's own (the OpenMP ones)
        b.add_args(p)
    a = p.parse_args(argv)
    a.benches = a.bench or benches.default_names()
    if a.workers is None:
        a.workers = [1, 2] if a.quick else list(range(1, ncpus() + 1))
    if a.fib_n is None:
        a.fib_n = 20 if a.quick else 35
    a.kernel_reps = a.reps if a.reps is not None else (2 if a.quick else 3)
    if a.reps is None:
        a.reps = 2 if a.quick else 5
    kernel.parse_params(a, p, [b for b in benches.ALL if isinstance(b, Kernel)])
    if a.timeout is None:
        a.timeout = 120.0 if a.quick else 900.0
    for b in benches.ALL:
        b.finish_args(a, p)
    return a


# --------------------------------------------------------------------------- report

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
        ["other processes during the runs", runner.total_others()],
        ["command", "`run.py " + " ".join(sys.argv[1:]) + "`"],
        ["binaries", f"`{os.path.relpath(args.bindir, ROOT) if args.bindir.startswith(ROOT) else args.bindir}`"],
    ]))
    rep.append("")
    if runner.meta:
        rep.append("Compilers, as each binary reports them:\n")
        seen = {}
        for what, ms in runner.meta.items():
            for m in ms:
                parts = meta_fields(m)
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

    ctx = Context(args=args, out=out, results=results, runner=runner, skipped=skipped)
    for b in benches.ALL:
        if any(k in results for k in b.csv_cols()):
            rep.extend(b.section(ctx))

    plots = [ln for ln in rep if ln.startswith("![")]
    if plots:
        at = rep.index("## Failures\n") if "## Failures\n" in rep else next(
            i for i, ln in enumerate(rep) if ln.startswith("## "))
        pngs = [ln[ln.index("](") + 2:ln.rindex(")")] for ln in plots]
        rep[at:at] = ["Plots in this report: " + ", ".join(f"[{p}]({p})" for p in pngs) + ".\n"]
    with open(os.path.join(out, "REPORT.md"), "w") as f:
        f.write("\n".join(rep) + "\n")


# --------------------------------------------------------------------------- main

def main(argv):
    if len(argv) == 3 and argv[0] == plot.DRAW_FLAG:  # internal: see harness/plot.py
        return plot.draw_main(argv[1:])
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

    plan = []  # (benchmark, run)
    skipped = []
    for b in benches.ALL:
        if any(n in args.benches for n in b.names):
            runs, left_out = b.plan(args)
            plan.extend((b, r) for r in runs)
            skipped.extend(left_out)

    if skipped:
        print(f"run.py: not built, skipped: {', '.join(skipped)}", flush=True)
    if not plan:
        print(f"run.py: no benchmark binaries found in {args.bindir}", file=sys.stderr)
        return 2

    runner = Runner(len(plan), args.timeout)
    named = benches.by_name()
    results = {k: [] for n in args.benches for k in named[n].keys(n)}
    for b, run in plan:
        results[run.bench].extend(b.execute(runner, run))

    cols = {k: c for b in benches.ALL for k, c in b.csv_cols().items()}
    for key, rows in results.items():
        write_csv(os.path.join(out, f"{key}.csv"), cols[key], rows)
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
