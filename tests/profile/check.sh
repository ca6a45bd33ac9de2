#!/usr/bin/env bash
# check.sh TEST_PROFILE TEST_PROFILE_CPP [OMP_PROG LIBITO_OMP [PT_PROG LIBITO_PTHREAD]]
# (- for a pair this build cannot run)
#
# The profiler from outside (docs/profile.md): runs tests/test_profile.c in
# its modes with ITO_PROFILE set and reads what it wrote:
#   - the figures' shapes (in the program itself), a second start of the
#     runtime (files PREFIX.2.*), the summary and its diagnosis on stderr;
#   - trees beside busy processes the program starts itself, on more workers
#     than CPUs: each tree's span and work near its nodes' own times on the
#     CPU;
#   - the CSV has Cilkscale's header, a row per region and the whole run's
#     (empty tag) last;
#   - the trace is JSON a parser reads, every worker's slices follow one
#     another without overlap, every flow has both ends; the graph's edges
#     name its nodes;
#   - more records than the buffers hold: the figures stay, the summary
#     and the trace say how much of the timeline was dropped;
#   - a program that returns from main without ito_finalize: the profile
#     is written at exit;
#   - subtrees of fine tasks collapsed (and not, when ITO_PROFILE_COLLAPSE
#     is 0), their spawns counted exactly, their estimated parallelism near
#     an exact run's; a bad ITO_PROFILE_COLLAPSE refused with one line;
#   - work-time stretch against a 1-worker baseline; a baseline that is not
#     a profile CSV is one line, and the run goes on;
#   - a bad ITO_PROFILE stops the program with one line and exit status 2;
#     an unwritable ITO_PROFILE_OUT is one line, and the program's output
#     and exit status are what they are without the profiler;
#   - with OMP_PROG and LIBITO_OMP: an OpenMP program (barriers) under
#     libito-omp.so, profiled, prints what it prints unprofiled; likewise a
#     pthread producer-consumer under libito-pthread.so, whose threads the
#     profile counts and whose waits it reports as blocked time.
set -u
prog=$1
cpp_prog=$2
omp_prog=${3:--}
omp_lib=${4:--}
pt_prog=${5:--}
pt_lib=${6:--}
command -v python3 > /dev/null || { echo "check.sh: python3 is needed to read the files: SKIPPED"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-profile.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check.sh: $*" >&2; exit 1; }
# a cross build's programs run under PROFILE_EMULATOR (qemu-aarch64 -L ...)
run() { ${PROFILE_EMULATOR:-} "$@"; }

# 1. without ITO_PROFILE the API is inert
env -u ITO_PROFILE ${PROFILE_EMULATOR:-} "$prog" off > /dev/null || fail "the off mode failed"

# 2. shapes, all four outputs, two runs of the runtime: closely on one
# worker (the graph's shape does not depend on the workers), loosely on two
# (steals; parallel strands slow each other on a loaded machine)
ITO_PROFILE=summary ITO_NUM_WORKERS=1 run "$prog" shapes > "$tmp/out" 2> "$tmp/err" ||
  { cat "$tmp/out" "$tmp/err"; fail "shapes failed on one worker"; }
cat "$tmp/out"
ITO_PROFILE=summary,csv,trace,dag ITO_PROFILE_OUT="$tmp/p" ITO_NUM_WORKERS=2 \
  run "$prog" shapes 2.5 > "$tmp/out" 2> "$tmp/err" ||
  { cat "$tmp/out" "$tmp/err"; fail "shapes failed on two workers"; }
cat "$tmp/out"
for f in p.csv p.trace.json p.dag.json p.2.csv p.2.trace.json p.2.dag.json; do
  [ -s "$tmp/$f" ] || fail "no $f"
done
# (2 workers, or more with an extra one the monitor started beside a worker
# it found blocked: under ThreadSanitizer on a loaded machine, one asleep in
# the sanitizer's own lock)
grep -Eq "^ito profile \(run 1, [2-9] workers\)" "$tmp/err" || fail "no summary of run 1: $(cat "$tmp/err")"
grep -Eq "^ito profile \(run 2, [2-9] workers\)" "$tmp/err" || fail "no summary of run 2"
[ "$(grep -c '^  diagnosis: ' "$tmp/err")" = 2 ] || fail "not one diagnosis line a run"
python3 - "$tmp" <<'PY' || exit 1
import csv, json, sys
d = sys.argv[1]
def fail(m):
    print("check.sh: " + m, file=sys.stderr); sys.exit(1)
rows = list(csv.reader(open(d + "/p.csv")))
if rows[0] != ["tag", "work (seconds)", "span (seconds)", "parallelism",
               "burdened_span (seconds)", "burdened_parallelism"]:
    fail("CSV header %r" % rows[0])
tags = [r[0] for r in rows[1:]]
if tags[-1] != "" or sorted(tags[:-1]) != sorted(["all", "chains", "fan", "tree", "handoff"]):
    fail("CSV rows %r" % tags)
for r in rows[1:]:
    w, s, par, bs, bpar = map(float, r[1:])
    if not (w > 0 and 0 < s <= bs and par > 0 and bpar > 0):
        fail("CSV row %r" % r)
fan = [r for r in rows if r[0] == "fan"][0]
if not 3 <= float(fan[3]) <= 10:  # (two workers: loosely, as in the program)
    fail("fan's parallelism %s in the CSV" % fan[3])
for run in ("p", "p.2"):
    t = json.load(open("%s/%s.trace.json" % (d, run)))
    ev = t["traceEvents"]
    tracks = {}
    flows = {}
    for e in ev:
        if e["ph"] == "X":
            tracks.setdefault(e["tid"], []).append((e["ts"], e["dur"], e["name"]))
        elif e["ph"] in "sf":
            flows.setdefault(e["id"], set()).add(e["ph"])
    if not tracks or "program" not in {n for tr in tracks.values() for _, _, n in tr}:
        fail("%s: no program slices" % run)
    for tid, sl in tracks.items():
        sl.sort()
        for (a, da, _), (b, _, _) in zip(sl, sl[1:]):
            if a + da > b + 0.01:
                fail("%s: worker %s: slices overlap at %.3f us" % (run, tid, b))
    for i, ends in flows.items():
        if ends != {"s", "f"}:
            fail("%s: flow %s has ends %s" % (run, i, ends))
    g = json.load(open("%s/%s.dag.json" % (d, run)))
    ids = {n["id"] for n in g["nodes"]}
    if not ids:
        fail("%s: the graph has no node" % run)
    for e in g["edges"]:
        if e["from"] not in ids or e["to"] not in ids:
            fail("%s: edge %r names no node" % (run, e))
print("check.sh: CSV, trace and graph read back")
PY

# 2a. a machine whose CPUs other processes share: busy processes (two per
# CPU) beside eight workers, started and stopped by the program itself. Not
# under an emulator, where the runtime's code on the path runs far slower
# against the program's than on the machine.
if [ -z "${PROFILE_EMULATOR:-}" ]; then
  ITO_PROFILE=1 ITO_NUM_WORKERS=8 "$prog" load > "$tmp/out" 2> "$tmp/err" ||
    { cat "$tmp/out" "$tmp/err"; fail "load failed"; }
  tail -n 1 "$tmp/out"
fi

# 2b. the C++ form
ITO_PROFILE=1 ITO_NUM_WORKERS=1 run "$cpp_prog" 2> /dev/null || fail "the C++ API failed"

# 2c. work-time stretch against a baseline of one worker, and a baseline
# that is not one
ITO_PROFILE=csv ITO_PROFILE_OUT="$tmp/base" ITO_NUM_WORKERS=1 run "$prog" plain > /dev/null ||
  fail "the baseline run failed"
ITO_PROFILE=1 ITO_PROFILE_BASELINE="$tmp/base.csv" ITO_NUM_WORKERS=2 run "$prog" plain \
  > /dev/null 2> "$tmp/err" || fail "the run against the baseline failed"
grep -Eq "^  work-time stretch [0-9]+\.[0-9]+ \(against $tmp/base.csv\)" "$tmp/err" ||
  fail "no work-time stretch against the baseline: $(cat "$tmp/err")"
ITO_PROFILE=1 ITO_PROFILE_BASELINE="$tmp/err" run "$prog" plain > /dev/null 2> "$tmp/err2" ||
  fail "a bad baseline changed the exit status"
grep -q "^ito: ITO_PROFILE_BASELINE=$tmp/err: not a profile CSV with a whole-run row" "$tmp/err2" ||
  fail "no message for a bad baseline: $(cat "$tmp/err2")"
# the figures back (ito_profile_get) carry the stretch too, for the run and
# a region
ITO_PROFILE=csv ITO_PROFILE_OUT="$tmp/tbase" ITO_NUM_WORKERS=1 run "$prog" stretch > /dev/null ||
  fail "the stretch mode's baseline run failed"
ITO_PROFILE=1 ITO_PROFILE_BASELINE="$tmp/tbase.csv" ITO_NUM_WORKERS=2 run "$prog" stretch \
  > /dev/null 2> "$tmp/err" || { cat "$tmp/err"; fail "no stretch in the figures back"; }

# 3. overflow: the figures stay, the timeline says what it lost
ITO_PROFILE=summary,trace ITO_PROFILE_OUT="$tmp/o" ITO_NUM_WORKERS=1 \
  run "$prog" overflow > /dev/null 2> "$tmp/err" || { cat "$tmp/err"; fail "overflow failed"; }
grep -q "the timeline is partial: [0-9]* records did not fit" "$tmp/err" ||
  fail "overflow: the summary does not say the timeline is partial: $(cat "$tmp/err")"
python3 -c "
import json, sys
t = json.load(open('$tmp/o.trace.json'))
sys.exit(0 if t['otherData']['dropped_records'] > 0 else 1)" || fail "overflow: the trace does not count what it dropped"

# 3b. no ito_finalize: the profile is written at exit
ITO_PROFILE=summary,trace ITO_PROFILE_OUT="$tmp/x" ITO_NUM_WORKERS=2 run "$prog" exit \
  > /dev/null 2> "$tmp/err" || { cat "$tmp/err"; fail "the exit mode failed"; }
grep -Eq "^ito profile \(run 1, [2-9] workers\)" "$tmp/err" || fail "no summary at exit: $(cat "$tmp/err")"
python3 -c "import json; json.load(open('$tmp/x.trace.json'))" || fail "the trace written at exit is not JSON"

# 3c. collapsing (ITO_PROFILE_COLLAPSE): spawns counted exactly, subtrees
# collapsed only when allowed, on one worker and with steals on two; the
# parallelism the collapsed subtrees' estimates give against an exact
# run's (the estimate comes from subtrees recorded whole: a few times off
# at most, on trees of sub-microsecond tasks where the recorder's own cost
# weighs most; the exact run's parallelism is about 2.3 times the estimate
# in Release, 3.3 in Debug and up to 4.1 in Debug beside a load, so the
# bound is 6). A threshold of 100 us collapses in slow builds as well.
par() { sed -n 's/.*fan8 parallelism \([0-9.]*\)$/\1/p' "$1"; }
for w in 1 2; do
  ITO_PROFILE=1 ITO_PROFILE_COLLAPSE=100000 ITO_NUM_WORKERS=$w run "$prog" collapse some \
    > "$tmp/c$w" 2> "$tmp/err" || { cat "$tmp/c$w" "$tmp/err"; fail "collapse failed on $w workers"; }
  cat "$tmp/c$w"
done
ITO_PROFILE=1 ITO_PROFILE_COLLAPSE=0 ITO_NUM_WORKERS=1 run "$prog" collapse none > "$tmp/c0" 2> "$tmp/err" ||
  { cat "$tmp/c0" "$tmp/err"; fail "ITO_PROFILE_COLLAPSE=0 collapsed, or failed"; }
cat "$tmp/c0"
python3 -c "
import sys
c, e = float(sys.argv[1]), float(sys.argv[2])
sys.exit(0 if e / 6 <= c <= e * 6 else 1)" "$(par "$tmp/c1")" "$(par "$tmp/c0")" ||
  fail "collapsed parallelism $(par "$tmp/c1") against exact $(par "$tmp/c0")"
for v in abc -1 10000001 1e3; do
  err=$(ITO_PROFILE=1 ITO_PROFILE_COLLAPSE="$v" run "$prog" plain 2>&1 > /dev/null)
  rc=$?
  [ $rc -eq 2 ] || fail "ITO_PROFILE_COLLAPSE='$v': exit status $rc, not 2"
  case $err in
    "ito: ITO_PROFILE_COLLAPSE=$v is not valid: expected a whole number from 0 to 10000000"*) ;;
    *) fail "ITO_PROFILE_COLLAPSE='$v': message '$err'" ;;
  esac
  [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "ITO_PROFILE_COLLAPSE='$v': more than one line"
done

# 4. bad values: one line, exit status 2
for v in bogus summary,,csv 'summary csv' 2 trace,foo; do
  err=$(ITO_PROFILE="$v" run "$prog" plain 2>&1 > /dev/null)
  rc=$?
  [ $rc -eq 2 ] || fail "ITO_PROFILE='$v': exit status $rc, not 2"
  case $err in
    "ito: ITO_PROFILE=$v is not valid: expected 0, 1, or a comma list of summary, csv, trace and dag"*) ;;
    *) fail "ITO_PROFILE='$v': message '$err'" ;;
  esac
  [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "ITO_PROFILE='$v': more than one line"
done

# 5. an unwritable prefix: a line, and the program as without the profiler
env -u ITO_PROFILE ${PROFILE_EMULATOR:-} "$prog" plain > "$tmp/plain0" || fail "plain failed"
ITO_PROFILE=summary,csv,trace ITO_PROFILE_OUT=/nonexistent/dir/p run "$prog" plain > "$tmp/plain1" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "an unwritable ITO_PROFILE_OUT changed the exit status to $rc"
cmp -s "$tmp/plain0" "$tmp/plain1" || fail "the profiler changed the program's output"
grep -q "^ito: ITO_PROFILE_OUT=/nonexistent/dir/p: cannot write /nonexistent/dir/p.csv (No such file or directory)" "$tmp/err" ||
  fail "no message for the unwritable prefix: $(cat "$tmp/err")"
grep -q "^ito profile (run 1" "$tmp/err" || fail "the summary is lost with the files"

# 6. an OpenMP program under libito-omp.so
if [ "$omp_prog" != - ]; then
  OMP_NUM_THREADS=2 ITO_NUM_WORKERS=2 LD_PRELOAD="$omp_lib" "$omp_prog" > "$tmp/omp0" ||
    fail "$omp_prog failed"
  OMP_NUM_THREADS=2 ITO_NUM_WORKERS=2 ITO_PROFILE=summary,csv ITO_PROFILE_OUT="$tmp/omp" \
    LD_PRELOAD="$omp_lib" "$omp_prog" > "$tmp/omp1" 2> "$tmp/err" || fail "$omp_prog failed profiled"
  cmp -s "$tmp/omp0" "$tmp/omp1" || fail "the profiler changed $omp_prog's output"
  grep -Eq "^ito profile \(run 1, [2-9] workers\)" "$tmp/err" || fail "no summary for $omp_prog: $(cat "$tmp/err")"
  python3 -c "
import csv, sys
rows = list(csv.reader(open('$tmp/omp.csv')))
sys.exit(0 if rows[-1][0] == '' and float(rows[-1][1]) > 0 else 1)" || fail "$omp_prog: no work in the CSV"
  echo "check.sh: $(basename "$omp_prog") profiled under libito-omp.so"
fi
# 7. a pthread program under libito-pthread.so
if [ "$pt_prog" != - ]; then
  ITO_NUM_WORKERS=2 LD_PRELOAD="$pt_lib" "$pt_prog" > "$tmp/pt0" || fail "$pt_prog failed"
  ITO_NUM_WORKERS=2 ITO_PROFILE=summary LD_PRELOAD="$pt_lib" "$pt_prog" > "$tmp/pt1" 2> "$tmp/err" ||
    fail "$pt_prog failed profiled"
  cmp -s "$tmp/pt0" "$tmp/pt1" || fail "the profiler changed $pt_prog's output"
  grep -Eq "^  counts: [0-9]+ spawns, [0-9]+ steals \([0-9]+ failed attempts\), [1-9][0-9]* threads created, [1-9][0-9]* parks" "$tmp/err" ||
    fail "$pt_prog: no threads or parks counted: $(cat "$tmp/err")"
  grep -Eq "blocked [1-9][0-9]*\.[0-9]%" "$tmp/err" || fail "$pt_prog: no blocked time: $(cat "$tmp/err")"
  echo "check.sh: $(basename "$pt_prog") profiled under libito-pthread.so"
fi
echo "check.sh: PASS"
