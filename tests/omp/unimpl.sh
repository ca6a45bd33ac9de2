#!/usr/bin/env bash
# unimpl.sh PROG LIBITO_OMP CASE ENTRY_POINT
#
# PROG CASE uses a construct whose entry point ENTRY_POINT libito-omp does
# not implement (unimpl.c). Under plain libgomp it must run (exit 0);
# under LD_PRELOAD=LIBITO_OMP it must stop: a nonzero exit status that is
# not a timeout, ENTRY_POINT named on stderr, and the construct's result
# never printed.
set -u
if [ $# -ne 4 ]; then
  echo "usage: unimpl.sh PROG LIBITO_OMP CASE ENTRY_POINT" >&2
  exit 2
fi
prog=$1 lib=$2 case=$3 entry=$4
limit=${OMPTEST_TIMEOUT:-60}
[ -f "$lib" ] || { echo "unimpl.sh: $lib: no such library" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-omp-unimpl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

timeout -k 5 "$limit" env OMP_NUM_THREADS=2 "$prog" "$case" >"$tmp/gomp.out" 2>"$tmp/gomp.err"
rc=$?
cat "$tmp/gomp.out" "$tmp/gomp.err"
if [ $rc -ne 0 ]; then
  echo "unimpl.sh: $case: the program failed under libgomp (exit status $rc)" >&2
  exit 1
fi

timeout -k 5 "$limit" env OMP_NUM_THREADS=2 ITO_NUM_WORKERS=2 "LD_PRELOAD=$lib" "$prog" "$case" \
  >"$tmp/ito.out" 2>"$tmp/ito.err"
rc=$?
echo "---- under $lib: exit status $rc"
cat "$tmp/ito.out"
sed 's/^/  [stderr] /' "$tmp/ito.err"
status=0
if [ $rc -eq 0 ]; then
  echo "unimpl.sh: $case: exit status 0 under $lib; expected a failure naming $entry" >&2
  status=1
elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "unimpl.sh: $case: timed out under $lib after $limit s" >&2
  status=1
fi
if ! grep -qF -- "$entry" "$tmp/ito.err"; then
  echo "unimpl.sh: $case: stderr under $lib does not name $entry" >&2
  status=1
fi
if grep -q "ran" "$tmp/ito.out"; then
  echo "unimpl.sh: $case: the construct ran under $lib (libgomp's $entry was used?)" >&2
  status=1
fi
[ $status -eq 0 ] && echo "unimpl.sh: $case: PASS ($entry refused with a message)"
exit $status
