"""The pieces of REPORT.md every section uses: numbers, tables, plot links."""


def fmt(x, digits=3):
    if x is None:
        return "n/a"
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}g}"


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def plot_link(drawn, png, caption):
    """The report's line for a plot: a link to it, or why there is none."""
    if drawn:
        return f"![{caption}]({png})\n"
    return "(No plot: matplotlib is not importable, here or in /usr/bin/python3.)\n"


def with_others(runner, bench, section):
    """A section's lines with the machine-load line after its heading."""
    line = runner.others_line(bench)
    return section[:1] + [line] + section[1:] if line else section


def ratio_table(s):
    """The table fib and every kernel report: per system and worker count, the
    serial and parallel medians, the ratio to serial, the speedup over 1 worker
    and the time relative to ito's at the same worker count. s: a
    stats.ratio_summary."""
    table = []
    for (sysname, w), v in s.items():
        one = s.get((sysname, 1))
        speed = one["par_med"] / v["par_med"] if one and v["par_med"] > 0 else None
        ito = s.get(("ito", w))
        vs_ito = v["par_med"] / ito["par_med"] if ito and ito["par_med"] > 0 else None
        table.append([sysname, w, v["reps"], fmt(v["serial_med"] * 1e3), fmt(v["par_med"] * 1e3),
                      f"{fmt(v['par_min'] * 1e3)} - {fmt(v['par_max'] * 1e3)}",
                      fmt(v["ratio_med"]), f"{fmt(v['ratio_min'])} - {fmt(v['ratio_max'])}",
                      fmt(speed), fmt(vs_ito)])
    return md_table(["system", "workers", "reps", "serial ms", "parallel ms",
                     "parallel min - max", "ratio", "ratio min - max", "speedup", "vs ito"],
                    table)
