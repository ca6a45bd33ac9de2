#!/usr/bin/env bash
# both.sh PROG [ARGS...]: runs a drop-in test program natively and then
# under LD_PRELOAD=$ITO_PTHREAD_LIB with ITO_NUM_WORKERS=1 and then 4
# (docs/dropin.md, section 8).
#
#   - every run must exit 0;
#   - the three stdouts must be identical (a diff is printed otherwise);
#   - each preloaded run runs with ITO_PTHREAD_VERIFY=1, and its stderr must
#     hold "ito-pthread: N threads ran as ito threads" with N > 0, or the
#     library interposed nothing.
#
# Environment:
#   ITO_PTHREAD_LIB    path of libito-pthread.so. Unset or empty: nothing
#                      runs, and the test is skipped (exit status 77, said on
#                      stdout): a native run alone tests nothing of ito. Set
#                      to a missing file: failure.
#   ITO_PRELOAD_BEFORE, ITO_PRELOAD_AFTER
#                      another library preloaded before or after it
#                      (libito-omp.so, which interposes the sleeps too:
#                      docs/openmp.md, "Sleeping"). Optional.
#   ITO_TEST_EMULATOR  a command line (split at spaces) that runs PROG, e.g.
#                      "qemu-aarch64 -L /usr/aarch64-linux-gnu". The preload
#                      and the other variables then go to the program as the
#                      emulator's -E VAR=VALUE options, so that LD_PRELOAD
#                      does not apply to the emulator itself.
#
#   ITO_TEST_TIMEOUT   the test's timeout in seconds (optional; ctest's
#                      TIMEOUT, which CMake passes). A run still going 25 s
#                      before it would end is shown, and ended: its stderr so
#                      far and, where gdb is installed, ito's threads
#                      (tools/gdb/ito-gdb.py) and every OS thread's stack;
#                      the run fails with status 124. Without it, ctest's
#                      timeout ends the test and nothing of the run is seen.
#
# Each run's stderr is passed through (after the run), so a test's own
# messages appear in the ctest log.
#
# Exit status: 0 pass, 1 failure, 2 usage, 77 skipped (ctest's
# SKIP_RETURN_CODE for these tests): ITO_PTHREAD_LIB unset, or the program
# exited with 77 natively (it cannot test here, e.g. without root, and says
# why on stdout).
set -u

if [ $# -lt 1 ]; then
  echo "usage: both.sh PROG [ARGS...]" >&2
  exit 2
fi
prog=$1
shift
name=$(basename "$prog")

if [ ! -e "$prog" ]; then
  echo "both.sh: $prog: no such program" >&2
  exit 1
fi

lib=${ITO_PTHREAD_LIB:-}
if [ -z "$lib" ]; then
  echo "both.sh: $name: SKIPPED: ITO_PTHREAD_LIB is not set, so there is no libito-pthread.so to run it under"
  exit 77
fi
if [ ! -f "$lib" ]; then
  echo "both.sh: ITO_PTHREAD_LIB=$lib: no such file (is the ito_pthread target built?)" >&2
  exit 1
fi

emulator=()
if [ -n "${ITO_TEST_EMULATOR:-}" ]; then
  read -r -a emulator <<<"$ITO_TEST_EMULATOR"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-both.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

now_ms() { date +%s%3N; }

# A run that hangs near the test's timeout says where (tests/hangwatch.sh).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../hangwatch.sh"
test_t0=$(date +%s)

# run LABEL [VAR=VALUE...]: runs PROG with ARGS and those variables; stdout
# goes to $tmp/LABEL.out, stderr to $tmp/LABEL.err (and then to ours).
# Sets run_rc.
run() {
  local label=$1
  shift
  local cmd=()
  if [ ${#emulator[@]} -gt 0 ]; then
    cmd=("${emulator[@]}")
    local v
    for v in "$@"; do cmd+=(-E "$v"); done
    cmd+=("$prog")
  elif [ $# -gt 0 ]; then
    cmd=(env "$@" "$prog")
  else
    cmd=("$prog")
  fi
  local t0 t1 left=""
  t0=$(now_ms)
  [ -n "${ITO_TEST_TIMEOUT:-}" ] && left=$((ITO_TEST_TIMEOUT - ($(date +%s) - test_t0) - 25))
  watched_run "$left" "$tmp/$label.out" "$tmp/$label.err" "$tmp/$label.dog" \
    "${cmd[@]}" ${args[@]+"${args[@]}"}
  run_rc=$watched_rc
  [ -s "$tmp/$label.dog" ] && sed "s/^/both.sh: $name ($label): /" "$tmp/$label.dog" >&2
  t1=$(now_ms)
  cat "$tmp/$label.err" >&2
  echo "both.sh: $name ($label): exit status $run_rc, $((t1 - t0)) ms"
}

args=("$@")
status=0

run native
if [ "$run_rc" -eq 77 ]; then
  # the program cannot test here (e.g. it needs root): it says why on stdout
  cat "$tmp/native.out"
  echo "both.sh: $name: SKIPPED (the program exited with status 77 natively)"
  exit 77
fi
if [ "$run_rc" -ne 0 ]; then
  echo "both.sh: $name failed natively (exit status $run_rc)" >&2
  exit 1
fi
echo "---- $name stdout (native)"
cat "$tmp/native.out"
echo "----"

preload=$lib
for extra in "${ITO_PRELOAD_BEFORE:-}" "${ITO_PRELOAD_AFTER:-}"; do
  if [ -n "$extra" ] && [ ! -f "$extra" ]; then
    echo "both.sh: $extra: no such library" >&2
    exit 1
  fi
done
[ -n "${ITO_PRELOAD_BEFORE:-}" ] && preload="$ITO_PRELOAD_BEFORE $preload"
[ -n "${ITO_PRELOAD_AFTER:-}" ] && preload="$preload $ITO_PRELOAD_AFTER"

for workers in 1 4; do
  label="preload-${workers}worker"
  run "$label" "LD_PRELOAD=$preload" ITO_PTHREAD_VERIFY=1 "ITO_NUM_WORKERS=$workers"
  if [ "$run_rc" -ne 0 ]; then
    echo "both.sh: $name failed under the preload with ITO_NUM_WORKERS=$workers (exit status $run_rc)" >&2
    status=1
    continue
  fi
  n=$(sed -n 's/^ito-pthread: \([0-9][0-9]*\) threads ran as ito threads.*/\1/p' "$tmp/$label.err" | tail -n 1)
  if [ -z "$n" ] || [ "$n" -eq 0 ]; then
    echo "both.sh: $name with ITO_NUM_WORKERS=$workers: no \"ito-pthread: N threads ran as ito threads\" line with N > 0 on stderr: the library interposed nothing" >&2
    status=1
    continue
  fi
  if ! cmp -s "$tmp/native.out" "$tmp/$label.out"; then
    echo "both.sh: $name: stdout under the preload with ITO_NUM_WORKERS=$workers differs from the native run:" >&2
    diff -u --label native --label "$label" "$tmp/native.out" "$tmp/$label.out" >&2
    status=1
    continue
  fi
  echo "both.sh: $name with ITO_NUM_WORKERS=$workers: same stdout, $n threads ran as ito threads"
done

if [ "$status" -eq 0 ]; then
  echo "both.sh: $name: PASS (native, preloaded with 1 and 4 workers)"
else
  echo "both.sh: $name: FAIL" >&2
fi
exit "$status"
