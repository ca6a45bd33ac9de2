#!/usr/bin/env bash
# skip.sh NAME REASON: the command of a test whose subject this build cannot
# run (registered by ito_skip_test, tests/CMakeLists.txt). Runs nothing,
# prints why, and exits 77, which ctest reports as "Skipped" through the
# test's SKIP_RETURN_CODE: never as a pass.
set -u
if [ $# -ne 2 ] || [ -z "$2" ]; then
  echo "usage: skip.sh NAME REASON" >&2
  exit 2
fi
echo "$1: SKIPPED: $2"
exit 77
