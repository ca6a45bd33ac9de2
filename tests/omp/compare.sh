#!/usr/bin/env bash
# compare.sh PROG LIBITO_OMP [VAR=VALUE...]
#
# Runs an OpenMP program (built by gcc -fopenmp, so linked to libgomp) with
# plain libgomp and then with LD_PRELOAD=LIBITO_OMP, for several
# OMP_NUM_THREADS settings and, under the preload, several ITO_NUM_WORKERS.
# The test fails (exit 1) when
#   - any run exits nonzero or runs past the time limit (a hang);
#   - a preloaded run's stdout differs from the libgomp run's at the same
#     OMP_NUM_THREADS (a unified diff is printed);
#   - under the preload, the program bound a GOMP_* or omp_* symbol to
#     anything but LIBITO_OMP (an entry point the library lacks falls
#     through to libgomp, which the program still loads), or bound none to
#     it (nothing was interposed). Checked with LD_DEBUG=bindings and
#     LD_BIND_NOW=1, so every GOMP_*/omp_* reference of the program counts.
#
# The VAR=VALUE arguments go to every run (e.g. OMP_SCHEDULE=guided,4).
# OMP_* and GOMP_* variables of the caller's environment are removed first,
# so that only these arguments decide.
#
# Environment (optional):
#   OMPTEST_THREADS  OMP_NUM_THREADS settings, "default" = unset
#                    (default: "1 2 4 3,2 default")
#   OMPTEST_WORKERS  ITO_NUM_WORKERS settings (default: "1 2")
#   OMPTEST_TIMEOUT  seconds per run (default: 60); a run past it is shown
#                    (its stderr, ito's threads and every stack, by
#                    tests/hangwatch.sh) and ended
#   OMPTEST_PRELOAD_BEFORE, OMPTEST_PRELOAD_AFTER
#                    libraries preloaded before and after LIBITO_OMP in
#                    the preloaded runs (libito-pthread.so)
set -u

if [ $# -lt 2 ]; then
  echo "usage: compare.sh PROG LIBITO_OMP [VAR=VALUE...]" >&2
  exit 2
fi
prog=$1 lib=$2
shift 2
extra=("$@")
name=$(basename "$prog")

if [ ! -x "$prog" ]; then
  echo "compare.sh: $prog: no such program" >&2
  exit 1
fi
if [ ! -f "$lib" ]; then
  echo "compare.sh: $lib: no such library (is the ito_omp target built?)" >&2
  exit 1
fi
lib_real=$(readlink -f "$lib")

threads_list=${OMPTEST_THREADS:-"1 2 4 3,2 default"}
workers_list=${OMPTEST_WORKERS:-"1 2"}
limit=${OMPTEST_TIMEOUT:-60}

. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../hangwatch.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-omp-compare.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The variables removed from every run's environment.
unset_args=()
while IFS='=' read -r var _; do
  case $var in
    OMP_* | GOMP_*) unset_args+=(-u "$var") ;;
  esac
done < <(env)

status=0
timeouts=0

# run LABEL THREADS [VAR=VALUE...]: stdout to $tmp/LABEL.out, stderr to
# $tmp/LABEL.err (then copied to ours). Sets run_rc.
run() {
  local label=$1 threads=$2
  shift 2
  local vars=()
  [ "$threads" != default ] && vars+=("OMP_NUM_THREADS=$threads")
  local t0 t1
  # (a directory removed under the test is said as such, not as a failure
  # of the program)
  [ -d "$tmp" ] || {
    echo "compare.sh: $name: $tmp was removed by another process; no run can write there" >&2
    exit 1
  }
  t0=$(date +%s%3N)
  watched_run "$limit" "$tmp/$label.out" "$tmp/$label.err" "$tmp/$label.dog" \
    env ${unset_args[@]+"${unset_args[@]}"} ${extra[@]+"${extra[@]}"} \
    ${vars[@]+"${vars[@]}"} "$@" "$prog"
  run_rc=$watched_rc
  t1=$(date +%s%3N)
  [ -s "$tmp/$label.dog" ] && sed "s/^/  [$label] /" "$tmp/$label.dog" >&2
  if [ -s "$tmp/$label.err" ]; then
    sed "s/^/  [$label stderr] /" "$tmp/$label.err" | head -n 40 >&2
  fi
  if [ "$run_rc" -eq 124 ] || [ "$run_rc" -eq 137 ]; then
    echo "compare.sh: $name ($label): TIMED OUT after ${limit} s (a hang?)" >&2
    timeouts=$((timeouts + 1))
  else
    echo "compare.sh: $name ($label): exit status $run_rc, $((t1 - t0)) ms"
  fi
}

# check_bindings LABEL: every GOMP_*/omp_* symbol the program bound went to
# the preloaded library, and at least one did.
check_bindings() {
  local label=$1
  local lines
  lines=$(cat "$tmp/bind.$label".* 2>/dev/null |
          grep -F "binding file $prog [0] to " |
          grep -E "normal symbol \`(GOMP_|omp_)" || true)
  if [ -z "$lines" ]; then
    echo "compare.sh: $name ($label): LD_DEBUG=bindings shows no GOMP_*/omp_* symbol bound by the program" >&2
    return 1
  fi
  local bad=0 n_ito=0 line obj sym
  while IFS= read -r line; do
    obj=${line#*binding file $prog \[0\] to }
    obj=${obj%% \[*}
    sym=${line#*normal symbol \`}
    sym=${sym%%\'*}
    if ! [[ $sym =~ ^(GOMP|omp)_[A-Za-z0-9_]+$ ]] || [[ $obj == *" "* ]]; then
      echo "compare.sh: $name ($label): cannot parse LD_DEBUG line: $line" >&2
      bad=1
      continue
    fi
    if [ "$(readlink -f "$obj")" = "$lib_real" ]; then
      n_ito=$((n_ito + 1))
    else
      echo "compare.sh: $name ($label): $sym was bound to $obj, not to $lib: not implemented by the library?" >&2
      bad=1
    fi
  done <<<"$lines"
  if [ "$n_ito" -eq 0 ]; then
    echo "compare.sh: $name ($label): no GOMP_*/omp_* symbol was bound to $lib" >&2
    bad=1
  fi
  return $bad
}

echo "compare.sh: $name with ${extra[*]:-no extra variables}; OMP_NUM_THREADS in {$threads_list}, ITO_NUM_WORKERS in {$workers_list}"
for threads in $threads_list; do
  ref="gomp-T$threads"
  # libgomp's own allocations are not ours to judge: no leak check there
  # (ASan builds; the option is ignored elsewhere). Its threads spin up to
  # 300,000 times before they sleep: on a loaded machine with more threads
  # than cores the reference run of an ordered loop took over a minute
  # (seen in CI-like runs), so it spins less; its output is the same.
  run "$ref" "$threads" "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    GOMP_SPINCOUNT=1000
  if [ "$run_rc" -ne 0 ]; then
    echo "compare.sh: $name failed under libgomp with OMP_NUM_THREADS=$threads (exit status $run_rc)" >&2
    status=1
    [ "$timeouts" -ge 2 ] && break
    continue
  fi
  for workers in $workers_list; do
    label="ito-T$threads-W$workers"
    # LD_BIND_NOW: every symbol is bound at startup, by one thread, so
    # the log lines do not interleave, and all the program's references
    # are checked, not only those this run happened to call.
    preload=$lib
    [ -n "${OMPTEST_PRELOAD_BEFORE:-}" ] && preload="$OMPTEST_PRELOAD_BEFORE $preload"
    [ -n "${OMPTEST_PRELOAD_AFTER:-}" ] && preload="$preload $OMPTEST_PRELOAD_AFTER"
    run "$label" "$threads" "LD_PRELOAD=$preload" "ITO_NUM_WORKERS=$workers" \
      LD_BIND_NOW=1 LD_DEBUG=bindings "LD_DEBUG_OUTPUT=$tmp/bind.$label"
    if [ "$run_rc" -ne 0 ]; then
      echo "compare.sh: $name failed under $lib with OMP_NUM_THREADS=$threads ITO_NUM_WORKERS=$workers (exit status $run_rc)" >&2
      status=1
    fi
    if ! cmp -s "$tmp/$ref.out" "$tmp/$label.out"; then
      echo "compare.sh: $name: stdout under $lib with OMP_NUM_THREADS=$threads ITO_NUM_WORKERS=$workers differs from libgomp's:" >&2
      diff -u --label "libgomp (OMP_NUM_THREADS=$threads)" --label "ito (OMP_NUM_THREADS=$threads ITO_NUM_WORKERS=$workers)" \
        "$tmp/$ref.out" "$tmp/$label.out" | head -n 60 >&2
      status=1
    fi
    if [ "$run_rc" -ne 124 ] && [ "$run_rc" -ne 137 ] && ! check_bindings "$label"; then
      status=1
    fi
    [ "$timeouts" -ge 2 ] && break
  done
  [ "$timeouts" -ge 2 ] && break
done

if [ "$timeouts" -ge 2 ]; then
  echo "compare.sh: $name: stopped after $timeouts runs that timed out" >&2
fi
if [ "$status" -eq 0 ]; then
  echo "---- $name stdout (libgomp, last setting)"
  cat "$tmp/$ref.out"
  echo "----"
  echo "compare.sh: $name: PASS"
else
  echo "compare.sh: $name: FAIL" >&2
fi
exit "$status"
