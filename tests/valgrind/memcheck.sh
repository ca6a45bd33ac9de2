#!/usr/bin/env bash
# memcheck.sh PROGRAM [ARGS...]: runs PROGRAM under Valgrind's memcheck and
# fails on any error it reports (ito registers every stack with Valgrind,
# docs/fibers.md, "Valgrind"); LD_PRELOAD and ITO_* come from the
# environment. Exits 77 (skipped) without valgrind.
set -u
command -v valgrind >/dev/null || { echo "memcheck.sh: SKIPPED: valgrind is not installed"; exit 77; }
log=$(mktemp "${TMPDIR:-/tmp}/ito-memcheck.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT
# --leak-check=no: the default leak check (a summary) counts no leak as an
# error, and its scan of the runtime's mappings took memcheck_cpp 110 of
# its 125 s
valgrind --error-exitcode=3 --leak-check=no --log-file="$log" "$@"
rc=$?
errors=$(grep -o 'ERROR SUMMARY: [0-9]*' "$log" | awk '{print $3}')
if [ "$rc" != 0 ] || [ "${errors:-x}" != 0 ]; then
  echo "memcheck.sh: FAIL: $* exited with $rc, memcheck: ${errors:-no} errors"
  cat "$log"
  exit 1
fi
echo "memcheck.sh: PASS: $* (memcheck: 0 errors)"
