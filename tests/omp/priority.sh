#!/usr/bin/env bash
# priority.sh PROG LIBITO_OMP: runs priority.c under LD_PRELOAD=LIBITO_OMP
# with one worker and checks the order in which ready tasks started:
# highest priority first, equal ones in creation order, priorities clamped
# to OMP_MAX_TASK_PRIORITY.
set -u
prog=$1 lib=$2
[ -f "$lib" ] || { echo "priority.sh: $lib: no such library" >&2; exit 1; }
rc=0
check() { # MAX EXPECTED
  out=$(timeout -k 5 60 env -u OMP_NUM_THREADS OMP_MAX_TASK_PRIORITY=$1 ITO_NUM_WORKERS=1 \
        "LD_PRELOAD=$lib" "$prog")
  echo "OMP_MAX_TASK_PRIORITY=$1: $out"
  if [ "$out" != "$2" ]; then
    echo "priority.sh: expected: $2" >&2
    rc=1
  fi
}
check 10 "max 10 order 3 5 1 2 4 0"
check 2 "max 2 order 1 2 3 5 4 0"
check 0 "max 0 order 0 1 2 3 4 5"
exit $rc
