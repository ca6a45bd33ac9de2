"""The shared pieces of bench/run.py; the benchmarks themselves are in bench/benches/.

  machine.py    the CPUs, their load, cpu model; where the tree lies (ROOT)
  systems.py    SYSTEMS, their order and plot colours, finding <bench>_<system>
                binaries, the worker-count environment
  runner.py     Run (one process to start) and Runner (starts them, checks
                their CSV output, records failures, metadata and machine load)
  csvio.py      parsing a binary's output, writing OUT/<key>.csv
  stats.py      medians and percentiles over CSV rows, grouped per system
  report.py     number formatting, Markdown tables, plot links
  plot.py       drawing with matplotlib here or in a system python3
  benchmark.py  Benchmark, the interface of a benchmark module; Context
  kernel.py     Kernel: a Benchmark for kernels built like fib, with parameters

run.py parses the command line, asks every benchmark for its runs, runs them
all (numbered, so that the progress lines count to the total), writes one CSV
per result key and then REPORT.md: a header (machine, compilers, what was not
built, failures) and one section per benchmark, in the order of
benches.NAMES.

Adding a benchmark: write bench/benches/<name>.py whose docstring says what
it measures and which defines BENCH, an instance of a harness.Benchmark
subclass; or, for a program built like fib that prints
system,workers,<params>,rep,serial_s,parallel_s,ratio, BENCH = Kernel(...)
with its parameters, their default and --quick sets and a line for the
report, and nothing else. A Benchmark gives `names` (its --bench names),
`columns` (its CSV's columns; csv_cols() where it writes several CSVs),
plan(args) (its Runs: binary, arguments, environment, expected CSV header
and row count, and what was not built) and section(ctx) (its part of
REPORT.md, a "## " heading first, plots drawn with plot.plot_with); where it
needs them also add_args/finish_args (options of its own), keys(name) (the
CSVs of one name) and execute(runner, run) (checks of its own). Then add
its name to NAMES in bench/benches/__init__.py, at the place the report
should show it, and, when it is a C++ program built per system, its source
to BENCH_CXX_BENCHES in bench/CMakeLists.txt. Nothing in run.py changes.
"""
from .benchmark import Benchmark, Context
from .csvio import meta_fields, parse_output, split_meta, write_csv
from .kernel import Kernel
from .machine import (BENCH_DIR, ROOT, children_cpu_s, cpu_busy_s, cpu_model, load1,
                      ncpus)
from .plot import plot_with
from .report import fmt, md_table, plot_link, ratio_table, with_others
from .runner import Run, Runner
from .stats import by_system, group_rows, percentile, ratio_summary
from .systems import (SYSTEMS, each_system, find_binary, sys_color, sys_order, worker_env,
                      workers_for)

__all__ = ["Benchmark", "Context", "meta_fields", "parse_output", "split_meta", "write_csv",
           "Kernel", "BENCH_DIR", "ROOT", "children_cpu_s", "cpu_busy_s", "cpu_model",
           "load1", "ncpus", "plot_with", "fmt", "md_table", "plot_link", "ratio_table",
           "with_others", "Run", "Runner", "by_system", "group_rows", "percentile",
           "ratio_summary", "SYSTEMS", "each_system", "find_binary", "sys_color", "sys_order",
           "worker_env", "workers_for"]
