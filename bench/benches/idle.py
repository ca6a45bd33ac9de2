"""idle_cpu, wake, alternate, policy, shutdown: what idle workers cost and
how fast they come back.

The measures of Odo, Nakashima and Taura, 'Scheduling strategy focused on
resource efficiency in Task-Parallel framework' (docs/references.md): the
CPU that idle workers burn, the latency until work that appears reaches a
sleeping worker (against the operating system's floor), the speed-up of
parallelism that comes and goes, passive against active waiting, and
ito_finalize with every worker asleep. The runs and the report part are
bench/idle_bench.py's; this module fits them to the harness.
"""
import harness
import idle_bench
from harness import Benchmark, Run

from . import bin as bin_kernel


class _Helpers:
    """What idle_bench calls R: the harness, and the CSV columns of its policy
    runs of bin."""

    def __getattr__(self, name):
        return getattr(harness, name)

    @staticmethod
    def kernel_cols(name):
        assert name == "bin", name
        return bin_kernel.BENCH.columns


R = _Helpers()


class Idle(Benchmark):
    names = idle_bench.BENCHES

    def keys(self, name):
        return idle_bench.result_keys([name])

    def csv_cols(self):
        return {**idle_bench.CSV_COLS, "policy_bin": bin_kernel.BENCH.columns + ["round"]}

    def plan(self, args):
        runs, skipped = idle_bench.plan(args, R)
        return [Run(*r[:6], fields=r[6]) for r in runs], skipped

    def section(self, ctx):
        return idle_bench.section(R, ctx.args, ctx.results, ctx.runner)


BENCH = Idle()
