"""The systems every benchmark is built for, their binaries, order and colour.

bench/CMakeLists.txt builds each benchmark once per system it finds, as
<bench>_<system> in build/bench/. The worker count is handed to every runtime
through its own variable: ITO_NUM_WORKERS (ito), OMP_NUM_THREADS (OpenMP),
BENCH_WORKERS (oneTBB).
"""
import os

SYSTEMS = ["serial", "ito", "ito_thread", "tbb", "gomp", "iomp"]

# One colour per system in every plot (matplotlib's tab10, in SYSTEMS order).
SYS_COLORS = ["#7f7f7f", "#1f77b4", "#17becf", "#2ca02c", "#d62728", "#ff7f0e", "#9467bd"]


def sys_order(s):
    return SYSTEMS.index(s) if s in SYSTEMS else len(SYSTEMS)


def sys_color(s):
    return SYS_COLORS[min(sys_order(s), len(SYS_COLORS) - 1)]


def find_binary(bindir, name):
    path = os.path.join(bindir, name)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def worker_env(w):
    env = dict(os.environ)
    env["ITO_NUM_WORKERS"] = str(w)
    env["OMP_NUM_THREADS"] = str(w)
    env["BENCH_WORKERS"] = str(w)
    return env


def each_system(bindir, bench, skipped, systems=SYSTEMS):
    """(system, binary) for each of systems whose <bench>_<system> was built;
    the others are added to skipped (each once)."""
    for s in systems:
        b = find_binary(bindir, f"{bench}_{s}")
        if b:
            yield s, b
        elif f"{bench}_{s}" not in skipped:
            skipped.append(f"{bench}_{s}")


def workers_for(args, system):
    """The worker counts a benchmark run at every count runs a system at:
    serial at the smallest only."""
    return [min(args.workers)] if system == "serial" else args.workers
