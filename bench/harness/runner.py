"""Running the benchmark binaries: one Run each, through one Runner."""
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field

from .csvio import parse_output
from .machine import children_cpu_s, cpu_busy_s, ncpus
from .report import fmt


@dataclass
class Run:
    """One process to start. Its rows go to OUT/<bench>.csv."""
    bench: str            # the result key: which CSV its rows go to
    what: str             # the progress line's and the report's name for it
    cmd: list
    env: dict
    cols: list            # the CSV header the process must print
    nrows: int = None     # how many result lines it must print (None: any)
    fields: dict = None   # set in every row it prints (e.g. a pseudo-system)
    spec: dict = field(default=None)  # a benchmark's own data for its execute()


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

    def total_others(self):
        """The report header's line on other processes over all the runs."""
        o = [sum(v[0] for v in self.others.values()), sum(v[1] for v in self.others.values())]
        if o[1] <= 0:
            return "unknown"
        return (f"{fmt(o[0] / o[1])} cores on average (CPU time not spent by the benchmarks, from "
                "/proc/stat); each section gives its own figure. They disturb the timings.")

    def fail(self, what, msg, detail):
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        detail = (detail or "").strip()
        print(f"    FAILED: {msg}", flush=True)
        if detail:
            print("    | " + "\n    | ".join(detail.splitlines()[-20:]), flush=True)
        self.failures.append((what, msg, detail.splitlines()[-5:] if detail else []))
