#!/usr/bin/env python3
"""layers.py ROOT: no source of libito.so includes a header of a layer above
its own (docs/architecture.md, "Layers"). The layers, lowest first, and
the modules of each (a module: a .c and its .h by one name) are below;
a module of src/core/ missing from the table fails the check, so that a
new file is given its place.

Exit status 0 when every include runs downward or within a layer, 1 with
one line per upward include (or unplaced module), 2 for bad usage."""
import os
import re
import sys

LAYERS = [
    ("base", "base relax timespec os os_table config config_row elfsym san forkpart observe "
             "event poll_source"),
    ("blocks and machine", "waitq timer hooks topo places"),
    ("scheduler", "asm_contract worker deque idle lazy record fiber thread handle switch runtime "
                  "monitor sched keys debug wait sync poll nodeq posix_hooks"),
    ("NUMA memory", "numa"),
    ("process semantics", "tcb signal signal_int sigcall sigroute tls cpuclock setxid atfork preempt "
                          "overflow posix"),
    ("profiler", "profile profile_clock profile_collapse profile_config profile_data profile_out "
                 "profile_rec profile_regions"),
]
# the folders above src/core/, each a layer of its own, lowest first
FOLDERS = ["src/core", "src/io", "src/dropin"]


def main():
    if len(sys.argv) != 2:
        print("usage: layers.py ROOT", file=sys.stderr)
        return 2
    root = sys.argv[1]
    core = os.path.join(root, "src/core")
    if not os.path.isdir(core):
        print("layers.py: %s: no such folder" % core, file=sys.stderr)
        return 1
    rank = {}
    for i, (_, names) in enumerate(LAYERS):
        for n in names.split():
            rank["src/core/" + n] = i
    bad = []
    files = 0
    for fi, folder in enumerate(FOLDERS):
        d = os.path.join(root, folder)
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            files += 1
            mod = folder + "/" + f.rsplit(".", 1)[0]
            if folder == "src/core" and mod not in rank:
                bad.append("layers.py: %s/%s has no layer: give it one in tests/layers.py" %
                           (folder, f))
                continue
            with open(os.path.join(d, f)) as fh:
                text = fh.read()
            for inc in re.findall(r'^#\s*include\s+"([^"]+)"', text, re.M):
                target = os.path.normpath(os.path.join(folder, inc))
                tfolder, tname = os.path.split(target)
                if tfolder not in FOLDERS:
                    continue
                tmod = tfolder + "/" + tname.rsplit(".", 1)[0]
                up = False
                if FOLDERS.index(tfolder) > fi:
                    up = True
                elif tfolder == folder == "src/core" and tmod in rank:
                    up = rank[tmod] > rank[mod]
                if up:
                    where = LAYERS[rank[tmod]][0] if tmod in rank else tfolder
                    bad.append('layers.py: %s/%s includes "%s", a layer above its own (%s)' %
                               (folder, f, inc, where))
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    print("layers.py: %d sources of %s include only their own layer and those below" %
          (files, ", ".join(FOLDERS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
