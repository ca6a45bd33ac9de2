# gdb support for ito: list the lightweight threads of a live process or a
# core dump, and print the backtrace of any of them, parked ones included.
# Needs no debug information of ito: it reads the descriptor libito.so
# exports (ito__debug_info, src/core/debug.c). Auto-loaded for libito.so
# when installed (docs/debugging.md), or: (gdb) source ito-gdb.py
#
#   info ito-threads      one line per live lightweight thread: its id, its
#                         state (running, ready, parked and on what), the
#                         worker that runs it, its start function
#   ito-bt ID [N]         the backtrace of thread ID (N frames at most)
#
# A parked or ready thread's registers are in its saved context at the top
# of its stack (src/arch/*.S); a Python unwinder hands them to gdb as the
# caller of the current frame, so this works in core dumps too, where
# registers cannot be written.
import struct

import gdb
from gdb.unwinder import Unwinder

MAGIC = 0x69746F64
LAYOUT = "<4I2Q14I2Q4I"  # struct ito_debug_info, LP64
FIELDS = ("magic version ptr_size handle_chunk_log2 handle_chunks handle_nslots "
          "slot_size slot_t fiber_th fiber_sp fiber_parked_on fiber_thread fiber_kind "
          "th_sync th_fn th_arg th_name th_name_size ts_done pad0 workers nslots "
          "worker_cur worker_id worker_os_tid pad").split()

# Saved context of ito__ctx_jump, at the saved stack pointer: register,
# offset; and where the caller's stack pointer is (src/arch/*.S).
CONTEXTS = {
    "x86-64": ({"r15": 8, "r14": 16, "r13": 24, "r12": 32, "rbx": 40, "rbp": 48,
                "rip": 56}, 64, "rsp", "rip"),
    "aarch64": ({"x19": 0, "x20": 8, "x21": 16, "x22": 24, "x23": 32, "x24": 40,
                 "x25": 48, "x26": 56, "x27": 64, "x28": 72, "x29": 80, "pc": 88},
                176, "sp", "pc"),
}


def _arch():
    name = gdb.selected_inferior().architecture().name()
    if "x86-64" in name or "x86_64" in name:
        return "x86-64"
    if "aarch64" in name:
        return "aarch64"
    raise gdb.GdbError("ito: no saved-context layout for architecture %s" % name)


def _read(addr, size):
    return bytes(gdb.selected_inferior().read_memory(addr, size))


def _u64(addr):
    return struct.unpack("<Q", _read(addr, 8))[0]


def _u32(addr):
    return struct.unpack("<I", _read(addr, 4))[0]


def _info():
    sym = gdb.lookup_global_symbol("ito__debug_info") or gdb.lookup_static_symbol("ito__debug_info")
    if sym is not None:
        addr = int(sym.value().address)
    else:
        try:
            addr = int(gdb.parse_and_eval("(unsigned long)&ito__debug_info"))
        except gdb.error:
            raise gdb.GdbError("ito: ito__debug_info not found (is libito.so loaded?)")
    vals = struct.unpack(LAYOUT, _read(addr, struct.calcsize(LAYOUT)))
    d = dict(zip(FIELDS, vals))
    if d["magic"] != MAGIC or d["version"] != 1:
        raise gdb.GdbError("ito: ito__debug_info has magic %#x version %d; this script reads "
                           "version 1" % (d["magic"], d["version"]))
    return d


def _symbol(addr):
    if not addr:
        return "0x0"
    # (with demangling on, gdb prints a C name such as ito__suspend as Ada's
    # ito.suspend)
    demangle = gdb.parameter("print demangle")
    try:
        gdb.execute("set print demangle off", to_string=True)
        out = gdb.execute("info symbol %#x" % addr, to_string=True).strip()
    except gdb.error:
        out = ""
    finally:
        gdb.execute("set print demangle %s" % ("on" if demangle else "off"), to_string=True)
    if not out or out.startswith("No symbol"):
        return "%#x" % addr
    return "%#x <%s>" % (addr, out.split(" in section")[0])


def _threads(d, running):
    """(id, ithread address, fiber address) of every live thread (running:
    what _running(d) gives)."""
    moved = set(_u64(fib + d["fiber_thread"]) for fib in running)
    n = _u32(d["handle_nslots"])
    per = 1 << d["handle_chunk_log2"]
    out = []
    for i in range(n):
        chunk = _u64(d["handle_chunks"] + 8 * (i // per))
        if not chunk:
            continue
        t = _u64(chunk + (i % per) * d["slot_size"] + d["slot_t"])
        if not t or _u32(t + d["th_sync"]) >= d["ts_done"]:
            continue
        f = t - d["fiber_th"]
        # a free stack's descriptor is fresh but no thread runs for it
        if _u64(f + d["fiber_thread"]) != t and t not in moved:
            continue
        out.append((i, t, f))
    return out


def _running(d):
    """fiber address -> worker id, for the fiber each worker runs now."""
    run = {}
    workers = _u64(d["workers"])
    if not workers:
        return run
    for k in range(_u32(d["nslots"])):
        w = _u64(workers + 8 * k)
        if w:
            cur = _u64(w + d["worker_cur"])
            if cur:
                run[cur] = _u32(w + d["worker_id"])
    return run


def _state(d, t, f, running):
    if f in running:
        return "running", running[f]
    # the thread may have moved to another stack (a stolen continuation)
    if _u64(f + d["fiber_thread"]) != t:
        for fib, wid in running.items():
            if _u64(fib + d["fiber_thread"]) == t:
                return "running", wid
        return "ready (on another stack)", None
    on = _u64(f + d["fiber_parked_on"])
    if on:
        return ("parked" if on == f else "parked on %s" % _symbol(on)), None
    return "ready", None


class _ContextUnwinder(Unwinder):
    """While ctx is set, the current frame's caller is the saved context."""

    def __init__(self):
        super().__init__("ito-saved-context")
        self.ctx = None
        self.saved_sp = 0

    def __call__(self, pending):
        if self.ctx is None or pending.level() != 0:
            return None
        _, _, spreg, pcreg = CONTEXTS[_arch()]
        sp = pending.read_register(spreg)
        pc = pending.read_register(pcreg)
        # the frame's id says it is just inside the saved context, so that
        # gdb's check that callers are outer frames holds on the thread's
        # own stack (the current frame may be on any other stack)
        fid = gdb.Value(self.saved_sp).cast(sp.type)
        info = pending.create_unwind_info(_FrameId(fid, pc))
        for reg, val in self.ctx.items():
            info.add_saved_register(reg, gdb.Value(val).cast(sp.type))
        return info


class _FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


_UNWINDER = _ContextUnwinder()
gdb.unwinder.register_unwinder(None, _UNWINDER, replace=True)


def _describe_frame(level, frame):
    pc = frame.pc()
    fn = frame.function()
    if fn is not None:
        name = fn.print_name
    else:  # a minimal symbol
        sym = _symbol(pc - 1)
        name = sym.split("<", 1)[1].split(" ")[0].rstrip(">") if "<" in sym else "??"
    sal = frame.find_sal()
    where = ""
    if sal.symtab is not None:
        where = " at %s:%d" % (sal.symtab.filename, sal.line)
    else:
        lib = gdb.solib_name(pc)
        if lib:
            where = " from %s" % lib
    return "#%-2d %#018x in %s ()%s" % (level, pc, name, where)


class InfoItoThreads(gdb.Command):
    """List ito's lightweight threads: id, state, worker, start function."""

    def __init__(self):
        super().__init__("info ito-threads", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        try:
            self._list()
        except gdb.MemoryError as e:
            raise gdb.GdbError("ito: cannot read the runtime's state (%s)" % e)

    def _list(self):
        d = _info()
        running = _running(d)
        rows = _threads(d, running)
        if not rows:
            print("No lightweight threads.")
            return
        print("  Id   State                                     Worker  Start")
        for i, t, f in rows:
            state, wid = _state(d, t, f, running)
            fn = _u64(t + d["th_fn"])
            name = _read(t + d["th_name"], d["th_name_size"]).split(b"\0")[0].decode(
                "utf-8", "replace")
            start = _symbol(fn) if fn else "(the program's main thread)"
            if name:
                start += ' "%s"' % name
            print("  %-4d %-41s %-7s %s" % (i, state, "-" if wid is None else wid, start))


class ItoBt(gdb.Command):
    """ito-bt ID [N]: the backtrace of lightweight thread ID (from info ito-threads)."""

    def __init__(self):
        super().__init__("ito-bt", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        try:
            self._bt(arg)
        except gdb.MemoryError as e:
            raise gdb.GdbError("ito: cannot read the runtime's state (%s)" % e)

    def _bt(self, arg):
        argv = gdb.string_to_argv(arg)
        if not argv:
            raise gdb.GdbError("usage: ito-bt ID [N]")
        try:
            want, limit = int(argv[0]), int(argv[1]) if len(argv) > 1 else 64
        except ValueError:
            raise gdb.GdbError("usage: ito-bt ID [N] (ID and N are numbers; ID from info ito-threads)")
        d = _info()
        running = _running(d)
        rows = {i: (t, f) for i, t, f in _threads(d, running)}
        if want not in rows:
            raise gdb.GdbError("ito: no live lightweight thread %d (see info ito-threads)" % want)
        t, f = rows[want]
        state, wid = _state(d, t, f, running)
        if state == "running":
            print("thread %d runs on worker %s: its backtrace is that OS thread's "
                  "(info threads; thread N; bt)" % (want, wid))
            return
        if _u64(f + d["fiber_thread"]) != t:
            raise gdb.GdbError("ito: thread %d runs on another stack now" % want)
        sp = _u64(f + d["fiber_sp"])
        if not sp:
            raise gdb.GdbError("ito: thread %d has no saved context (not started yet)" % want)
        regs, caller_sp, spreg, _ = CONTEXTS[_arch()]
        ctx = {reg: _u64(sp + off) for reg, off in regs.items()}
        ctx[spreg] = sp + caller_sp
        print("thread %d, %s:" % (want, state))
        _UNWINDER.ctx = ctx
        _UNWINDER.saved_sp = sp
        gdb.invalidate_cached_frames()
        try:
            frame = gdb.newest_frame().older()
            level = 0
            while frame is not None and level < limit:
                print(_describe_frame(level, frame))
                older = frame.older()
                if older is None and frame.unwind_stop_reason() > gdb.FRAME_UNWIND_OUTERMOST:
                    print("(%s)" % gdb.frame_stop_reason_string(frame.unwind_stop_reason()))
                frame = older
                level += 1
        finally:
            _UNWINDER.ctx = None
            gdb.invalidate_cached_frames()


InfoItoThreads()
ItoBt()
