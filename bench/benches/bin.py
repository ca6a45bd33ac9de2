"""bin: a synthetic task tree whose work and critical path are known exactly.

bin_<system> N K A REPS runs bin(n, K, A): consume(A); then K times: spawn
bin(n-1); bin(n-1); sync; consume(A). Taura and Nakashima, 'A Comparative
Study of Six Task Parallel Programming Systems', section 5.5
(docs/references.md), give T1 and Tinf in closed form, so each run is set
against the greedy bound T1/P + Tinf: what exceeds it is time lost to the
runtime. The binary measures a, the time of one consume(A), before every
repetition and prints T1, Tinf and the bound with its times (a kernel: see
harness/kernel.py).

The paper runs bin at (n=18, K=1, A=23000) and (n=10, K=2, A=750)
(PAPER_N). Here K and A are the paper's (A in LCG steps of about 1 ns rather
than clock cycles) and n is smaller, so that T1 is about half a second: the
grain per task is the paper's, and T1/Tinf (about 900 and 260) is still far
above the worker counts of a small machine.
"""
import statistics

from harness import Kernel, by_system, fmt, group_rows, md_table

PAPER_N = {("1", "23000"): "18", ("2", "750"): "10"}  # (K, A) -> the paper's n
PAPER = ("Taura and Nakashima, 'A Comparative Study of Six Task Parallel Programming "
         "Systems', section 5.5 (docs/references.md)")


def t1_calls(n, k):
    """T1(n) / a and Tinf(n) / a by the paper's closed forms."""
    t1 = (3 * k * (2 * k) ** n - (k + 1)) // (2 * k - 1)
    tinf = 2 * n + 1 if k == 1 else (2 * k ** (n + 1) - (k + 1)) // (k - 1)
    return t1, tinf


class Bin(Kernel):
    def intro(self):
        return ["With *a* the time of one consume(A), measured by the binary itself before "
                "every repetition (median of five timed batches), the closed forms of "
                f"{PAPER} give the work and the critical path:\n\n"
                "    T1(n)   = a / (2K-1) * (3K (2K)^n - (K+1))\n"
                "    Tinf(n) = a * (2n+1)                        if K = 1\n"
                "            = a / (K-1) * (2 K^(n+1) - (K+1))   if K > 1\n\n"
                "(they solve T1(n) = a + K (2 T1(n-1) + a), Tinf(n) = a + K (Tinf(n-1) + a), "
                "T1(0) = Tinf(0) = a; the paper writes Tinf = 2an for K = 1, leaving out the "
                "root's own a). A greedy scheduler on P workers needs at most T1/P + Tinf (the "
                "*bound*); *measured / bound* above 1 is time lost to the runtime: task "
                "overhead, stealing, idle workers. *serial / T1* is the plain serial recursion "
                "against T1 alone (the cost of the calls and loop around consume). serial runs "
                "with P = 1.\n"]

    def config_head(self, cfg):
        n, k, a = int(cfg[0]), int(cfg[1]), cfg[2]
        t1, tinf = t1_calls(n, k)
        line = f"n={n}, K={k}, A={a}: T1 = {t1} a, Tinf = {tinf} a, T1/Tinf = {fmt(t1 / tinf)}."
        paper_n = PAPER_N.get((str(k), str(a)))
        if paper_n is not None:
            pt1, ptinf = t1_calls(int(paper_n), k)
            line += (f" The paper's configuration with this K and A is n={paper_n} (T1 = {pt1} a, "
                     f"Tinf = {ptinf} a, T1/Tinf = {fmt(pt1 / ptinf)}), A in clock cycles there"
                     + (", n reduced here so that a run takes seconds; K and the grain A are "
                        "kept." if n < int(paper_n) else "."))
        return [line + "\n"]

    def config_tail(self, rows):
        """Per system and worker count: a, T1, Tinf, the bound and the measured time."""
        groups = group_rows(rows)
        table = []
        for (sysname, w) in by_system(groups):
            g = groups[(sysname, w)]
            med = lambda c: statistics.median(float(r[c]) for r in g)  # noqa: E731
            par = [float(r["parallel_s"]) for r in g]
            bound = med("bound_s")
            # each repetition against its own bound, then the median
            over = statistics.median(float(r["parallel_s"]) / float(r["bound_s"]) for r in g
                                     if float(r["bound_s"]) > 0) if bound > 0 else None
            ser = statistics.median(float(r["serial_s"]) / float(r["t1_s"]) for r in g
                                    if float(r["t1_s"]) > 0) if med("t1_s") > 0 else None
            table.append([sysname, w, fmt(med("consume_ns") / 1e3), fmt(med("t1_s") * 1e3),
                          fmt(med("tinf_s") * 1e3), fmt(bound * 1e3),
                          fmt(statistics.median(par) * 1e3),
                          f"{fmt(min(par) * 1e3)} - {fmt(max(par) * 1e3)}", fmt(over), fmt(ser)])
        return [md_table(["system", "P", "a us", "T1 ms", "Tinf ms", "T1/P + Tinf ms",
                          "measured ms", "min - max", "measured / bound", "serial / T1"], table),
                ""]


BENCH = Bin(
    "bin", params=["n", "K", "A"], default=[["13", "1", "23000"], ["9", "2", "750"]],
    quick=[["5", "1", "23000"], ["4", "2", "750"]],
    extra=["consume_ns", "t1_s", "tinf_s", "bound_s"],
    what=f"bin(n, K, A) of {PAPER}: consume(A); then K times: spawn bin(n-1); "
         "bin(n-1); sync; consume(A). A counts LCG steps (about 1 ns each)")
