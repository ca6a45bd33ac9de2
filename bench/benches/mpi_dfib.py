"""mpi_dfib: fib across MPI ranks, with tasks that block in MPI for the
answers of the subtrees they sent to other ranks.

bench/mpi/dfib.cpp under `mpirun --oversubscribe --bind-to none -np R`
(R = 1, 2 and 4; root's permission variables set), one ito worker a rank
per CPU the rank gets (at least one): the upper 6 levels of fib(n)'s tree
send one subtree of every node to another rank and wait for its answer in
a blocking MPI_Recv (parked by libito-mpi.so while the worker runs the
other subtree); every rank serves requests with a thread blocked in
MPI_Recv that starts a lightweight thread per request. Rank 0 checks the
result. The report gives the time (median, min - max over the rounds) and
the time on one rank over it.
"""
import os
import statistics

from benches.mpi import mpi_execute, mpi_run, mpi_tools
from harness import Benchmark, fmt, md_table

COLS = ["ranks", "workers", "n", "ship", "cutoff", "shipped", "seconds", "result", "round"]


class MpiDfib(Benchmark):
    names = ["mpi_dfib"]
    columns = COLS

    def plan(self, args):
        b, mpirun, skipped = mpi_tools(args, "mpi_dfib")
        if not b:
            return [], skipped
        n = "30" if args.quick else "42"
        ncpu = os.cpu_count() or 1
        runs = []
        for rnd in range(args.kernel_reps):
            for ranks in (1, 2, 4):
                workers = max(1, ncpu // ranks)
                runs.append(mpi_run("mpi_dfib", f"mpi_dfib ranks={ranks} round {rnd}", mpirun,
                                    ranks, workers, [b, n], {"round": rnd}))
        return runs, []

    def execute(self, runner, run):
        p = mpi_execute(runner, run)
        if p is None:
            return []
        lines = [ln for ln in p.stdout.splitlines() if ln and ln[0].isdigit()]
        row = lines[-1].split(",") if lines else None
        if p.returncode != 0 or not row or len(row) != 8:
            runner.fail(run.what, f"exit status {p.returncode} or no result line (a wrong "
                        "answer exits with 1)", p.stderr)
            return []
        print(f"    {float(row[6]) * 1e3:.1f} ms, {row[5]} subtrees sent", flush=True)
        return [dict(zip(COLS, row + [str(run.spec["round"])]))]

    def section(self, ctx):
        rows = ctx.results.get("mpi_dfib", [])
        rep = ["## MPI: fib across ranks, tasks parked in MPI_Recv (libito-mpi.so)\n"]
        if not rows:
            return rep + ["No runs (no mpirun, or libito-mpi.so not built).\n"]
        first = rows[0]
        rep.append(f"`bench/mpi/dfib.cpp`, fib({first['n']}), the upper {first['ship']} levels "
                   "sending a subtree of each node to another rank and waiting for its answer "
                   "in a blocking MPI_Recv; serial below "
                   f"{first['cutoff']}. `mpirun --oversubscribe --bind-to none` on this machine "
                   "(the ranks share its cores: more ranks than cores add messages, not "
                   "cores; a cluster's figures come from the same command there). Time: median "
                   "over the rounds (min - max); every result checked.\n")
        table = []
        base = None
        for ranks in sorted({int(r["ranks"]) for r in rows}):
            sel = [r for r in rows if int(r["ranks"]) == ranks]
            t = sorted(float(r["seconds"]) for r in sel)
            med = statistics.median(t)
            if ranks == 1:
                base = med
            table.append([str(ranks), sel[0]["workers"], sel[0]["shipped"], fmt(med * 1e3),
                          f"{fmt(t[0] * 1e3)} - {fmt(t[-1] * 1e3)}",
                          fmt(base / med) if base else "-"])
        rep.append(md_table(["ranks", "workers a rank", "subtrees sent", "ms", "min - max",
                             "1 rank / this"], table))
        rep.append("")
        return rep


BENCH = MpiDfib()
