#!/usr/bin/env python3
"""Run the echo benchmark: an echo server, loadgen against it, the figures.

For each --server (repeatable) and each repetition:

  1. start the server (`SERVER 0`, with the --env additions to its
     environment) and read "port N" from its stdout;
  2. sample /proc/meminfo (KernelStack, PageTables, Slab) and the server's
     VmRSS: the baseline, before any connection;
  3. run `loadgen PORT CONNS THREADS WARMUP DURATION [MAX]`; its stderr says
     when the measured window starts and ends, and at those two moments the
     server's and the client's utime+stime (/proc/PID/stat) are read; during
     the window /proc/meminfo and the server's VmRSS and Threads are sampled
     every 0.2 s;
  4. read the server's VmHWM, send it SIGTERM and read its own
     "peak_rss_kib N";
  5. print one JSON object (or, with --csv, one CSV row for bench/run.py).

Figures: rps = requests / seconds of the measured window (loadgen's own
count and clock); server_cores = server CPU seconds / wall seconds over the
window; rps_per_core = rps / server_cores; peak_rss_kib = the server's VmHWM
at SIGTERM; rss_per_conn_b = (peak_rss_kib - base_rss_kib) * 1024 / conns;
kernel_stack_kib, page_tables_kib, slab_kib = the largest sample during the
window less the baseline (system-wide: the client's sockets are in Slab too).

Each JSON object also gives the commands run (server_cmd, loadgen_cmd), the
affinity each process really had (server_affinity, client_affinity, from
Cpus_allowed_list), connect_s (loadgen start to every connection echoed
once), server_threads (the most OS threads the server had in the window:
echo_threads has conns + 1 natively, its workers and helpers under the
preload; echo_epoll has 1), ok, and error when not ok. --csv prints the
numeric columns of CSV_COLS.

Pinning: with P >= 4 usable CPUs the server gets the first P/2 (by taskset)
and loadgen the rest; below 4 nothing is pinned, server and client share the
cores, and every result carries a note that its figures are not meaningful.
ito under LD_PRELOAD takes its worker count from the affinity mask (P/2)
unless --env ITO_NUM_WORKERS=... says otherwise. (Until libito-pthread.so
parks blocking I/O, each blocked read holds a worker: with more connections
than workers the run fails at loadgen's 60 s hard timeout.)

Exit status 0 when every run had zero errors, requests > 0 and a clean
server exit; otherwise 1 (2 for bad arguments).

  run_echo.py --server build/bench/echo/echo_threads --conns 200 --warmup 1 --duration 2
  run_echo.py --server .../echo_threads --name ito \\
      --env LD_PRELOAD=build/libito-pthread.so --conns 10000
"""
import argparse
import json
import os
import resource
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CSV_COLS = ["system", "conns", "threads", "server_cpus", "rep", "requests", "seconds", "rps",
            "errors", "server_cpu_s", "server_cores", "rps_per_core", "client_cores",
            "peak_rss_kib", "base_rss_kib", "rss_per_conn_b", "server_threads",
            "kernel_stack_kib", "page_tables_kib", "slab_kib", "connect_s", "pinned"]
MEMINFO_KEYS = {"KernelStack": "kernel_stack_kib", "PageTables": "page_tables_kib",
                "Slab": "slab_kib"}
HZ = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.2


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--server", action="append", required=True,
                   help="server binary (echo_threads, echo_epoll); repeat to run several")
    p.add_argument("--name", action="append",
                   help="name of the system in the output, one per --server (default: the "
                        "binary's name, plus '+<library>' with an LD_PRELOAD)")
    p.add_argument("--loadgen", help="loadgen binary (default: next to the first server)")
    p.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                   help="added to the server's environment, e.g. LD_PRELOAD=/path/"
                        "libito-pthread.so or ITO_NUM_WORKERS=4 (repeatable)")
    p.add_argument("--conns", type=int, default=10000, help="connections (default 10000)")
    p.add_argument("--threads", type=int, default=4, help="loadgen threads (default 4)")
    p.add_argument("--warmup", type=float, default=2.0, help="warm-up seconds (default 2)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="measured seconds (default 10)")
    p.add_argument("--max-requests", type=int, default=0,
                   help="end the measured window after this many requests (default 0: no cap)")
    p.add_argument("--reps", type=int, default=1, help="runs per server (default 1)")
    p.add_argument("--no-pin", action="store_true", help="never pin, even with 4+ CPUs")
    p.add_argument("--csv", action="store_true",
                   help="print '#' metadata lines and CSV (header once, a row per run) for "
                        "bench/run.py instead of JSON lines")
    a = p.parse_args(argv)
    if a.name and len(a.name) != len(a.server):
        p.error("give --name once per --server, or not at all")
    if a.conns < 1 or a.threads < 1 or a.reps < 1 or a.duration <= 0 or a.warmup < 0:
        p.error("--conns, --threads, --reps and --duration must be positive, --warmup >= 0")
    a.extra_env = {}
    for kv in a.env:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            p.error(f"--env {kv!r}: want VAR=VALUE")
        a.extra_env[k] = v
    a.server = [os.path.abspath(s) for s in a.server]
    for s in a.server:
        if not os.access(s, os.X_OK):
            p.error(f"--server {s}: not an executable")
    a.loadgen = os.path.abspath(a.loadgen or os.path.join(os.path.dirname(a.server[0]),
                                                          "loadgen"))
    if not os.access(a.loadgen, os.X_OK):
        p.error(f"loadgen {a.loadgen}: not an executable (give --loadgen)")
    return a


def warn(msg):
    print(f"run_echo: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- /proc

def meminfo():
    out = {}
    try:
        with open("/proc/meminfo") as f:
            for ln in f:
                k, _, v = ln.partition(":")
                if k in MEMINFO_KEYS:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds; None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the comm: state is field 3, utime 14 and stime 15 (1-based)
    return (int(fields[11]) + int(fields[12])) / HZ


def status(pid):
    """VmRSS, VmHWM (KiB), Threads and Cpus_allowed_list of a process; {} if gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                k, _, v = ln.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    out[k] = int(v.split()[0])
                elif k == "Cpus_allowed_list":
                    out[k] = v.strip()
    except (OSError, ValueError):
        pass
    return out


def cpu_split(no_pin):
    """(server CPUs, client CPUs, note) from the usable CPUs; lists are None
    when nothing is pinned."""
    cpus = sorted(os.sched_getaffinity(0))
    n = len(cpus)
    if no_pin:
        return None, None, "not pinned (--no-pin): server and client share the cores"
    if n < 4:
        return None, None, (f"only {n} CPU{'s' if n != 1 else ''}: server and client share "
                            "them unpinned, so these figures are not meaningful (a smoke test)")
    return cpus[:n // 2], cpus[n // 2:], None


def pinned_cmd(cpus, cmd):
    """cmd under `taskset -c CPUS` (or with the affinity set before exec)."""
    if cpus is None:
        return cmd, None
    if shutil.which("taskset"):
        return ["taskset", "-c", ",".join(map(str, cpus))] + cmd, None
    return cmd, (lambda: os.sched_setaffinity(0, cpus))


# --------------------------------------------------------------------------- one run

class RunError(Exception):
    pass


def read_line(fd, buf, deadline):
    """One line from a pipe fd (bytes buffered in buf), or None at EOF or deadline."""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return None
        buf.extend(chunk)
    i = buf.index(b"\n")
    line = bytes(buf[:i]).decode(errors="replace")
    del buf[:i + 1]
    return line


class Sampler(threading.Thread):
    """Samples /proc/meminfo and the server's status every SAMPLE_S until stopped."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.halt = threading.Event()
        self.mem = {}     # meminfo key -> largest value seen
        self.rss = 0
        self.threads = 0

    def sample(self):
        for k, v in meminfo().items():
            self.mem[k] = max(self.mem.get(k, v), v)
        st = status(self.pid)
        self.rss = max(self.rss, st.get("VmRSS", 0))
        self.threads = max(self.threads, st.get("Threads", 0))

    def run(self):
        self.sample()
        while not self.halt.wait(SAMPLE_S):
            self.sample()

    def stop(self):
        self.halt.set()
        self.join()
        self.sample()


def run_once(a, server, name, rep, conns, server_cpus, client_cpus, note):
    r = {"system": name, "rep": rep, "server": server, "env": a.extra_env,
         "conns_requested": a.conns, "conns": conns, "threads": a.threads,
         "warmup_s": a.warmup, "duration_s": a.duration, "max_requests": a.max_requests,
         "cpus": len(os.sched_getaffinity(0)), "pinned": server_cpus is not None,
         "server_cpu_list": server_cpus, "client_cpu_list": client_cpus, "note": note,
         "ok": False}
    # CPUs the server may run on: its half when pinned, else all of them
    r["server_cpus"] = len(server_cpus) if server_cpus else r["cpus"]
    env = dict(os.environ)
    env.update(a.extra_env)
    scmd, spre = pinned_cmd(server_cpus, [server, "0"])
    r["server_cmd"] = " ".join(shlex.quote(f"{k}={v}") for k, v in a.extra_env.items())
    r["server_cmd"] = (r["server_cmd"] + " " if r["server_cmd"] else "") + shlex.join(scmd)
    serr = tempfile.TemporaryFile()
    srv = subprocess.Popen(scmd, env=env, stdout=subprocess.PIPE, stderr=serr,
                           preexec_fn=spre)
    lg = watchdog = None
    out = bytearray()
    try:
        line = read_line(srv.stdout.fileno(), out, time.monotonic() + 10)
        if line is None:
            raise RunError("no 'port N' line from the server within 10 s"
                           + (f" (it exited with status {srv.poll()})" if srv.poll() is not None
                              else ""))
        if not line.startswith("port "):
            raise RunError(f"the server printed {line!r} instead of 'port N'")
        port = int(line.split()[1])
        time.sleep(0.1)  # let it settle: the baseline is the idle, listening server
        base_mem = meminfo()
        st = status(srv.pid)
        base_rss = st.get("VmRSS")
        r["base_rss_kib"] = base_rss
        r["server_affinity"] = st.get("Cpus_allowed_list")

        lcmd = [a.loadgen, str(port), str(conns), str(a.threads), f"{a.warmup:g}",
                f"{a.duration:g}"] + ([str(a.max_requests)] if a.max_requests else [])
        lcmd, lpre = pinned_cmd(client_cpus, lcmd)
        r["loadgen_cmd"] = shlex.join(lcmd)
        t_launch = time.monotonic()
        lg = subprocess.Popen(lcmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=lpre)
        # loadgen's hard timeout is 60 s; this only guards against a wedged pipe
        watchdog = threading.Timer(a.warmup + a.duration + 90, lg.kill)
        watchdog.daemon = True
        watchdog.start()
        sampler, win = None, {}
        messages = []
        for ln in lg.stderr:
            ln = ln.rstrip("\n")
            if ln.startswith("loadgen: connected "):
                r["client_affinity"] = status(lg.pid).get("Cpus_allowed_list")
                r["connect_s"] = round(time.monotonic() - t_launch, 3)
                r["connected"] = int(ln.split()[2])
            elif ln == "loadgen: measure start":
                win["t0"], win["s0"], win["c0"] = time.monotonic(), cpu_s(srv.pid), cpu_s(lg.pid)
                sampler = Sampler(srv.pid)
                sampler.start()
            elif ln == "loadgen: measure end":
                win["t1"], win["s1"], win["c1"] = time.monotonic(), cpu_s(srv.pid), cpu_s(lg.pid)
                if sampler:
                    sampler.stop()
            else:
                messages.append(ln)
                if "lowering connections" in ln:
                    r["conns"] = int(ln.rsplit(" ", 1)[1])
        lout = lg.stdout.read()
        lrc = lg.wait()
        watchdog.cancel()
        if sampler and sampler.is_alive():
            sampler.stop()
        if messages:
            r["loadgen_stderr"] = messages[-20:]
        fields = lout.split()
        if len(fields) != 8 or fields[0::2] != ["requests", "seconds", "rps", "errors"]:
            raise RunError(f"loadgen exited {lrc} and printed {lout.strip()!r}; "
                           f"stderr: {' | '.join(messages[-5:])}")
        r["requests"], r["seconds"] = int(fields[1]), float(fields[3])
        r["rps"], r["errors"] = float(fields[5]), int(fields[7])
        r["loadgen_rc"] = lrc

        if "s0" in win and "s1" in win and win["s0"] is not None and win["s1"] is not None:
            wall = win["t1"] - win["t0"]
            r["server_cpu_s"] = round(win["s1"] - win["s0"], 3)
            r["server_cores"] = round(r["server_cpu_s"] / wall, 3) if wall > 0 else None
            if win["c0"] is not None and win["c1"] is not None and wall > 0:
                r["client_cores"] = round((win["c1"] - win["c0"]) / wall, 3)
            if r["server_cores"]:
                r["rps_per_core"] = round(r["rps"] / r["server_cores"], 1)
        if sampler:
            for k, col in MEMINFO_KEYS.items():
                if k in base_mem and k in sampler.mem:
                    r[col] = sampler.mem[k] - base_mem[k]
            r["server_threads"] = sampler.threads
            r["rss_window_kib"] = sampler.rss

        if srv.poll() is not None:
            raise RunError(f"the server exited ({srv.returncode}) before SIGTERM")
        r["vmhwm_kib"] = status(srv.pid).get("VmHWM")  # read just before SIGTERM
        srv.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while True:
            ln = read_line(srv.stdout.fileno(), out, deadline)
            if ln is None:
                break
            if ln.startswith("peak_rss_kib "):
                r["peak_rss_kib"] = int(ln.split()[1])
        try:
            src = srv.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunError("the server did not exit within 10 s of SIGTERM")
        if src != 0:
            raise RunError(f"the server exited with status {src} after SIGTERM")
        if "peak_rss_kib" not in r:
            raise RunError("the server did not print peak_rss_kib on SIGTERM")
        if base_rss is not None and r["conns"]:
            r["rss_per_conn_b"] = round((r["peak_rss_kib"] - base_rss) * 1024 / r["conns"])
        if r["errors"] or lrc != 0:
            raise RunError(f"loadgen reported {r['errors']} errors (exit {lrc}): "
                           f"{' | '.join(messages[-5:])}")
        if r["requests"] <= 0:
            raise RunError("no request completed in the measured window")
        r["ok"] = True
    except RunError as e:
        r["error"] = str(e)
    finally:
        if watchdog:
            watchdog.cancel()
        for p in (lg, srv):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        serr.seek(0)
        text = serr.read().decode(errors="replace").strip()
        serr.close()
        if text:
            r["server_stderr"] = text.splitlines()[-20:]
    return r


# --------------------------------------------------------------------------- main

def default_name(server, env):
    name = os.path.basename(server)
    pre = env.get("LD_PRELOAD")
    if pre:
        lib = os.path.basename(pre.split(":")[0].split()[0])
        name += "+" + lib.split(".so")[0]
    return name


def csv_value(v):
    if v is None:
        return "nan"
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def main(argv):
    a = parse_args(argv)
    conns = a.conns
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    room = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if room < conns + 100:
        conns = max(1, room - 100)
        warn(f"RLIMIT_NOFILE hard limit is {room}: lowering connections from {a.conns} to {conns}")
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = map(int, f.read().split())
        if conns > hi - lo + 1:
            warn(f"{conns} connections but only {hi - lo + 1} ephemeral ports: connects will fail")
    except (OSError, ValueError):
        pass
    server_cpus, client_cpus, note = cpu_split(a.no_pin)
    if note:
        warn(note)
    names = a.name or [default_name(s, a.extra_env) for s in a.server]

    if a.csv:
        print(f"# bench=echo conns={conns} threads={a.threads} warmup_s={a.warmup:g} "
              f"duration_s={a.duration:g} pinned={int(server_cpus is not None)} "
              f"env=\"{' '.join(f'{k}={v}' for k, v in a.extra_env.items())}\"")
        if note:
            print(f"# note=\"{note}\"")
        print(",".join(CSV_COLS), flush=True)
    failed = 0
    for server, name in zip(a.server, names):
        for rep in range(a.reps):
            r = run_once(a, server, name, rep, conns, server_cpus, client_cpus, note)
            if not r["ok"]:
                failed += 1
                warn(f"{name} rep {rep}: FAILED: {r.get('error')}")
                for ln in r.get("server_stderr", []):
                    warn(f"  server: {ln}")
            if a.csv:
                if r["ok"]:
                    print(",".join(csv_value(r.get(c)) for c in CSV_COLS), flush=True)
            else:
                print(json.dumps(r), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
