"""mpi_halo: a halo-exchange stencil across MPI ranks, plain against overlap.

bench/mpi/halo.cpp under `mpirun --oversubscribe -np R` (R = 2 and 4 on
any machine; with root's permission variables set), one ito worker a rank
per CPU the rank gets (at least one): Jacobi sweeps of an n x n grid, a
band of rows a rank, each band cut into blocks updated by ito's workers.
*plain* exchanges the halo with MPI's own blocking MPI_Sendrecv (the
worker waits in it) and then updates every block; *overlap* makes every
block a lightweight thread and lets the two edge blocks wait for their
halo in MPI_Sendrecv, which libito-mpi.so turns into a park, while the
workers update the inner blocks. Both grids are checked bit for bit
against the sweeps done in one process. Each run is profiled
(ITO_PROFILE=summary: the program's tasks are coarse, so the profiler
costs nothing measurable, docs/profile.md): the share of the workers'
time in the program's code is the cores' busy share; in *plain* it
includes the time a worker waits inside MPI_Sendrecv (the core is held),
in *overlap* that time is "blocked" (the core is free). Rounds alternate
the two versions. RandomAccess is mpi_gups.py.
"""
import os
import re
import shutil
import statistics
import subprocess

from harness import Benchmark, Run, find_binary, fmt, md_table

COLS = ["version", "ranks", "workers", "n", "sweeps", "blocks", "seconds", "checksum", "busy_pct",
        "blocked_pct", "round"]
WORK = re.compile(r"worker time P x Tp [0-9.]+ s: work ([0-9.]+)%.*?blocked ([0-9.]+)%")


# What the MPI benchmarks (this one, mpi_gups, mpi_dfib) share.
def mpi_tools(args, name):
    """(binary, mpirun, skipped): the binary and mpirun, or a reason."""
    b = find_binary(args.bindir, name)
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not b or not mpirun:
        return None, None, [f"{name} (" + ("no mpirun" if b else "not built: no MPI") + ")"]
    return b, mpirun, []


def mpi_run(bench, what, mpirun, ranks, workers, argv, spec, extra=()):
    """A Run of argv under mpirun: ranks unbound, root's permission given."""
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
    cmd = [mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(ranks),
           "-x", f"ITO_NUM_WORKERS={workers}", *extra, *argv]
    return Run(bench, what, cmd, env, None, None, spec=spec)


def mpi_execute(runner, run):
    """Runs run; its CompletedProcess, or None once runner.fail said why."""
    runner.done += 1
    print(f"[{runner.done}/{runner.total}] {run.what}", flush=True)
    try:
        return subprocess.run(run.cmd, env=run.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=runner.timeout)
    except (subprocess.TimeoutExpired, OSError) as e:
        runner.fail(run.what, f"did not run: {e}", "")
        return None


class MpiHalo(Benchmark):
    names = ["mpi_halo"]
    columns = COLS

    def plan(self, args):
        b, mpirun, skipped = mpi_tools(args, "mpi_halo")
        if not b:
            return [], skipped
        n, sweeps = ("256", "20") if args.quick else ("2048", "200")
        ncpu = os.cpu_count() or 1
        runs = []
        for ranks in (2, 4):
            workers = max(1, ncpu // ranks)
            for rnd in range(args.kernel_reps):
                for version in ("plain", "overlap"):
                    runs.append(mpi_run("mpi_halo", f"mpi_halo {version} ranks={ranks} round {rnd}",
                                        mpirun, ranks, workers, [b, version, n, sweeps, "16"],
                                        {"round": rnd, "version": version},
                                        ("-x", "ITO_PROFILE=summary")))
        return runs, []

    def execute(self, runner, run):
        p = mpi_execute(runner, run)
        if p is None:
            return []
        row = next((ln.split(",") for ln in p.stdout.splitlines()
                    if ln.startswith(run.spec["version"] + ",")), None)
        shares = WORK.findall(p.stderr)
        if p.returncode != 0 or not row or len(row) != 8 or not shares:
            runner.fail(run.what, f"exit status {p.returncode}, no result line or no profile",
                        p.stderr)
            return []
        busy = statistics.mean(float(w) for w, _ in shares)
        blocked = statistics.mean(float(b) for _, b in shares)
        print(f"    {float(row[6]) * 1e3:.1f} ms, busy {busy:.1f}%", flush=True)
        return [dict(zip(COLS, row + [f"{busy:.1f}", f"{blocked:.1f}", str(run.spec["round"])]))]

    def section(self, ctx):
        rows = ctx.results.get("mpi_halo", [])
        rep = ["## MPI: halo exchange, plain against overlap (libito-mpi.so)\n"]
        if not rows:
            return rep + ["No runs (no mpirun, or libito-mpi.so not built).\n"]
        first = rows[0]
        rep.append(f"`bench/mpi/halo.cpp`, a {first['n']} x {first['n']} grid, "
                   f"{first['sweeps']} Jacobi sweeps, 16 blocks a rank, `mpirun --oversubscribe "
                   "--bind-to none` on this machine (the ranks share its cores; a cluster's "
                   "figures come from the same command there). *plain*: MPI's own blocking "
                   "halo exchange, then the blocks; *overlap*: every block a lightweight thread, "
                   "the edge blocks parked in MPI_Sendrecv while the others compute. Time: median "
                   "over the rounds (min - max); *busy %*: the workers' time in the program's code "
                   "(ITO_PROFILE), which in *plain* includes waiting inside MPI (the core is "
                   "held); *blocked %*: time the workers were free while threads waited in MPI. "
                   "Grids checked bit for bit.\n")
        table = []
        for ranks in sorted({int(r["ranks"]) for r in rows}):
            per = {}
            for v in ("plain", "overlap"):
                sel = [r for r in rows if int(r["ranks"]) == ranks and r["version"] == v]
                if not sel:
                    continue
                t = sorted(float(r["seconds"]) for r in sel)
                per[v] = statistics.median(t)
                table.append([str(ranks), sel[0]["workers"], v, fmt(per[v] * 1e3),
                              f"{fmt(t[0] * 1e3)} - {fmt(t[-1] * 1e3)}",
                              fmt(statistics.median(float(r["busy_pct"]) for r in sel)),
                              fmt(statistics.median(float(r["blocked_pct"]) for r in sel)),
                              fmt(per[v] / per["plain"]) if "plain" in per else "-"])
        rep.append(md_table(["ranks", "workers a rank", "version", "ms", "min - max", "busy %",
                             "blocked %", "vs plain"], table))
        rep.append("")
        return rep


BENCH = MpiHalo()
