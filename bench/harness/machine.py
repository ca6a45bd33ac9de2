"""The machine: its CPUs, how busy it is, and where this tree lies."""
import os
import platform

HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
BENCH_DIR = os.path.dirname(HARNESS_DIR)   # bench/
ROOT = os.path.dirname(BENCH_DIR)          # the repository
RUN_PY = os.path.join(BENCH_DIR, "run.py")


def ncpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_busy_s():
    """Seconds of CPU time all processors have spent not idle since boot
    (guest time is counted inside user time), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal ...
    busy = v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu_s():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name") or ln.startswith("Model"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load1():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None
