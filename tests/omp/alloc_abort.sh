#!/usr/bin/env bash
# alloc_abort.sh PROG LIBITO_OMP
#
# PROG abort (alloc.c) allocates more than an allocator with
# fallback(abort_fb) has left in its pool. Under plain libgomp and under
# LD_PRELOAD=LIBITO_OMP the program must stop there: a nonzero exit status
# that is not a timeout or a signal, "Out of memory allocating 2048 bytes"
# on stderr, the block before it allocated, and nothing printed after it.
set -u
if [ $# -ne 2 ]; then
  echo "usage: alloc_abort.sh PROG LIBITO_OMP" >&2
  exit 2
fi
prog=$1 lib=$2
limit=${OMPTEST_TIMEOUT:-60}
[ -f "$lib" ] || { echo "alloc_abort.sh: $lib: no such library" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-omp-abort.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

status=0
# check NAME [ENV...]: one run, judged
check() {
  local name=$1
  shift
  # the program stops on purpose with blocks still allocated: no leak report
  timeout -k 5 "$limit" env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$@" \
    "$prog" abort >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  echo "---- $name: exit status $rc"
  cat "$tmp/out"
  sed 's/^/  [stderr] /' "$tmp/err"
  if [ $rc -eq 0 ]; then
    echo "alloc_abort.sh: $name: exit status 0; expected the abort_fb fallback to stop it" >&2
    status=1
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ] || [ $rc -gt 128 ]; then
    echo "alloc_abort.sh: $name: timed out or killed by a signal (exit status $rc)" >&2
    status=1
  fi
  if ! grep -q "Out of memory allocating 2048 bytes" "$tmp/err"; then
    echo "alloc_abort.sh: $name: no out-of-memory message naming the 2048 bytes on stderr" >&2
    status=1
  fi
  if [ "$(grep -c . "$tmp/err")" -ne 1 ]; then
    echo "alloc_abort.sh: $name: expected one line on stderr (blank lines aside)" >&2
    status=1
  fi
  if ! grep -qx "first block: allocated" "$tmp/out" || grep -q "survived" "$tmp/out"; then
    echo "alloc_abort.sh: $name: expected the first block and nothing after the failed one" >&2
    status=1
  fi
}
check libgomp OMP_NUM_THREADS=2
check "$lib" OMP_NUM_THREADS=2 ITO_NUM_WORKERS=2 "LD_PRELOAD=$lib"
[ $status -eq 0 ] && echo "alloc_abort.sh: PASS (abort_fb stops the program with a message)"
exit $status
