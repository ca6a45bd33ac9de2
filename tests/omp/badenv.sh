#!/usr/bin/env bash
# badenv.sh PROG LIBITO_OMP VAR VALUE
#
# Runs PROG (envprobe.c) with VAR=VALUE, an invalid value. libgomp prints
# a warning ("libgomp: Invalid value for environment variable VAR") and
# goes on with the default; libito-omp must instead stop the program:
# a nonzero exit status that is not a timeout, and a line on stderr that
# names VAR and is not libgomp's warning (libgomp is still loaded under
# the preload and prints its own). The libgomp run must exit 0.
set -u
if [ $# -ne 4 ]; then
  echo "usage: badenv.sh PROG LIBITO_OMP VAR VALUE" >&2
  exit 2
fi
prog=$1 lib=$2 var=$3 value=$4
limit=${OMPTEST_TIMEOUT:-60}
[ -f "$lib" ] || { echo "badenv.sh: $lib: no such library" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-omp-badenv.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Only the variable under test (and OMP_NUM_THREADS=2 unless it is it).
base=(env)
while IFS='=' read -r v _; do
  case $v in OMP_* | GOMP_*) base+=(-u "$v") ;; esac
done < <(env)
[ "$var" != OMP_NUM_THREADS ] && base+=(OMP_NUM_THREADS=2)

timeout -k 5 "$limit" "${base[@]}" "$var=$value" "$prog" >"$tmp/gomp.out" 2>"$tmp/gomp.err"
rc=$?
echo "---- libgomp, $var=$value: exit status $rc"
cat "$tmp/gomp.out"
sed 's/^/  [stderr] /' "$tmp/gomp.err"
if [ $rc -ne 0 ]; then
  echo "badenv.sh: the program failed under libgomp with $var=$value (exit status $rc)" >&2
  exit 1
fi

timeout -k 5 "$limit" "${base[@]}" "$var=$value" ITO_NUM_WORKERS=2 "LD_PRELOAD=$lib" "$prog" \
  >"$tmp/ito.out" 2>"$tmp/ito.err"
rc=$?
echo "---- $lib, $var=$value: exit status $rc"
cat "$tmp/ito.out"
sed 's/^/  [stderr] /' "$tmp/ito.err"
status=0
if [ $rc -eq 0 ]; then
  echo "badenv.sh: $var=$value: the program ran to the end under $lib; expected it to stop with a message naming $var" >&2
  status=1
elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "badenv.sh: $var=$value: timed out under $lib" >&2
  status=1
fi
if ! grep -v '^libgomp:' "$tmp/ito.err" | grep -qF -- "$var"; then
  echo "badenv.sh: $var=$value: no message naming $var on stderr under $lib (other than libgomp's own warning)" >&2
  status=1
fi
[ $status -eq 0 ] && echo "badenv.sh: $var=$value: PASS (refused with a message)"
exit $status
