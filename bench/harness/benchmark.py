"""The interface every benchmark module offers run.py: a Benchmark, as BENCH."""
from dataclasses import dataclass


@dataclass
class Context:
    """What a report section is written from."""
    args: object      # run.py's parsed arguments
    out: str          # the output folder (absolute): CSVs, REPORT.md, plots
    results: dict     # result key -> CSV rows, for every key this run selected
    runner: object    # the Runner: failures, metadata lines, machine load
    skipped: list     # what was not built, so not run


class Benchmark:
    """One benchmark, or a family that shares its runs and report part.

    run.py calls, in this order: add_args(parser) and finish_args(args,
    parser) around its argument parsing; plan(args) when one of `names` is
    selected; keys(name) for each selected --bench name, to know which CSVs
    it writes; execute(runner, run) for each run of the plan; section(ctx)
    for the report when one of its keys was selected. csv_cols() names the
    columns of each of its CSVs (`columns`, for one CSV named after it)."""

    names = []          # the --bench names it answers to, in --help order
    optional = False    # True: runs only when named with --bench
    columns = None      # the columns of its CSV, when it writes one, named after it

    def keys(self, name):
        """The result keys (one OUT/<key>.csv each) of one selected name."""
        return [name]

    def csv_cols(self):
        """result key -> the columns of OUT/<key>.csv; by default the one CSV
        OUT/<names[0]>.csv with `columns`."""
        return {self.names[0]: self.columns}

    def add_args(self, parser):
        """Options of its own, after run.py's."""

    def finish_args(self, args, parser):
        """Defaults that depend on other options (--quick above all)."""

    def plan(self, args):
        """(runs, skipped): the Runs for the selected names, and the
        binaries (or runs) left out because they were not built."""
        raise NotImplementedError

    def execute(self, runner, run):
        """Runs one Run; returns its CSV rows."""
        rows = runner.run(run.what, run.cmd, run.env, run.cols, run.nrows, run.bench)
        if run.fields:  # e.g. a pseudo-system (ito_active runs ito's binary)
            for r in rows:
                r.update(run.fields)
        return rows

    def section(self, ctx):
        """The report's lines for it (a "## " heading first)."""
        raise NotImplementedError
