"""The OpenMP benchmarks of bench/run.py (bench/omp/): one gcc -fopenmp
binary each, run unchanged under three runtimes of the GNU OpenMP ABI:

  gomp  GNU libgomp, the library the binary is linked with
  iomp  LLVM's libomp, with LD_PRELOAD (it implements the GOMP entry points)
  ito   libito-omp.so, with LD_PRELOAD (skipped, with a note, when missing)

  omp_fib       fib_omp N 1                  tasks + taskwait, no cut-off
  omp_qsort     qsort_omp N CUTOFF 1         nested parallel sections (figure 14
                                             of [1]), OMP_MAX_ACTIVE_LEVELS=255
  omp_matmul    matmul_omp N 1               two nested parallel for (figure 13
                                             of [1]), OMP_MAX_ACTIVE_LEVELS=2
                                             (nested) and =1 (flat)
  omp_jacobi    jacobi_dep N BLOCK SWEEPS 1  blocked Jacobi, tasks with depend
  omp_jacobi_task  jacobi_dep N BLOCK SWEEPS 1 0   the same, tasks + taskwait per sweep
  omp_sparselu  sparselu_dep NB BS 1         blocked sparse LU, tasks with depend
  omp_sparselu_task  sparselu_dep NB BS 1 0  the same, tasks + taskwait per phase
  omp_strassen  strassen_dep N BASE 1        Strassen's product, tasks with depend
  omp_strassen_task  strassen_dep N BASE 1 0 the same, tasks + taskwait per level
                                             (these six: KASTORS-style, data placed
                                             block-cyclically over the NUMA nodes
                                             with libnuma, local_pct reported)
  omp_wavefront wavefront_doacross N BLOCK SWEEPS 1
                                             Gauss-Seidel wavefront, a doacross
                                             loop (ordered(2), depend(sink/source))
  omp_taskred   taskred_omp N CUTOFF 1       fib's call tree as in_reduction(+) tasks
                                             in a taskgroup task_reduction(+)

in rounds (--reps, default 3): in each, every runtime runs once in turn, one
timed repetition per process, so that a drift of a shared machine touches
all alike. Worker counts: the smallest, 2 and the largest of --workers. At
each worker count w: OMP_NUM_THREADS=w and ITO_NUM_WORKERS=w, and the
process confined to w CPUs (its affinity mask), so that w is the number of
cores for every runtime, even where a program asks for more threads than w
(qsort asks for teams of two at every level).

Each run has a time limit (--omp-timeout). A run that times out, crashes or
exits nonzero is kept: its CSV rows are the repetitions it printed (each one
verified before it is printed) with the run's status, or one row with the
status alone when it printed none, and the report lists it. Such a run is a
failure of run.py (exit status 1) when it printed a wrong answer, ran under
another runtime than the one asked for, or was ito's; a peer runtime (gomp,
iomp) that times out or crashes is recorded, not a failure of ours.

bench/benches/omp.py calls add_args() and finish_args() around run.py's
argument parsing, plan() for the runs, execute() to run one, and section()
for the report; `R` is the harness (bench/harness/: fmt, md_table,
parse_output, ...).

[1] Tanaka, Taura and Yonezawa, 'Implementation and Evaluation of Nested
    Parallelism in OpenMP' (docs/references.md).
"""
import glob
import itertools
import os
import signal
import statistics
import subprocess
import sys
import time

BENCHES = ["omp_fib", "omp_qsort", "omp_matmul", "omp_jacobi", "omp_jacobi_task", "omp_sparselu",
           "omp_sparselu_task", "omp_strassen", "omp_strassen_task", "omp_wavefront",
           "omp_taskred"]
RUNTIMES = ["gomp", "iomp", "ito"]
LEVELS_DEEP = "255"  # libgomp's largest max-active-levels: nesting as deep as it goes

# bench -> binary, parameter columns (the binary's first arguments, in
# order), the columns the binary prints after `ratio`, default and --quick
# parameters (None: args.fib_n), what it is, for the report.
PROGRAMS = {
    "omp_fib": dict(
        binary="fib_omp", params=["n"], extra=[], default=None, quick=None,
        what="fib(n) as in the OpenMP specification's tasking example: both calls are "
             "tasks (`omp task shared(x)`, `shared(y)`), then `omp taskwait`; no cut-off; "
             "started by one thread (`parallel` + `single`)"),
    "omp_qsort": dict(
        binary="qsort_omp", params=["n", "cutoff"], extra=["levels"],
        default=[str(1 << 24), "10000"], quick=["200000", "10000"],
        what="quicksort of n fixed-seed pseudo-random ints with nested parallel sections "
             "(Tanaka, Taura and Yonezawa, 'Implementation and Evaluation of Nested "
             "Parallelism in OpenMP', figure 14, docs/references.md): partition, "
             "`omp_set_num_threads(2)`, "
             "`parallel sections` with one part per section; ranges under *cutoff* elements "
             "go to the same quicksort without pragmas. OMP_MAX_ACTIVE_LEVELS="
             + LEVELS_DEEP + ": every level of the recursion may be an active team of "
             "two; *levels* is the deepest active level a leaf saw"),
    "omp_matmul": dict(
        binary="matmul_omp", params=["n"], extra=["active_levels", "inner_threads"],
        default=["1000"], quick=["120"],
        what="the n x n integer matrix product of Tanaka, Taura and Yonezawa, "
             "'Implementation and Evaluation of Nested Parallelism in OpenMP', figure 13 "
             "(docs/references.md): `parallel for` over "
             "the rows, in it `parallel for` over the columns, the k loop serial (B kept "
             "transposed so that k walks memory in order). Run *nested* "
             "(OMP_MAX_ACTIVE_LEVELS=2: every inner loop a team of its own) and *flat* "
             "(OMP_MAX_ACTIVE_LEVELS=1: inner regions get teams of one). *active levels* and "
             "*inner team* are what an untimed probe of the same nest saw inside the inner "
             "loop"),
    "omp_jacobi": dict(
        binary="jacobi_dep", params=["n", "block", "sweeps"], extra=["local_pct"],
        default=["2048", "128", "50"], quick=["256", "64", "5"],
        what="KASTORS-style blocked Jacobi sweeps for the 2-D Poisson equation on an n x n "
             "grid: each sweep reads one grid and writes the other; a "
             "block's update is a task with `depend(in:)` on its block and its four "
             "neighbours and `depend(out:)` on its block of the other grid; the tasks of "
             "all sweeps are created at once and ordered by their dependences alone. "
             "Checked bit for bit against the serial sweeps. " + "NUMA_NOTE"),
    "omp_jacobi_task": dict(
        binary="jacobi_dep", params=["n", "block", "sweeps"], extra=["local_pct"], tail=["0"],
        default=["2048", "128", "50"], quick=["256", "64", "5"],
        what="the same Jacobi sweeps as omp_jacobi, KASTORS' jacobi-block-task form: each "
             "sweep's block updates are tasks without dependences, then `taskwait`. "
             "Checked bit for bit against the serial sweeps. " + "NUMA_NOTE"),
    "omp_sparselu": dict(
        binary="sparselu_dep", params=["nb", "bs"], extra=["local_pct"],
        default=["40", "48"], quick=["8", "16"],
        what="KASTORS-style blocked sparse LU: nb x nb blocks of bs x bs "
             "doubles, many absent; lu0, fwd, bdiv and bmod tasks ordered by `depend` "
             "(in/inout on the blocks), no barrier between the steps. Checked bit for "
             "bit against the serial factorisation, and |LUx - Ax| / |Ax| < 1e-10. "
             + "NUMA_NOTE"),
    "omp_sparselu_task": dict(
        binary="sparselu_dep", params=["nb", "bs"], extra=["local_pct"], tail=["0"],
        default=["40", "48"], quick=["8", "16"],
        what="the same sparse LU as omp_sparselu, KASTORS' sparselu-task form: per step, "
             "lu0 in the creating thread, the fwd and bdiv tasks, `taskwait`, the bmod tasks, "
             "`taskwait`. Checked as omp_sparselu. " + "NUMA_NOTE"),
    "omp_strassen": dict(
        binary="strassen_dep", params=["n", "base"], extra=["local_pct"],
        default=["1024", "64"], quick=["256", "64"],
        what="KASTORS-style Strassen product C = A B of n x n doubles down to base x base "
             "blocks: per level, the ten sums, the seven products (each recursing) and the "
             "four quadrants of C are tasks ordered by `depend`, then `taskwait`. Checked bit "
             "for bit against the serial recursion and against dot products at 1,000 entries. "
             + "NUMA_NOTE"),
    "omp_strassen_task": dict(
        binary="strassen_dep", params=["n", "base"], extra=["local_pct"], tail=["0"],
        default=["1024", "64"], quick=["256", "64"],
        what="the same Strassen product as omp_strassen, KASTORS' strassen-task form: per "
             "level, seven tasks (each forms its sums and recurses), `taskwait`, four tasks "
             "for the quadrants of C, `taskwait`. Checked as omp_strassen. " + "NUMA_NOTE"),
    "omp_wavefront": dict(
        binary="wavefront_doacross", params=["n", "block", "sweeps"], extra=[],
        default=["2048", "128", "20"], quick=["256", "32", "5"],
        what="in-place Gauss-Seidel sweeps (5-point Poisson stencil, as Polybench's "
             "seidel-2d) on an n x n grid as a doacross loop: `omp for ordered(2) "
             "schedule(static, 1)` over the rows, each row cut into blocks of *block* "
             "columns; block (i, jb) waits with `ordered depend(sink: i - 1, jb)` and posts "
             "with `ordered depend(source)`, so the rows run as a pipeline; one loop per "
             "sweep. Checked bit for bit against the serial sweeps"),
    "omp_taskred": dict(
        binary="taskred_omp", params=["n", "cutoff"], extra=[],
        default=["25", "1"], quick=["16", "1"],
        what="a reduction over a tree of tasks: fib(n)'s call tree, every call of fib(m) "
             "with m > *cutoff* two tasks `in_reduction(+: sum)` (for m - 1 and m - 2), a "
             "task for m <= *cutoff* adds fib(m) to sum; all in one `taskgroup "
             "task_reduction(+: sum)` opened by one thread (`parallel` + `single`), no "
             "taskwait (the end of the taskgroup waits and combines the copies). Each task "
             "updates the copy of sum its runtime gives it (`GOMP_task_reduction_remap`). "
             "Checked against the closed form and the same tree walked without pragmas"),
}
NUMA_NOTE = ("The data is placed block-cyclically over the NUMA nodes with libnuma in every "
             "runtime's run (bench/omp/numa_place.h); *local %* is the share of tasks that "
             "ran on a CPU of the node of the data they write (100 on a machine of one node), "
             "*remote %* the share that ran on another node's")
for _p in PROGRAMS.values():
    _p["what"] = _p["what"].replace("NUMA_NOTE", NUMA_NOTE)
# matmul configurations: name -> OMP_MAX_ACTIVE_LEVELS
MATMUL_NESTING = {"nested": "2", "flat": "1"}


def cols(bench):
    """The CSV columns the binary prints."""
    p = PROGRAMS[bench]
    c = ["system", "workers"] + p["params"]
    if bench == "omp_matmul":
        c.append("max_levels")
    return c + ["rep", "serial_s", "parallel_s", "ratio"] + p["extra"]


def csv_cols(bench):
    """The columns of OUT/<bench>.csv: the binary's, then run.py's."""
    return cols(bench) + (["nesting"] if bench == "omp_matmul" else []) + ["status"]


CSV_COLS = {b: csv_cols(b) for b in BENCHES}


# --------------------------------------------------------------------------- arguments

def add_args(p):
    p.add_argument("--omp-param", action="append", default=[], metavar="BENCH=A,B,..",
                   help="an OpenMP benchmark's parameters, e.g. omp_qsort=16777216,10000, "
                        "omp_matmul=512, omp_jacobi=4096,128,20, omp_sparselu=50,64, omp_strassen=2048,64, "
                        "omp_wavefront=4096,128,10, omp_taskred=27,1 "
                        "(omp_fib takes --fib-n)")
    p.add_argument("--omp-lib", help="libito-omp.so for the ito runs (default: next to "
                                     "libito.so, the parent of --bindir)")
    p.add_argument("--libomp", help="LLVM's libomp.so for the iomp runs (default: "
                                    "/usr/lib/llvm-14/lib/libomp.so or another llvm-*)")
    p.add_argument("--omp-timeout", type=float,
                   help="seconds one OpenMP benchmark run may take (default 150, --quick 60)")


def finish_args(a, p):
    a.omp_args = {}
    for b, prog in PROGRAMS.items():
        a.omp_args[b] = [str(a.fib_n)] if prog["default"] is None else \
            list(prog["quick"] if a.quick else prog["default"])
    for spec in a.omp_param:
        name, _, vals = spec.partition("=")
        vals = [v.strip() for v in vals.split(",") if v.strip()]
        if name not in PROGRAMS or name == "omp_fib" or not vals or \
                len(vals) > len(PROGRAMS[name]["params"]) or not all(v.isdigit() for v in vals):
            p.error(f"--omp-param {spec}: want one of "
                    f"{', '.join(b for b in BENCHES if b != 'omp_fib')} = up to that "
                    "benchmark's integer parameters")
        a.omp_args[name][:len(vals)] = vals
    if a.omp_timeout is None:
        a.omp_timeout = 60.0 if a.quick else 150.0
    # the smallest, 2 and the largest of --workers: on a large machine every
    # count would take long (libgomp runs fib slower with each thread)
    a.omp_workers = [w for w in a.workers if w in (min(a.workers), 2, max(a.workers))]


# --------------------------------------------------------------------------- plan

def find_libomp(given):
    if given:
        return os.path.abspath(given) if os.path.isfile(given) else None
    for c in ["/usr/lib/llvm-14/lib/libomp.so"] + sorted(glob.glob("/usr/lib/llvm-*/lib/libomp.so"),
                                                         reverse=True):
        if os.path.isfile(c):
            return c
    return None


def runtime_libs(args):
    """runtime -> LD_PRELOAD value ('' for gomp), or None where missing."""
    ito = os.path.abspath(args.omp_lib or os.path.join(os.path.dirname(args.bindir),
                                                       "libito-omp.so"))
    return {"gomp": "", "iomp": find_libomp(args.libomp),
            "ito": ito if os.path.isfile(ito) else None}, ito


def cpus_for(w):
    """The first w CPUs this process may run on."""
    try:
        mine = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    return mine[:w] if w <= len(mine) else None


def plan(args, R):
    """Runs: (bench, what, cmd, env, cols, rows, None, spec); spec is what
    execute() needs besides."""
    out, skipped, notes = [], [], []
    libs, ito_path = runtime_libs(args)
    args.omp_libs = libs
    if libs["ito"] is None and any(b in args.benches for b in BENCHES):
        shown = os.path.relpath(ito_path, R.ROOT) if ito_path.startswith(R.ROOT) else ito_path
        notes.append(f"ito: `{shown}` "
                     "not found, so the ito rows are skipped (build the target `ito_omp`)")
        skipped.append("omp_* ito (no libito-omp.so)")
    if libs["iomp"] is None and any(b in args.benches for b in BENCHES):
        notes.append("iomp: LLVM's libomp.so not found (apt-get install libomp-14-dev, or "
                     "--libomp), so the iomp rows are skipped")
        skipped.append("omp_* iomp (no libomp.so)")
    args.omp_notes = notes
    ncpu = len(cpus_for(10 ** 6) or []) or R.ncpus()
    for bench in BENCHES:
        if bench not in args.benches:
            continue
        prog = PROGRAMS[bench]
        binary = R.find_binary(os.path.join(args.bindir, "omp"), prog["binary"])
        if not binary:
            skipped.append(f"omp/{prog['binary']}")
            continue
        params = args.omp_args[bench]
        configs = list(MATMUL_NESTING.items()) if bench == "omp_matmul" else [(None, None)]
        for w in args.omp_workers:
            if w > ncpu:
                skipped.append(f"{bench} workers={w} (only {ncpu} CPUs)")
                continue
            # rounds of one repetition per run, the runtimes in turn: a slow
            # drift of the machine touches all of them alike
            for rnd, (nest, levels), rt in itertools.product(range(args.kernel_reps), configs,
                                                             RUNTIMES):
                if libs[rt] is None:
                    continue
                env = R.worker_env(w)
                env.pop("LD_PRELOAD", None)
                if libs[rt]:
                    env["LD_PRELOAD"] = libs[rt]
                if bench == "omp_qsort":
                    env["OMP_MAX_ACTIVE_LEVELS"] = LEVELS_DEEP
                elif levels:
                    env["OMP_MAX_ACTIVE_LEVELS"] = levels
                else:
                    env.pop("OMP_MAX_ACTIVE_LEVELS", None)
                cmd = [binary] + params + ["1"] + prog.get("tail", [])
                what = (f"{bench} {rt}{' ' + nest if nest else ''} workers={w} "
                        f"round {rnd + 1}/{args.kernel_reps}")
                spec = {"system": rt, "workers": w, "nesting": nest, "cpus": cpus_for(w),
                        "timeout": args.omp_timeout, "params": params, "round": rnd,
                        "wmax": min(max(args.omp_workers), ncpu)}
                out.append((bench, what, cmd, env, cols(bench), 1, None, spec))
    return out, skipped


# --------------------------------------------------------------------------- running

def repro(cmd, env, spec):
    """A shell command line that repeats the run."""
    keys = ["OMP_NUM_THREADS", "ITO_NUM_WORKERS", "OMP_MAX_ACTIVE_LEVELS", "LD_PRELOAD"]
    parts = []
    if spec["cpus"] is not None:
        parts.append("taskset -c " + ",".join(str(c) for c in spec["cpus"]))
    parts.append("env " + " ".join(f"{k}={env[k]}" for k in keys if env.get(k)))
    return " ".join(parts + [cmd[0]] + cmd[1:])


def _text(x):
    if x is None:
        return ""
    return x.decode(errors="replace") if isinstance(x, bytes) else x


def _exit_text(rc):
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


# The capacity probe: each of w processes, one per CPU, counts iterations of
# a plain Python loop for PROBE_S seconds; alone on one CPU, then all w at once.
PROBE_S = 1.0
PROBE_CODE = ("import time\nn = 0\nt = time.perf_counter() + {s}\n"
              "while time.perf_counter() < t:\n    for _ in range(2000):\n        n += 1\n"
              "print(n / {s})\n")


def probe_capacity(w):
    """How many CPUs' worth of work w CPUs do at once: (sum of the w rates
    when all run together) / (the rate of one alone). Shared cores (SMT
    siblings, an oversubscribed host) show up as less than w. None on error."""
    cpus = cpus_for(w)
    if not cpus or w < 2:
        return None

    def start(c):
        return subprocess.Popen([sys.executable, "-c", PROBE_CODE.format(s=PROBE_S)],
                                stdout=subprocess.PIPE, text=True,
                                preexec_fn=lambda: os.sched_setaffinity(0, [c]))
    try:
        p = start(cpus[0])
        alone = float(p.communicate(timeout=30)[0])
        ps = [start(c) for c in cpus]
        together = sum(float(q.communicate(timeout=30)[0]) for q in ps)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return together / alone if alone > 0 else None


def _state(runner):
    """This module's records on run.py's Runner: metadata lines per bench,
    and the runs that did not finish cleanly."""
    if not hasattr(runner, "omp_meta"):
        runner.omp_meta, runner.omp_unfinished, runner.omp_capacity = {}, [], None
    return runner


def execute(R, runner, bench, what, cmd, env, nrows, spec):
    """Runs one binary; returns its CSV rows (with `status`), never []: a
    run that printed nothing gives one row with its status."""
    if not hasattr(runner, "omp_meta"):  # the first OpenMP run: measure the machine first
        _state(runner)
        w = spec["wmax"]
        if w >= 2:
            print(f"omp: capacity probe: a Python loop on 1 CPU, then on {w} CPUs at once "
                  f"({PROBE_S:.0f} s each)", flush=True)
            runner.omp_capacity = (w, probe_capacity(w))
    runner.done += 1
    line = repro(cmd, env, spec)
    short = line.replace(os.path.dirname(cmd[0]) + "/", "")
    print(f"[{runner.done}/{runner.total}] {what}: {short}",
          flush=True)
    cpus = spec["cpus"]
    pre = (lambda: os.sched_setaffinity(0, cpus)) if cpus is not None else None
    busy0, kids0 = R.cpu_busy_s(), R.children_cpu_s()
    t0 = time.monotonic()
    status, stdout, stderr = None, "", ""
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=spec["timeout"], preexec_fn=pre)
        stdout, stderr = proc.stdout, proc.stderr
        if proc.returncode != 0:
            status = _exit_text(proc.returncode)
    except subprocess.TimeoutExpired as e:
        stdout, stderr = _text(e.stdout), _text(e.stderr)
        status = f"timed out (limit {spec['timeout']:.0f} s)"
    except OSError as e:
        status = f"could not start: {e}"
    dt = time.monotonic() - t0
    busy1 = R.cpu_busy_s()
    if busy0 is not None and busy1 is not None:
        acc = runner.others.setdefault(bench, [0.0, 0.0])
        acc[0] += max(0.0, (busy1 - busy0) - (R.children_cpu_s() - kids0))
        acc[1] += dt

    meta, rows, err = R.parse_output(stdout, cols(bench)) if stdout.strip() else ([], [], None)
    problems = []  # what makes this run a failure of ours
    if err and status is None:
        problems.append(err)
        rows = []
    wrong = "WRONG ANSWER" in stderr
    if wrong:
        problems.append("wrong answer: " + next(ln for ln in stderr.splitlines()
                                                if "WRONG ANSWER" in ln).strip())
    got = {r["system"] for r in rows}
    if got and got != {spec["system"]}:
        ep = [m for m in meta if m.startswith("entry_points=")]
        problems.append(f"ran under {', '.join(sorted(got))}, not {spec['system']}"
                        + (f" ({ep[0]})" if ep else ""))
    if status and rows:  # the process did not end well, after some repetitions
        status += (", after printing all its results" if len(rows) == nrows else
                   f", after {len(rows)} of its {nrows} results")
    if status is None and not problems and len(rows) != nrows:
        status = f"printed {len(rows)} result lines, expected {nrows}"
    if status is not None and spec["system"] == "ito":
        problems.append(status)
    for m in meta:
        runner.omp_meta.setdefault(bench, []).append(m)

    want = [int(x) for x in spec["params"]]
    for r in rows:
        gotp = [int(r[c]) for c in PROGRAMS[bench]["params"]]
        if gotp != want:
            problems.append(f"reported parameters {gotp}, asked for {want}")
            break
    note = []
    for r in rows:
        if int(r["workers"]) != spec["workers"]:
            note = [f"the program saw {r['workers']} threads"]
        r["workers"] = str(spec["workers"])
        r["system"] = spec["system"]
        r["rep"] = str(spec["round"])
        if spec["nesting"]:
            r["nesting"] = spec["nesting"]
    if problems:
        final = "FAILED: " + "; ".join(problems)
    else:
        final = status or "ok"
    final = "; ".join([final] + note)
    for r in rows:
        r["status"] = final
    if not rows:
        r = {c: "" for c in csv_cols(bench)}
        r.update(system=spec["system"], workers=str(spec["workers"]), rep=str(spec["round"]),
                 status=final)
        for c, v in zip(PROGRAMS[bench]["params"], spec["params"]):
            r[c] = v
        if spec["nesting"]:
            r["nesting"] = spec["nesting"]
        rows = [r]

    tail = stderr.strip().splitlines()[-5:]
    if problems:
        print(f"    FAILED: {'; '.join(problems)}", flush=True)
        if stderr.strip():
            print("    | " + "\n    | ".join(stderr.strip().splitlines()[-20:]), flush=True)
        runner.failures.append((what, "; ".join(problems) + f" (repeat: `{line}`)", tail))
    elif status:
        print(f"    DID NOT FINISH ({status}; recorded, not a failure of ito: "
              f"{spec['system']} is a peer runtime)", flush=True)
        if stderr.strip():
            print("    | " + "\n    | ".join(stderr.strip().splitlines()[-5:]), flush=True)
    else:
        if stderr.strip():
            sys.stderr.write(stderr)
        print(f"    ok in {dt:.1f} s", flush=True)
    if status or problems:
        runner.omp_unfinished.append({"bench": bench, "what": what, "status": final,
                                      "rows": sum(1 for r in rows if r.get("parallel_s")),
                                      "cmd": line, "stderr": tail})
    return rows


# --------------------------------------------------------------------------- report

def _ok(r):
    return r.get("parallel_s") not in (None, "") and not r["status"].startswith("FAILED")


def _summary(rows, key):
    """key(row) -> medians over the rows that carry times."""
    g = {}
    for r in rows:
        if _ok(r):
            g.setdefault(key(r), []).append(r)
    out = {}
    for k, rs in g.items():
        par = [float(r["parallel_s"]) for r in rs]
        out[k] = {"reps": len(rs), "par": statistics.median(par), "min": min(par), "max": max(par),
                  "serial": statistics.median(float(r["serial_s"]) for r in rs),
                  "ratio": statistics.median(float(r["ratio"]) for r in rs), "rows": rs}
    return out


def _order(s):
    return RUNTIMES.index(s) if s in RUNTIMES else len(RUNTIMES)


def _status_of(rows, key):
    """key -> a summary of the runs' statuses other than ok, with how many
    of the key's runs (rounds) had each."""
    runs, bad = {}, {}
    for r in rows:
        k = key(r)
        runs.setdefault(k, set()).add(r["rep"])
        if r["status"] != "ok":
            st = "FAILED" if r["status"].startswith("FAILED") else r["status"]
            bad.setdefault(k, {}).setdefault(st, set()).add(r["rep"])
    return {k: [f"{st} ({len(reps)} of {len(runs[k])} runs)" for st, reps in sorted(v.items())]
            for k, v in bad.items()}


def _table(R, rows, key, label, extra=None):
    """One line per (runtime, [nesting,] workers): medians, speedup over 1
    worker, vs ito at the same key but runtime."""
    s = _summary(rows, key)
    st = _status_of(rows, key)
    keys = sorted(set(s) | set(st), key=lambda k: (k[1:-1], k[-1], _order(k[0])))
    table = []
    for k in keys:
        v = s.get(k)
        note = "; ".join(sorted(st.get(k, []))) or "ok"
        if not v:
            table.append(label(k) + ["0", "-", "-", "-", "-", "-", "-"] +
                         (["-"] * len(extra[0]) if extra else []) + [note])
            continue
        one = s.get(k[:-1] + (1,))
        ito = s.get(("ito",) + k[1:])
        speed = one["par"] / v["par"] if one and v["par"] > 0 else None
        vs = v["par"] / ito["par"] if ito and ito["par"] > 0 else None
        table.append(label(k) + [str(v["reps"]), R.fmt(v["serial"] * 1e3), R.fmt(v["par"] * 1e3),
                                 f"{R.fmt(v['min'] * 1e3)} - {R.fmt(v['max'] * 1e3)}",
                                 R.fmt(v["ratio"]), R.fmt(speed), R.fmt(vs)] +
                     (extra[1](v) if extra else []) + [note])
    return s, table


TABLE_HEAD = ["reps", "serial ms", "parallel ms", "min - max", "ratio", "speedup", "vs ito"]


def _target_line(name, value, op, bound, basis):
    if value is None:
        return [name, "n/a", f"{op} {bound}", "not measured", basis]
    met = {">=": value >= bound, ">": value > bound, "<=": value <= bound}[op]
    return [name, f"{value:.3g}", f"{op} {bound}", "met" if met else "NOT met", basis]


def section(R, args, results, runner):
    """The report's part for the OpenMP benchmarks that ran."""
    if not any(b in results for b in BENCHES):
        return []
    _state(runner)
    libs = getattr(args, "omp_libs", {})
    rep = ["## OpenMP: one gcc -fopenmp binary under libgomp, libomp and libito-omp\n"]
    show = lambda p: (os.path.relpath(p, R.ROOT) if p.startswith(R.ROOT) else p) if p else "-"
    ito_lib = libs.get("ito") or (runtime_libs(args)[1] + ", missing")
    comp = sorted({kv.split("=", 1)[1].strip('"') for ms in runner.omp_meta.values() for m in ms
                   for kv in R.split_meta(m) if kv.startswith("compiler=")})
    rep.append("The programs of `bench/omp/`, compiled once by "
               f"{', '.join(f'`{c}`' for c in comp) or 'gcc'} with `-O2 -fopenmp`, each run "
               "under *gomp* (libgomp, as linked), *iomp* (`LD_PRELOAD="
               f"{show(libs.get('iomp'))}`) and *ito* (`LD_PRELOAD={show(ito_lib)}`), "
               "side by side in this run. At *w* workers: OMP_NUM_THREADS=w, "
               "ITO_NUM_WORKERS=w, and the process confined to w CPUs (its affinity mask), "
               "so that w is the number of cores for every runtime. Each program names the "
               "library its OpenMP entry points resolved to (dladdr), and a run under another "
               f"runtime than asked is a failure. Times are medians over {args.kernel_reps} rounds "
               "(min - max beside); a round runs each runtime once in turn (one process, one "
               "timed repetition each), so that a slow drift of the machine touches all "
               "alike. *serial* is the same "
               "algorithm without pragmas in the same binary, *ratio* parallel / serial, "
               "*speedup* the median at 1 worker over that at w, *vs ito* the median over "
               "ito's at the same worker count (and nesting), from this run.\n")
    cap = runner.omp_capacity
    if cap and cap[1] is not None:
        end = probe_capacity(cap[0])  # again, after the runs
        rep.append(f"**Machine:** {cap[0]} CPUs at once did the work of {R.fmt(cap[1])} CPUs "
                   f"before the runs and {R.fmt(end)} after them (a plain Python loop run "
                   f"{PROBE_S:.0f} s on one CPU alone, then on each of the {cap[0]} at once: the "
                   f"sum of their rates over the rate alone). Below {cap[0]}, the CPUs share "
                   "cores (SMT siblings, a busy host), and no runtime can speed up by more "
                   "than that.\n")
    for n in getattr(args, "omp_notes", []):
        rep.append(f"**Note:** {n}.\n")
    unf = runner.omp_unfinished
    if unf:
        rep.append("Runs that did not finish cleanly (their verified repetitions, if any, "
                   "are kept in the CSV and the tables, marked; *FAILED* ones count as "
                   "failures of run.py, a peer runtime that timed out or crashed does not):\n")
        t = [[u["what"], u["status"], u["rows"], f"`{u['cmd']}`",
              "<br>".join(f"`{ln}`" for ln in u["stderr"][-2:]) or "-"] for u in unf]
        rep.append(R.md_table(["run", "status", "verified reps kept", "repeat with",
                               "stderr (end)"], t))
        rep.append("")
    targets = []
    for bench in BENCHES:
        if bench not in results:
            continue
        rows = results[bench]
        prog = PROGRAMS[bench]
        part = [f"### {bench}\n", prog["what"] + "; " +
                ", ".join(f"{c}={v}" for c, v in zip(prog["params"], args.omp_args[bench])) + ".\n"]
        line = runner.others_line(bench)
        if line:
            part.insert(1, line)
        if bench == "omp_matmul":
            key = lambda r: (r["system"], r["nesting"], int(r["workers"]))
            label = lambda k: [k[0], k[1], str(k[2])]
            extra = (["active levels", "inner team"],
                     lambda v: [str(max(int(r["active_levels"]) for r in v["rows"])),
                                str(max(int(r["inner_threads"]) for r in v["rows"]))])
            s, t = _table(R, rows, key, label, extra)
            part.append(R.md_table(["system", "nesting", "workers"] + TABLE_HEAD + extra[0] +
                                   ["status"], t))
            part.append("")
            # nested against flat, per system and workers
            nt = []
            for (sy, nest, w), v in sorted(s.items(), key=lambda kv: (_order(kv[0][0]), kv[0][2])):
                if nest != "nested":
                    continue
                f = s.get((sy, "flat", w))
                g = s.get(("gomp", "flat", w))
                nt.append([sy, w, R.fmt(f["par"] / v["par"]) if f else "n/a",
                           R.fmt(v["par"] / g["par"]) if g else "n/a"])
            if nt:
                part.append("Nesting: *flat / nested* above 1 means nesting made it faster; "
                            "*nested / gomp flat* is the comparison the target is set on (for "
                            "ito: at most 1.05).\n")
                part.append(R.md_table(["system", "workers", "flat / nested",
                                        "nested / gomp flat"], nt))
                part.append("")
            w2 = 2
            ito_n, gomp_f = s.get(("ito", "nested", w2)), s.get(("gomp", "flat", w2))
            targets.append(_target_line(
                "omp_matmul: ito nested / gomp flat, 2 workers",
                ito_n["par"] / gomp_f["par"] if ito_n and gomp_f else None, "<=", 1.05,
                "within 5% of libgomp without nesting"))
        else:
            key = lambda r: (r["system"], int(r["workers"]))
            label = lambda k: [k[0], str(k[1])]
            extra = None
            if bench == "omp_qsort":
                extra = (["levels"], lambda v: [str(max(int(r["levels"]) for r in v["rows"]))])
            if "local_pct" in prog["extra"]:
                def shares(v):
                    loc = statistics.median(float(r["local_pct"]) for r in v["rows"])
                    return [R.fmt(loc), R.fmt(100.0 - loc)]
                extra = (["local %", "remote %"], shares)
            s, t = _table(R, rows, key, label, extra)
            part.append(R.md_table(["system", "workers"] + TABLE_HEAD +
                                   (extra[0] if extra else []) + ["status"], t))
            part.append("")
            if bench == "omp_fib":
                g2, i2 = s.get(("gomp", 2)), s.get(("ito", 2))
                targets.append(_target_line(
                    "omp_fib: gomp / ito time, 2 workers",
                    g2["par"] / i2["par"] if g2 and i2 else None, ">=", 5,
                    "ito at least 5x faster than libgomp"))
            if bench == "omp_qsort":
                sp = []
                for sy in sorted({k[0] for k in s}, key=_order):
                    a, b = s.get((sy, 1)), s.get((sy, 2))
                    sp.append([sy, R.fmt(a["par"] * 1e3) if a else "n/a",
                               R.fmt(b["par"] * 1e3) if b else "n/a",
                               R.fmt(a["par"] / b["par"]) if a and b else "n/a",
                               R.fmt(b["serial"] / b["par"]) if b else "n/a"])
                part.append("Speed-up from 1 to 2 workers (medians), and over the serial "
                            "quicksort at 2 workers (the first partition, over all n, is "
                            "serial work):\n")
                part.append(R.md_table(["system", "1 worker ms", "2 workers ms",
                                        "speedup 2 vs 1", "serial / parallel at 2"], sp))
                part.append("")
                i1, i2 = s.get(("ito", 1)), s.get(("ito", 2))
                targets.append(_target_line(
                    "omp_qsort: ito speed-up, 1 to 2 workers",
                    i1["par"] / i2["par"] if i1 and i2 else None, ">=", 1.7,
                    "nested parallel sections scale"))
                for peer in ("gomp", "iomp"):
                    p2 = s.get((peer, 2))
                    targets.append(_target_line(
                        f"omp_qsort: {peer} / ito time, 2 workers",
                        p2["par"] / i2["par"] if p2 and i2 else None, ">", 1,
                        f"ito faster than {'libgomp' if peer == 'gomp' else 'libomp'}"))
        rep.extend(part)
    if targets:
        rep.append("### OpenMP targets\n")
        rep.append("Computed from the medians above; *not measured* where a run is missing "
                   "(no libito-omp.so, no 2-worker run, or the run failed).\n")
        rep.append(R.md_table(["ratio", "measured", "target", "", "meaning"], targets))
        rep.append("")
    return rep
