"""The idle-worker benchmarks of bench/run.py: what idle workers cost and how
fast they come back, after Odo, Nakashima and Taura, 'Scheduling strategy
focused on resource efficiency in Task-Parallel framework'
(docs/references.md).

  idle_cpu   idle_cpu_<system> MS REPS: one task works for MS ms while the
             other workers have nothing to do; CPU used by each idle worker
  wake       migration_<system> REPS DROP GAP_US: migration after GAP_US of
             work on the root alone, so that the other workers are asleep;
             plus wake_floor REPS DROP GAP_US, the operating system's floor
  alternate  alternate_<system> PHASES SEQ_US PAR_US REPS: parallelism that
             alternates between one worker and all of them
  policy     fib_ito and bin_ito with ITO_WAIT_POLICY=passive and =active,
             alternately, on the same worker count
  shutdown   shutdown REPS QUEUED: ito_finalize with every worker asleep

ito runs twice where it matters: as `ito` (the default, passive policy) and
as `ito_active` (ITO_WAIT_POLICY=active, the same binary). bench/benches/idle.py
calls plan() to add the runs and section() to write the report's part; `R` is
the harness (bench/harness/: fmt, md_table, plot_with, ...) plus kernel_cols.
"""
import os
import statistics

BENCHES = ["idle_cpu", "wake", "alternate", "policy", "shutdown"]
PEERS = ["ito", "ito_active", "tbb", "gomp", "iomp"]

IDLE_CPU_COLS = ["system", "workers", "rep", "ms", "wall_s", "process_cpu_s", "work_cpu_s",
                 "idle_pct"]
WAKE_COLS = ["system", "workers", "rep", "child_start_ns", "parent_resume_ns"]
FLOOR_COLS = ["rep", "wake_ns"]
ALTERNATE_COLS = ["system", "workers", "phases", "seq_us", "par_us", "rep", "serial_s",
                  "parallel_s", "speedup"]
SHUTDOWN_COLS = ["workers", "rep", "queued", "finalize_ms"]
# the policy runs keep the fib and bin CSV columns, plus the policy
FIB_POLICY_COLS = ["system", "workers", "n", "rep", "serial_s", "parallel_s", "ratio"]

IDLE_CPU_ARGS = {False: (1000, 3), True: (50, 1)}           # ms, reps
# reps, dropped, gap_us: the gap is longer than ito's longest adaptive spin
# (4 ms), so its idle workers really are asleep when the work appears
WAKE_ARGS = {False: (400, 40, 10000), True: (40, 4, 300)}
ALTERNATE_ARGS = {False: (200, 1000, 1000, 3), True: (10, 200, 200, 1)}
POLICY_ROUNDS = {False: 6, True: 1}                         # passive/active alternations
SHUTDOWN_ARGS = {False: (20, [0, 1000]), True: (2, [0, 100])}

ACTIVE_ENV = {"ITO_WAIT_POLICY": "active"}


def _binary_for(R, bindir, bench, s):
    """The binary a pseudo-system runs (ito_active runs ito's)."""
    return R.find_binary(bindir, f"{bench}_{'ito' if s == 'ito_active' else s}")


def _env(R, w, s):
    env = R.worker_env(w)
    if s == "ito_active":
        env.update(ACTIVE_ENV)
    elif s == "ito":
        env["ITO_WAIT_POLICY"] = "passive"
    return env


def plan(args, R):
    """Runs for the idle benchmarks: (bench, what, cmd, env, cols, rows, fields), where
    fields (or None) are set in every row the run prints: the pseudo-system
    ito_active, and the round of the policy runs."""
    out, skipped = [], []
    w = max(args.workers)
    if w < 2:
        for b in ("idle_cpu", "wake", "alternate", "policy"):
            if b in args.benches:
                skipped.append(f"{b} (needs 2 workers or more)")
        w = None
    q = args.quick
    if w and "idle_cpu" in args.benches:
        ms, reps = IDLE_CPU_ARGS[q]
        for s in PEERS:
            b = _binary_for(R, args.bindir, "idle_cpu", s)
            if not b:
                skipped.append(f"idle_cpu_{s}")
                continue
            out.append(("idle_cpu", f"idle_cpu {s} workers={w}", [b, str(ms), str(reps)],
                        _env(R, w, s), IDLE_CPU_COLS, reps, {"system": s}))
    if w and "wake" in args.benches:
        reps, drop, gap = WAKE_ARGS[q]
        for s in PEERS:
            b = _binary_for(R, args.bindir, "migration", s)
            if not b:
                skipped.append(f"migration_{s} (wake)")
                continue
            out.append(("wake", f"wake {s} workers={w}", [b, str(reps), str(drop), str(gap)],
                        _env(R, w, s), WAKE_COLS, reps - drop, {"system": s}))
        b = R.find_binary(args.bindir, "wake_floor")
        if b:
            out.append(("wake_floor", "wake_floor (operating system)",
                        [b, str(reps), str(drop), str(gap)], dict(os.environ), FLOOR_COLS,
                        reps - drop, None))
        else:
            skipped.append("wake_floor")
    if w and "alternate" in args.benches:
        phases, seq, par, reps = ALTERNATE_ARGS[q]
        for s in PEERS:
            b = _binary_for(R, args.bindir, "alternate", s)
            if not b:
                skipped.append(f"alternate_{s}")
                continue
            out.append(("alternate", f"alternate {s} workers={w}",
                        [b, str(phases), str(seq), str(par), str(reps)], _env(R, w, s),
                        ALTERNATE_COLS, reps, {"system": s}))
    if w and "policy" in args.benches:
        fib = R.find_binary(args.bindir, "fib_ito")
        binb = R.find_binary(args.bindir, "bin_ito")
        for rnd in range(POLICY_ROUNDS[q]):
            for s in ("ito", "ito_active"):
                if fib:
                    out.append(("policy_fib", f"policy fib {s} workers={w} round {rnd + 1}",
                                [fib, str(args.fib_n), str(args.reps)], _env(R, w, s),
                                FIB_POLICY_COLS, args.reps, {"system": s, "round": str(rnd)}))
                if binb:
                    for cfg in args.kernel_args["bin"]:
                        out.append(("policy_bin",
                                    f"policy bin({','.join(cfg)}) {s} workers={w} round {rnd + 1}",
                                    [binb] + cfg + [str(args.kernel_reps)], _env(R, w, s),
                                    R.kernel_cols("bin"), args.kernel_reps,
                                    {"system": s, "round": str(rnd)}))
        if not fib or not binb:
            skipped.append("policy (needs fib_ito and bin_ito)")
    if "shutdown" in args.benches:
        b = R.find_binary(args.bindir, "shutdown")
        reps, queued = SHUTDOWN_ARGS[q]
        ws = max(args.workers)
        if b:
            for qn in queued:
                out.append(("shutdown", f"shutdown workers={ws} queued={qn}",
                            [b, str(reps), str(qn)], R.worker_env(ws), SHUTDOWN_COLS, reps, None))
        else:
            skipped.append("shutdown")
    return out, skipped


# result key -> CSV columns, for run.py's CSV writing
CSV_COLS = {"idle_cpu": IDLE_CPU_COLS, "wake": WAKE_COLS, "wake_floor": FLOOR_COLS,
            "alternate": ALTERNATE_COLS, "policy_fib": FIB_POLICY_COLS + ["round"],
            "shutdown": SHUTDOWN_COLS}


def result_keys(benches):
    """The result lists (one CSV each) that the selected benchmarks produce."""
    keys = []
    for b in benches:
        if b == "wake":
            keys += ["wake", "wake_floor"]
        elif b == "policy":
            keys += ["policy_fib", "policy_bin"]
        elif b in BENCHES:
            keys.append(b)
    return keys


def _order(s):
    return PEERS.index(s) if s in PEERS else len(PEERS)



def _by_system(rows):
    g = {}
    for r in rows:
        g.setdefault(r["system"], []).append(r)
    return {s: g[s] for s in sorted(g, key=_order)}


def idle_cpu_part(R, args, rows):
    ms, reps = IDLE_CPU_ARGS[args.quick]
    rep = ["### CPU used by idle workers\n",
           f"One task runs {ms} ms of sequential work (LCG steps) on the root while the other "
           "P - 1 workers have nothing to do, right after a parallel burst that ran on all of "
           "them. *idle CPU* is (CPU time of the process, from getrusage, minus the CPU time "
           "of the OS thread that did the work) / (P - 1) / wall time: the share of a core "
           "each idle worker burnt, whatever it did (spinning before sleeping, timed "
           f"wake-ups). Median (min - max) over {reps} repetitions. Target for ito: at most "
           "1%.\n"]
    g = _by_system(rows)
    if not g:
        return rep + ["No results (see Failures).\n"]
    table = []
    for s, rs in g.items():
        v = [float(r["idle_pct"]) for r in rs]
        table.append([s, rs[0]["workers"], len(v), R.fmt(statistics.median(v)) + "%",
                      f"{R.fmt(min(v))} - {R.fmt(max(v))}%",
                      R.fmt(statistics.median(float(r["work_cpu_s"]) for r in rs))])
    rep.append(R.md_table(["system", "workers", "reps", "idle CPU per idle worker (median)",
                           "min - max", "work CPU s"], table))
    rep.append("")
    return rep


def wake_part(R, args, rows, floor):
    reps, drop, gap = WAKE_ARGS[args.quick]
    rep = ["### Wake-up latency\n",
           "The migration benchmark (Taura and Nakashima, 'A Comparative Study of Six Task "
           f"Parallel Programming Systems', section 5.4.1), with {gap} us of work on the root "
           "alone before each repetition, so that idle workers have gone to sleep if the "
           "system puts them to sleep (ito's spin before sleeping is 50 us by default; "
           "libgomp and libomp spin far longer, so theirs may still be spinning). *move* is "
           "the larger of child start and parent resume: the time until the spawned work "
           "(for ito, work-first, the parent's continuation) starts on another worker. "
           f"{reps} repetitions, the first {drop} dropped. *floor* is the operating system "
           "alone: a plain thread asleep on a futex, woken by another after the same gap "
           "(`wake_floor`); a runtime whose idle workers sleep cannot beat it. Target for ito "
           "(passive): median at most 50 us.\n"]
    if not args.quick:
        rep.append("The gap is longer than ito's longest adaptive spin (docs/idle.md), so "
                   "ito's idle workers are asleep at every repetition; after shorter gaps "
                   "their spin grows to cover them and the move takes about a microsecond.\n")
    def dist_row(name, workers, v):  # median, p10, p90, p99, max
        return [name, workers, len(v), R.fmt(statistics.median(v)),
                *(R.fmt(R.percentile(v, q)) for q in (0.1, 0.9, 0.99)), R.fmt(max(v))]

    g = _by_system(rows)
    table, points = [], []
    for s, rs in g.items():
        v = [max(float(r["child_start_ns"]), float(r["parent_resume_ns"])) / 1e3 for r in rs]
        table.append(dist_row(s, rs[0]["workers"], v))
        points.append({"system": s, "us": sorted(v),
                       "color": R.sys_color("ito" if s == "ito_active" else s),
                       "dashed": s == "ito_active"})
    if floor:
        v = [float(r["wake_ns"]) / 1e3 for r in floor]
        table.append(dist_row("floor (futex)", "-", v))
        points.append({"system": "floor (futex)", "us": sorted(v), "color": "black",
                       "dotted": True})
    if not table:
        return rep + ["No results (see Failures).\n"]
    rep.append(R.md_table(["system", "workers", "reps", "move us (median)", "p10", "p90", "p99",
                           "max"], table))
    rep.append("")
    out = os.path.abspath(args.out)
    drawn = R.plot_with(points, os.path.join(out, "wake.png"), draw_wake_plot)
    rep.append(R.plot_link(drawn, "wake.png", "wake-up latency: distribution per system"))
    return rep


def draw_wake_plot(points, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for p in points:
        v = p["us"]
        ys = [(i + 1) / len(v) for i in range(len(v))]
        style = dict(color=p["color"],
                     linestyle=":" if p.get("dotted") else "--" if p.get("dashed") else "-")
        ax.step([max(x, 0.05) for x in v], ys, where="post", label=p["system"], **style)
    ax.set_xscale("log")
    ax.set_xlabel("time until the work starts on another worker, us (log)")
    ax.set_ylabel("fraction of repetitions")
    ax.set_title("wake-up latency after an idle gap (cumulative distribution)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def alternate_part(R, args, rows):
    phases, seq, par, reps = ALTERNATE_ARGS[args.quick]
    rep = ["### Parallelism that comes and goes\n",
           f"{phases} phases of {seq} us of sequential work followed by a parallel section "
           f"holding P x {par} us of work (a spawn tree of 16 P leaves): the parallelism "
           "alternates between one worker and all of them "
           f"{R.fmt(1e6 / (seq + par))} times a second. *speedup* is the serial time of the "
           "same phases (in the same binary) over the parallel time; at most (seq + P par) / "
           "(seq + par). *vs ito_active* is a system's median speed-up over ito's with "
           "ITO_WAIT_POLICY=active (workers never sleep). Target for ito: within 5% of "
           "ito_active.\n"]
    g = _by_system(rows)
    if not g:
        return rep + ["No results (see Failures).\n"]
    act = g.get("ito_active")
    act_med = statistics.median(float(r["speedup"]) for r in act) if act else None
    table = []
    for s, rs in g.items():
        v = [float(r["speedup"]) for r in rs]
        w = int(rs[0]["workers"])
        table.append([s, w, len(v), R.fmt(statistics.median(v)),
                      f"{R.fmt(min(v))} - {R.fmt(max(v))}",
                      R.fmt((seq + w * par) / (seq + par)),
                      R.fmt(statistics.median(v) / act_med) if act_med else "n/a"])
    rep.append(R.md_table(["system", "workers", "reps", "speedup (median)", "min - max", "ideal",
                           "vs ito_active"], table))
    rep.append("")
    return rep


def policy_part(R, args, fib_rows, bin_rows):
    rounds = POLICY_ROUNDS[args.quick]
    rep = ["### Passive against active waiting\n",
           "The same binaries (fib_ito, bin_ito) with ITO_WAIT_POLICY=passive (the default: "
           "idle workers sleep after spinning ITO_SPIN_US) and =active (they never sleep), run "
           f"alternately, {rounds} times each, at the largest worker count. Times are medians "
           "over all repetitions. *passive / active* is the median over the rounds of the "
           "ratio of the two runs of a round (adjacent in time, so that slow drifts of the "
           "machine cancel); above 1 means sleeping costs time. Target for ito: within 2% "
           "(fib(35) and bin on 2 workers).\n"]
    table = []
    for name, rows, key in (("fib", fib_rows, lambda r: f"fib({r['n']})"),
                            ("bin", bin_rows, lambda r: f"bin({r['n']},{r['K']},{r['A']})")):
        cfgs = {}
        for r in rows:
            cfgs.setdefault((key(r), int(r["workers"])), {}).setdefault(r["system"], []).append(
                (int(r["round"]), float(r["parallel_s"])))
        for (cfg, w), by in sorted(cfgs.items()):
            p, a = by.get("ito"), by.get("ito_active")
            if not p or not a:
                continue
            ratios = []
            for rnd in sorted({x[0] for x in p} & {x[0] for x in a}):
                ratios.append(statistics.median(t for r2, t in p if r2 == rnd) /
                              statistics.median(t for r2, t in a if r2 == rnd))
            pv, av = [t for _, t in p], [t for _, t in a]
            table.append([cfg, w, len(pv), R.fmt(statistics.median(pv) * 1e3),
                          f"{R.fmt(min(pv) * 1e3)} - {R.fmt(max(pv) * 1e3)}",
                          R.fmt(statistics.median(av) * 1e3),
                          f"{R.fmt(min(av) * 1e3)} - {R.fmt(max(av) * 1e3)}",
                          R.fmt(statistics.median(ratios), 4),
                          f"{R.fmt(min(ratios), 4)} - {R.fmt(max(ratios), 4)}"])
    if not table:
        return rep + ["No results (see Failures).\n"]
    rep.append(R.md_table(["benchmark", "workers", "reps", "passive ms (median)", "min - max",
                           "active ms (median)", "min - max", "passive / active (median of rounds)",
                           "min - max over rounds"], table))
    rep.append("")
    return rep


def shutdown_part(R, args, rows):
    reps, _ = SHUTDOWN_ARGS[args.quick]
    rep = ["### Shutdown with sleeping workers\n",
           "`ito_finalize` timed after 20 ms of sleep on the main thread (every other worker "
           "asleep), with no thread left or with *queued* detached threads still to run "
           "(each yields once); finalize returns only when all have run, which the benchmark "
           f"checks. {reps} repetitions. Target: under 10 ms, nothing lost.\n"]
    g = {}
    for r in rows:
        g.setdefault((int(r["workers"]), int(r["queued"])), []).append(float(r["finalize_ms"]))
    if not g:
        return rep + ["No results (see Failures).\n"]
    table = [[w, q, len(v), R.fmt(statistics.median(v)), R.fmt(min(v)), R.fmt(max(v))]
             for (w, q), v in sorted(g.items())]
    rep.append(R.md_table(["workers", "queued", "reps", "finalize ms (median)", "min", "max"],
                          table))
    rep.append("")
    return rep


def section(R, args, results, runner):
    """The report's part for the idle benchmarks that ran."""
    if not any(k in results for k in result_keys(BENCHES)):
        return []
    rep = ["## Idle workers (Odo, Nakashima and Taura)\n",
           "How much CPU idle workers burn, how fast they are back when work appears, and "
           "what sleeping costs in speed-up: the questions of Odo, Nakashima and Taura, "
           "'Scheduling strategy focused on resource efficiency in Task-Parallel framework' "
           "(docs/references.md). ito's policy is `ITO_WAIT_POLICY=passive` unless "
           "the row says `ito_active`; the other systems run with their defaults.\n"]
    parts = []
    if "idle_cpu" in results:
        parts.append(("idle_cpu", idle_cpu_part(R, args, results["idle_cpu"])))
    if "wake" in results:
        parts.append(("wake", wake_part(R, args, results["wake"], results.get("wake_floor", []))))
    if "alternate" in results:
        parts.append(("alternate", alternate_part(R, args, results["alternate"])))
    if "policy_fib" in results:
        parts.append(("policy_fib", policy_part(R, args, results["policy_fib"],
                                                results.get("policy_bin", []))))
    if "shutdown" in results:
        parts.append(("shutdown", shutdown_part(R, args, results["shutdown"])))
    for bench, lines in parts:
        rep.extend(R.with_others(runner, bench, lines))
    return rep
