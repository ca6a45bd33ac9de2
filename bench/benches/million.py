"""million: how many blocking ito threads fit, and what each one costs.

million N, once, with the largest worker count: N ito threads alive at once,
each blocked on one barrier of N+1 that the main thread joins last; then all
are joined. It reports the time to create, release and join them, and the
memory per thread: the growth of the peak resident set (VmHWM) over the run
divided by N, with RSS and page tables (VmPTE) sampled while all N are
blocked. ito only: no other system here has blocking lightweight threads.
"""
from harness import Benchmark, Run, find_binary, fmt, md_table, with_others, worker_env

COLS = ["n", "workers", "wall_s", "create_s", "arrive_s", "finish_s",
        "hwm_start_kb", "hwm_end_kb", "rss_peak_kb", "pte_peak_kb", "bytes_per_thread"]


class Million(Benchmark):
    names = ["million"]
    columns = COLS

    def finish_args(self, args, parser):
        if args.million_n is None:
            args.million_n = 1000 if args.quick else 1000000

    def plan(self, args):
        b = find_binary(args.bindir, "million")
        if not b:
            return [], ["million"]
        w = max(args.workers)
        return [Run("million", f"million workers={w}", [b, str(args.million_n)],
                    worker_env(w), COLS, 1, spec={"n": args.million_n})], []

    def execute(self, runner, run):
        rows = super().execute(runner, run)
        for r in rows:
            if int(r["n"]) != run.spec["n"]:
                runner.fail(run.what, f"reported n={r['n']}, asked for {run.spec['n']}", "")
        return rows

    def section(self, ctx):
        rows = ctx.results["million"]
        rep = ["## million threads\n"]
        rep.append("N ito threads alive at once, each blocked on one barrier of N+1 that the main "
                   "thread joins last; then all are joined. *bytes/thread* is the growth of the "
                   "peak resident set (VmHWM) over the run divided by N; RSS and page tables "
                   "(VmPTE) are sampled with all N threads blocked.\n")
        if rows:
            table = []
            for r in rows:
                table.append([r["n"], r["workers"], fmt(float(r["wall_s"])),
                              fmt(float(r["create_s"])), fmt(float(r["finish_s"])),
                              r["hwm_start_kb"], r["hwm_end_kb"], r["rss_peak_kb"],
                              r["pte_peak_kb"], fmt(float(r["bytes_per_thread"]), 4)])
            rep.append(md_table(["N", "workers", "wall s", "create s", "release+join s",
                                 "VmHWM start kB", "VmHWM end kB", "VmRSS peak kB",
                                 "VmPTE peak kB", "bytes/thread"], table))
        elif "million" in ctx.skipped:
            rep.append("Not built (it needs the ito library).")
        else:
            rep.append("No result (see Failures).")
        rep.append("")
        if rows:
            rep.append("One run, ito only (no other system here has blocking lightweight "
                       "threads), so there is neither a spread nor a ratio to ito.\n")
        return with_others(ctx.runner, "million", rep)


BENCH = Million()
