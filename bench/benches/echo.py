"""echo: many connections, one thread each, on ito against pthreads and epoll.

Run only when named (--bench echo): it needs about 2 x 10,000 file
descriptors. bench/echo/run_echo.py (whose measurement this module does not
repeat) drives an echo server on 127.0.0.1 with `loadgen` and prints one CSV
row per repetition; it runs echo/echo_threads natively (*pthreads*, one OS
thread per connection) and under LD_PRELOAD=libito-pthread.so (*ito*), and
echo/echo_epoll (*epoll*, one thread and level-triggered epoll). The report
gives throughput, throughput per server core and memory, and the targets of
docs/dropin.md, section 9.
"""
import os
import statistics
import sys

from harness import BENCH_DIR, Benchmark, Run, find_binary, fmt, md_table, with_others

sys.path.insert(0, os.path.join(BENCH_DIR, "echo"))
import run_echo  # noqa: E402  (bench/echo/run_echo.py: the echo driver and its CSV columns)

COLS = run_echo.CSV_COLS
# (connections, warm-up s, measured s): default and --quick
ARGS = {False: (10000, 2, 10), True: (200, 0, 1)}


class Echo(Benchmark):
    names = ["echo"]
    columns = COLS
    optional = True  # docs/dropin.md, section 9

    def finish_args(self, args, parser):
        args.echo_conns, args.echo_warmup, args.echo_duration = ARGS[args.quick]
        if args.echo_conns_arg is not None:
            args.echo_conns = args.echo_conns_arg

    def plan(self, args):
        edir = os.path.join(args.bindir, "echo")
        thr, epl, lg = (find_binary(edir, n) for n in ("echo_threads", "echo_epoll", "loadgen"))
        shim = os.path.abspath(args.shim or os.path.join(os.path.dirname(args.bindir),
                                                         "libito-pthread.so"))
        systems, skipped = [], []
        if thr:
            systems.append(("pthreads", thr, {}))
            if os.path.isfile(shim):
                systems.append(("ito", thr, {"LD_PRELOAD": shim}))
            else:
                skipped.append(f"echo ito (no {shim})")
        if epl:
            systems.append(("epoll", epl, {}))
        if not lg or not systems:
            return [], skipped + ["echo"]
        runs = []
        for name, binary, env in systems:
            cmd = [sys.executable, run_echo.__file__, "--csv", "--name", name,
                   "--server", binary, "--loadgen", lg, "--conns", str(args.echo_conns),
                   "--warmup", str(args.echo_warmup), "--duration", str(args.echo_duration),
                   "--reps", str(args.kernel_reps)]
            cmd += [f"--env={k}={v}" for k, v in env.items()]
            runs.append(Run("echo", f"echo {name} conns={args.echo_conns}", cmd,
                            dict(os.environ), COLS, args.kernel_reps))
        return runs, skipped

    def section(self, ctx):
        """Per system the medians over the repetitions, then the three
        targets (ito against pthreads and against epoll)."""
        rep = ["## echo: many connections\n"]
        rep.append("An echo server per system on 127.0.0.1, driven by `loadgen` (closed loop per "
                   "connection: a 64-byte message with a sequence number, its echo checked byte "
                   "for byte). *pthreads*: `echo_threads`, one OS thread per connection; *ito*: "
                   "the same binary under `LD_PRELOAD=libito-pthread.so`; *epoll*: `echo_epoll`, "
                   "one thread and level-triggered epoll. *rps/core*: requests/s divided by the "
                   "server's CPU (utime+stime over the measured window, in cores). *peak RSS*: "
                   "the server's VmHWM. Kernel memory: /proc/meminfo growth from before "
                   "connecting to the largest sample in the window (system-wide: the client's "
                   "sockets are in Slab too). Medians over the repetitions.\n")
        notes = sorted({m.split("note=", 1)[1].strip('"')
                        for m in ctx.runner.meta.get("echo", []) if "note=" in m})
        for n in notes:
            rep.append(f"**Note:** {n}.\n")
        by = {}
        for r in ctx.results["echo"]:
            by.setdefault(r["system"], []).append(r)
        if not by:
            return with_others(ctx.runner, "echo", rep + ["No echo results (see Failures).\n"])
        med = {s: {c: statistics.median(float(r[c]) for r in g) for c in COLS if c != "system"}
               for s, g in by.items()}
        table = []
        for s, m in med.items():
            table.append([s, int(m["conns"]), len(by[s]), fmt(m["rps"]), fmt(m["server_cores"]),
                          fmt(m["rps_per_core"]), fmt(m["peak_rss_kib"] / 1024),
                          fmt(m["rss_per_conn_b"] / 1024), fmt(m["kernel_stack_kib"] / 1024),
                          fmt(m["page_tables_kib"] / 1024), fmt(m["slab_kib"] / 1024),
                          fmt(kernel_kib(m) / 1024), int(m["server_threads"])])
        rep.append(md_table(["system", "conns", "reps", "requests/s", "server cores", "rps/core",
                             "peak RSS MiB", "RSS KiB/conn", "KernelStack MiB", "PageTables MiB",
                             "Slab MiB", "kernel MiB", "OS threads"], table))
        rep.append("")
        rep.extend(targets(med))
        return with_others(ctx.runner, "echo", rep)


def kernel_kib(m):
    """Kernel memory: stacks, page tables and slab."""
    return m["kernel_stack_kib"] + m["page_tables_kib"] + m["slab_kib"]


def targets(med):
    """The report's table of the three targets, from the medians per system."""
    ito, pt, ep = med.get("ito"), med.get("pthreads"), med.get("epoll")
    if not ito:
        return []
    t = []
    if pt:
        t.append(["requests/s, ito / pthreads", fmt(ito["rps"] / pt["rps"]), ">= 2"])
        t.append(["peak RSS, ito / pthreads", fmt(ito["peak_rss_kib"] / pt["peak_rss_kib"]),
                  "<= 0.2"])
        both = lambda m: m["peak_rss_kib"] + kernel_kib(m)  # noqa: E731
        t.append(["peak RSS + kernel memory, ito / pthreads", fmt(both(ito) / both(pt)),
                  "(beside it)"])
    if ep and ep["rps_per_core"] > 0:
        t.append(["requests/s per core, ito / epoll",
                  fmt(ito["rps_per_core"] / ep["rps_per_core"]), ">= 0.8"])
    return ["Targets (docs/dropin.md, section 9; the RSS target is on RSS alone, the "
            "row with kernel memory is beside it):\n",
            md_table(["ratio", "measured", "target"], t), ""]


BENCH = Echo()
