"""The benchmarks bench/run.py runs: one module each, each with a BENCH (a
harness.Benchmark; see harness/__init__.py for the interface and for adding
one).

NAMES is the only list to extend: its order is the order of the runs, of
--bench's choices (the optional ones last) and of the report's sections.
"""
import importlib

NAMES = ["fib", "spawn_loop", "create_p", "migration", "spreading",
         "nqueens", "quicksort", "uts", "bin",   # the kernels (harness.Kernel)
         "profile",                              # the kernels under ITO_PROFILE
         "million",
         "idle",                                 # idle_cpu, wake, alternate, policy, shutdown
         "omp",                                  # omp_fib, omp_qsort, ... (bench/omp/)
         "mpi",                                  # mpi_halo (bench/mpi/, libito-mpi.so)
         "mpi_gups",                             # mpi_gups (bench/mpi/, libito-mpi.so)
         "mpi_dfib",                             # mpi_dfib (bench/mpi/, libito-mpi.so)
         "echo"]                                 # only with --bench echo

ALL = [importlib.import_module(f"{__name__}.{n}").BENCH for n in NAMES]


def by_name():
    """--bench name -> its Benchmark."""
    return {name: b for b in ALL for name in b.names}


def default_names():
    """The --bench names run when none is given."""
    return [name for b in ALL if not b.optional for name in b.names]


def optional_names():
    """The --bench names run only when named."""
    return [name for b in ALL if b.optional for name in b.names]
