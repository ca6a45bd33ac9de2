#!/usr/bin/env bash
# overflow.sh PROG LIBITO_OMP
#
# Stack sizes and overflows of team members and tasks under
# LD_PRELOAD=LIBITO_OMP (PROG is overflow.c):
#   - a member and a task each use 6 MiB of their stack (1 KiB frames):
#     they fit in the default size (libgomp's: the default pthread stack
#     size, 8 MiB), as under libgomp;
#   - with OMP_STACKSIZE=1M, GOMP_STACKSIZE=1M or ITO_STACK_SIZE=1M they do
#     not: the program stops with ito's stack overflow message, naming the
#     1 MiB stack, and a status that is not 0 (SIGABRT); ITO_STACK_SIZE
#     and OMP_STACKSIZE win over GOMP_STACKSIZE, ITO_STACK_SIZE over
#     OMP_STACKSIZE;
#   - an unbounded recursion stops with the message at the default size.
# A frame of 1 KiB is below the guard page (4 KiB): the overflow faults on
# the guard, never beyond (docs/openmp.md, "Stacks").
set -u
if [ $# -ne 2 ]; then
  echo "usage: overflow.sh PROG LIBITO_OMP" >&2
  exit 2
fi
prog=$1 lib=$2
limit=${OMPTEST_TIMEOUT:-60}
[ -f "$lib" ] || { echo "overflow.sh: $lib: no such library" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-omp-overflow.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset OMP_STACKSIZE GOMP_STACKSIZE ITO_STACK_SIZE

status=0
# run EXPECT MODE KIB [VAR=VALUE...]: EXPECT is "ok" (exit 0, the depth
# printed, nothing on stderr) or "overflow" (ito's message naming a stack
# of at least 1 MiB, when the next argument is 1M, and a nonzero status
# that is not a timeout)
run() {
  local expect=$1 mode=$2 kib=$3
  shift 3
  timeout -k 5 "$limit" env "$@" ITO_NUM_WORKERS=2 "LD_PRELOAD=$lib" "$prog" "$mode" "$kib" \
    >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  echo "---- $mode $kib KiB ${*:-(default sizes)}: exit status $rc, expected $expect"
  sed 's/^/  [stdout] /' "$tmp/out"
  sed 's/^/  [stderr] /' "$tmp/err"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "overflow.sh: timed out" >&2
    status=1
  elif [ "$expect" = ok ]; then
    if [ $rc -ne 0 ] || [ -s "$tmp/err" ] || ! grep -q "depth reached: $kib KiB" "$tmp/out"; then
      echo "overflow.sh: $mode $kib KiB $*: expected a clean run" >&2
      status=1
    fi
  else
    if [ $rc -eq 0 ]; then
      echo "overflow.sh: $mode $kib KiB $*: exit status 0; expected the overflow to stop it" >&2
      status=1
    fi
    # the message names the member or task, the outlined function it runs,
    # and the variable that gave the size
    # (ITO_STACK_SIZE before OMP_STACKSIZE before GOMP_STACKSIZE)
    local who var=ITO_STACK_SIZE
    if [[ " $* " != *" ITO_STACK_SIZE="* ]]; then
      if [[ " $* " == *" OMP_STACKSIZE="* ]]; then var=OMP_STACKSIZE
      elif [[ " $* " == *" GOMP_STACKSIZE="* ]]; then var=GOMP_STACKSIZE; fi
    fi
    if [ "$mode" = member ]; then who="OpenMP thread [01] of a team of 2"; else who="an OpenMP task on thread [01]"; fi
    if ! grep -q "^ito: stack overflow in $who, started at main\._omp_fn\.[0-9]* (stack of [0-9]* bytes); raise $var (for example $var=[0-9]*K)\$" "$tmp/err"; then
      echo "overflow.sh: $mode $kib KiB $*: no stack overflow message naming the $mode, its function and $var on stderr" >&2
      status=1
    fi
    if [ "$expect" = overflow1M ] &&
       ! grep -q "stack of 104[0-9][0-9][0-9][0-9] bytes" "$tmp/err"; then
      echo "overflow.sh: $mode $kib KiB $*: the message does not name a stack of about 1 MiB" >&2
      status=1
    fi
  fi
}

for mode in member task; do
  run ok "$mode" 6144
  run overflow1M "$mode" 6144 OMP_STACKSIZE=1M
  run overflow1M "$mode" 6144 GOMP_STACKSIZE=1024
  run overflow1M "$mode" 6144 ITO_STACK_SIZE=1M OMP_STACKSIZE=16M
  run ok "$mode" 6144 OMP_STACKSIZE=16M GOMP_STACKSIZE=1M
  run ok "$mode" 6144 ITO_STACK_SIZE=16M OMP_STACKSIZE=1M
  run overflow "$mode" 0
done
[ $status -eq 0 ] && echo "overflow.sh: PASS"
exit $status
