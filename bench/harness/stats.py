"""Statistics over a benchmark's CSV rows."""
import statistics

from .systems import sys_order


def percentile(v, q):
    """The q-quantile (0..1) of v: the element at rank q * len(v) of the sorted values."""
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def group_rows(rows, value=lambda r: r):
    """(system, workers) -> [value(row), ...] over a benchmark's CSV rows."""
    groups = {}
    for r in rows:
        groups.setdefault((r["system"], int(r["workers"])), []).append(value(r))
    return groups


def by_system(keys):
    """(system, workers) keys in report order: by system, then workers."""
    return sorted(keys, key=lambda k: (sys_order(k[0]), k[1]))


def ratio_summary(rows, extra):
    """(system, workers) -> medians, min and max of the serial/parallel CSV rows
    of one benchmark, ordered by system then workers; extra(group) adds the
    benchmark's own fields (its parameters)."""
    groups = group_rows(rows)
    out = {}
    for key in by_system(groups):
        g = groups[key]
        ratios = [float(r["ratio"]) for r in g]
        par = [float(r["parallel_s"]) for r in g]
        out[key] = {
            "reps": len(g),
            "serial_med": statistics.median(float(r["serial_s"]) for r in g),
            "par_med": statistics.median(par),
            "par_min": min(par),
            "par_max": max(par),
            "ratio_med": statistics.median(ratios),
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            **extra(g),
        }
    return out
