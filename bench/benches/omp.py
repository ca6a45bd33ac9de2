"""omp_fib, omp_qsort, omp_matmul, omp_jacobi(_task), omp_sparselu(_task),
omp_strassen(_task), omp_wavefront, omp_taskred: one gcc -fopenmp binary
each, under libgomp, LLVM's libomp and libito-omp.so.

The programs of bench/omp/, run unchanged under three runtimes of the GNU
OpenMP ABI (LD_PRELOAD for libomp and libito-omp.so; the ito runs are
skipped, with a note, while libito-omp.so is missing) at the smallest, 2 and
the largest worker count, in rounds so that a drift of the machine touches
every runtime alike. Tasks without cut-off (fib), nested parallel regions
(quicksort and matrix product, after Tanaka, Taura and Yonezawa,
'Implementation and Evaluation of Nested Parallelism in OpenMP',
docs/references.md), tasks ordered by `depend` and tasks with taskwait (the KASTORS-style Jacobi,
sparse LU and Strassen, with data placed over the NUMA nodes by libnuma), a
doacross loop (a Gauss-Seidel wavefront, `ordered(2)` with `depend(sink/source)`) and
task reductions (fib's call tree as `in_reduction` tasks in a `taskgroup task_reduction`). The
options, runs, checks and report part are bench/omp/omp_bench.py's; this
module fits them to the harness.
"""
import os
import sys

import harness
from harness import BENCH_DIR, Benchmark, Run

sys.path.insert(0, os.path.join(BENCH_DIR, "omp"))
import omp_bench  # noqa: E402  (bench/omp/omp_bench.py: the OpenMP runs and their report part)

R = harness  # what omp_bench calls R: fmt, md_table, parse_output, ...


class OpenMP(Benchmark):
    names = omp_bench.BENCHES

    def csv_cols(self):
        return omp_bench.CSV_COLS

    def add_args(self, parser):
        omp_bench.add_args(parser)

    def finish_args(self, args, parser):
        omp_bench.finish_args(args, parser)

    def plan(self, args):
        runs, skipped = omp_bench.plan(args, R)
        return [Run(*r[:6], spec=r[7]) for r in runs], skipped

    def execute(self, runner, run):
        """omp_bench's own: it keeps the rows of runs that did not finish."""
        return omp_bench.execute(R, runner, run.bench, run.what, run.cmd, run.env, run.nrows,
                                 run.spec)

    def section(self, ctx):
        return omp_bench.section(R, ctx.args, ctx.results, ctx.runner)


BENCH = OpenMP()
