"""Drawing the report's plots, with matplotlib from here or from a system python3.

matplotlib is optional. When the running interpreter lacks it, a system
python3 that has it (Debian's python3-matplotlib) draws the plot from the
same numbers, passed as JSON to `run.py --draw-plot MODULE:FUNCTION PNG`.
A draw function is therefore a module-level function draw(points, path)
that takes plain JSON data and returns True once the PNG is written.
"""
import importlib
import json
import os
import subprocess
import sys

from .machine import RUN_PY
from .systems import sys_color, sys_order

DRAW_FLAG = "--draw-plot"


def plot_with(points, path, draw):
    """draw(points, path) here, or in a system python3 that has matplotlib;
    False when none can be found."""
    try:
        import matplotlib  # noqa: F401
        return draw(points, path)
    except ImportError:
        pass
    me = os.path.realpath(sys.executable or "")
    target = f"{draw.__module__}:{draw.__name__}"
    for py in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not os.access(py, os.X_OK) or os.path.realpath(py) == me:
            continue
        try:
            r = subprocess.run([py, RUN_PY, DRAW_FLAG, target, path],
                               input=json.dumps(points), text=True, capture_output=True,
                               timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0 and os.path.isfile(path):
            return True
    return False


def draw_main(argv):
    """run.py's internal `--draw-plot MODULE:FUNCTION PNG` (see plot_with):
    the points come as JSON on standard input. Returns the exit status."""
    module, _, name = argv[0].partition(":")
    draw = getattr(importlib.import_module(module), name)
    return 0 if draw(json.load(sys.stdin), argv[1]) else 1


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(plt, fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def draw_errorbars(points, path, xlabel, ylabel, title, **title_kw):
    """One line per system over the worker counts, log y: each point's
    med with whiskers from min to max."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for s in sorted({p["system"] for p in points}, key=sys_order):
        ps = sorted((p for p in points if p["system"] == s), key=lambda p: p["workers"])
        err = [[p["med"] - p["min"] for p in ps], [p["max"] - p["med"] for p in ps]]
        ax.errorbar([p["workers"] for p in ps], [p["med"] for p in ps], yerr=err, marker="o",
                    capsize=3, color=sys_color(s), label=s)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xticks(sorted({p["workers"] for p in points}))
    ax.set_title(title, **title_kw)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return save(plt, fig, path)
