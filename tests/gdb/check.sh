#!/usr/bin/env bash
# check.sh GDB_SCRIPT PROGRAM: gdb's view of lightweight threads
# (tools/gdb/ito-gdb.py), in batch mode on tests/gdb/parked.c: in the live
# process, `info ito-threads` lists the four parked threads with what they
# wait on and their start functions, and `ito-bt` unwinds a parked one
# through the runtime into the program's frames; the same from a core dump
# of it (taken with gcore, which cannot read guard regions: the stacks are
# made without guard pages). Exits 77 (skipped) without gdb.
set -u
script=$1 prog=$2
command -v gdb >/dev/null || { echo "check.sh: SKIPPED: gdb is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-gdb.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check.sh: FAIL: $*"; echo "---- gdb's output:"; cat "$tmp/out"; exit 1; }

checks() { # $1: live or core
  local out=$tmp/out
  grep -q '^  Id   State' "$out" || fail "$1: no thread table"
  local lockers waiters
  lockers=$(grep -c 'parked on .*<mu.*parked_locker' "$out")
  waiters=$(grep -c 'parked on .*<cv.*parked_waiter' "$out")
  [ "$lockers" = 3 ] || fail "$1: $lockers threads parked on mu in parked_locker, expected 3"
  [ "$waiters" = 1 ] || fail "$1: $waiters threads parked on cv in parked_waiter, expected 1"
  grep -q 'running .*(the program.s main thread)' "$out" || fail "$1: main is not running"
  grep -q '^thread [0-9]*, parked on' "$out" || fail "$1: ito-bt printed no header"
  grep -q 'in ito__wq_wait ()' "$out" || fail "$1: ito-bt did not unwind through the runtime's wait (ito__wq_wait)"
  [ "$(grep -c 'in parked_deep ()' "$out")" -ge 4 ] || fail "$1: ito-bt did not show parked_deep's 4 frames"
  grep -q 'in parked_locker ()' "$out" || fail "$1: ito-bt did not reach parked_locker"
}

# what both runs do: list, find a parked thread's id, unwind it
cat > "$tmp/look.gdb" <<GDB
info ito-threads
python
import gdb
out = gdb.execute("info ito-threads", to_string=True)
ids = [l.split()[0] for l in out.splitlines() if "parked on" in l and "<mu" in l]
gdb.execute("ito-bt %s 24" % ids[0])
end
GDB

# live: stop there, look, write a core
ITO_NUM_WORKERS=2 ITO_STACK_GUARD=never timeout 120 gdb -q -batch -nx \
  -ex "set pagination off" -ex "set confirm off" -ex "source $script" \
  -ex "break gdb_stop_here" -ex run -x "$tmp/look.gdb" \
  -ex "generate-core-file $tmp/core" -ex kill "$prog" > "$tmp/out" 2>&1 ||
  fail "live: gdb exited with $?"
checks live
[ -s "$tmp/core" ] || fail "live: no core file written"

# the core: the same look
timeout 120 gdb -q -batch -nx -ex "set pagination off" -ex "source $script" -x "$tmp/look.gdb" \
  "$prog" "$tmp/core" > "$tmp/out" 2>&1 || fail "core: gdb exited with $?"
checks core
# a bad id is refused with a message
timeout 60 gdb -q -batch -nx -ex "source $script" -ex "ito-bt 999999" "$prog" "$tmp/core" \
  > "$tmp/out" 2>&1
grep -q 'no live lightweight thread 999999' "$tmp/out" || fail "a bad id: no message"
echo "check.sh: PASS (live process and core dump)"
