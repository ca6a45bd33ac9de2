#!/usr/bin/env bash
# Runs refused.c under libito-pthread.so: every refused call returns its
# errno both times it is made, and each refusal's line appears once.
#   refused.sh PROG LIBITO_PTHREAD_SO
set -euo pipefail
prog=$1 lib=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
LD_PRELOAD=$lib ITO_NUM_WORKERS=2 "$prog" >"$dir/out" 2>"$dir/err" || {
  cat "$dir/out" "$dir/err"; echo "refused: the program failed"; exit 1; }
cat "$dir/out" "$dir/err"
expect() { # expect "stdout line" count
  local n
  n=$(grep -cxF -- "$1" "$dir/out" || true)
  [ "$n" -eq "$2" ] || { echo "refused: expected $2 x '$1', got $n"; exit 1; }
}
expect "pthread_kill 0: 0" 2
expect "robust mutex: ENOTSUP" 2
expect "priority-ceiling mutex: ENOTSUP" 2
expect "pthread_kill 0 after join: ESRCH" 1
n=$(grep -c "^ito-pthread: pthread_mutex_init: " "$dir/err" || true)
[ "$n" -eq 2 ] || { echo "refused: pthread_mutex_init printed $n refusals, expected 2 (robust, priority ceiling)"; exit 1; }
echo "refused: PASS"
