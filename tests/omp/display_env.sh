#!/usr/bin/env bash
# display_env.sh PROG LIBITO_OMP [VAR=VALUE...]
#
# OMP_DISPLAY_ENV and omp_display_env (display.c) against gcc's runtime,
# which prints its report on stderr. Under the preload the program still
# loads libgomp, whose constructor prints its own report too: the report
# identical to the plain libgomp run's is taken out, and exactly one must
# be left, ito's. For each of OMP_DISPLAY_ENV=true, =verbose and a call
# of omp_display_env(0) (the variable unset), the two reports must have
# the same OMP_* lines in the same order (ito's verbose report adds its
# own ITO_* lines where gcc's has GOMP_* ones), and the lines whose
# values both runtimes share must be equal: see SHARED below and
# docs/openmp.md, "OMP_DISPLAY_ENV". With OMP_DISPLAY_ENV=false, ito
# must print nothing.
set -u
if [ $# -lt 2 ]; then
  echo "usage: display_env.sh PROG LIBITO_OMP [VAR=VALUE...]" >&2
  exit 2
fi
prog=$1 lib=$2
shift 2
extra=("$@")
limit=${OMPTEST_TIMEOUT:-60}
[ -f "$lib" ] || { echo "display_env.sh: $lib: no such library" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-omp-display.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

base=(env)
while IFS='=' read -r v _; do
  case $v in OMP_* | GOMP_* | ITO_STACK_SIZE | ITO_WAIT_POLICY) base+=(-u "$v") ;; esac
done < <(env)

# Lines whose values are the same in both runtimes; OMP_STACKSIZE and
# OMP_THREAD_LIMIT only when the variable is set (their defaults differ:
# gcc shows 0 and 4294967295 for "not set", ito the stack size and the
# limit it uses).
SHARED="_OPENMP OMP_DYNAMIC OMP_NESTED OMP_NUM_THREADS OMP_SCHEDULE OMP_PROC_BIND OMP_PLACES
OMP_WAIT_POLICY OMP_MAX_ACTIVE_LEVELS OMP_DEFAULT_DEVICE OMP_MAX_TASK_PRIORITY
OMP_DISPLAY_AFFINITY OMP_AFFINITY_FORMAT OMP_ALLOCATOR OMP_CANCELLATION"
for a in ${extra[@]+"${extra[@]}"}; do
  case ${a%%=*} in OMP_STACKSIZE | OMP_THREAD_LIMIT) SHARED="$SHARED ${a%%=*}" ;; esac
done

# blocks FILE PREFIX: writes each report of FILE to PREFIX.1, PREFIX.2, ...;
# prints their number.
blocks() {
  awk -v p="$2" '
    /^OPENMP DISPLAY ENVIRONMENT BEGIN$/ { n++; on = 1 }
    on { print > (p "." n) }
    /^OPENMP DISPLAY ENVIRONMENT END$/ { on = 0 }
    END { print n + 0 }' "$1"
}

status=0
fail() {
  echo "display_env.sh: $*" >&2
  status=1
}

# check CASE DISPLAY_ENV ARG: one comparison.
check() {
  local case=$1 de=$2 arg=$3
  local vars=() args=()
  [ -n "$de" ] && vars+=("OMP_DISPLAY_ENV=$de")
  [ -n "$arg" ] && args+=("$arg")
  timeout -k 5 "$limit" "${base[@]}" ${extra[@]+"${extra[@]}"} ${vars[@]+"${vars[@]}"} \
    "$prog" ${args[@]+"${args[@]}"} >"$tmp/$case.gomp.out" 2>"$tmp/$case.gomp.err"
  local rc=$?
  [ $rc -eq 0 ] || { fail "$case: exit status $rc under libgomp"; return; }
  timeout -k 5 "$limit" "${base[@]}" ${extra[@]+"${extra[@]}"} ${vars[@]+"${vars[@]}"} \
    ITO_NUM_WORKERS=2 "LD_PRELOAD=$lib" "$prog" ${args[@]+"${args[@]}"} \
    >"$tmp/$case.ito.out" 2>"$tmp/$case.ito.err"
  rc=$?
  echo "---- $case (${extra[*]:-defaults}): stderr under $lib, exit status $rc"
  cat "$tmp/$case.ito.err"
  [ $rc -eq 0 ] || { fail "$case: exit status $rc under $lib"; return; }
  cmp -s "$tmp/$case.gomp.out" "$tmp/$case.ito.out" || fail "$case: stdout differs"
  local ng ni
  ng=$(blocks "$tmp/$case.gomp.err" "$tmp/$case.g")
  ni=$(blocks "$tmp/$case.ito.err" "$tmp/$case.i")
  if [ "$de" = false ]; then
    [ "$ng" -eq 0 ] && [ "$ni" -eq 0 ] || fail "$case: reports printed ($ng by libgomp, $ni under $lib)"
    return
  fi
  [ "$ng" -eq 1 ] || { fail "$case: libgomp printed $ng reports, expected 1"; return; }
  # under the preload: libgomp's own report (when its constructor printed
  # one) is the plain run's; the other is ito's
  local mine=() i
  local gomp_own=0
  for ((i = 1; i <= ni; i++)); do
    if [ -n "$de" ] && [ $gomp_own -eq 0 ] && cmp -s "$tmp/$case.g.1" "$tmp/$case.i.$i"; then
      gomp_own=1
    else
      mine+=("$tmp/$case.i.$i")
    fi
  done
  if [ -n "$de" ] && [ $gomp_own -eq 0 ]; then
    # ito's report may equal gcc's line for line; then both are there
    [ "$ni" -ge 2 ] || fail "$case: libgomp's own report is missing under the preload (ito printed none?)"
  fi
  [ ${#mine[@]} -eq 1 ] || { fail "$case: $((${#mine[@]})) reports from ito, expected 1"; return; }
  local g=$tmp/$case.g.1 me=${mine[0]}
  # the same OMP_* (and _OPENMP) lines in the same order
  diff <(grep -oE "^  (_OPENMP|OMP_[A-Z_]+) =" "$g") <(grep -oE "^  (_OPENMP|OMP_[A-Z_]+) =" "$me") \
    >/dev/null || fail "$case: the report's OMP_* lines differ from gcc's in names or order"
  local key
  for key in $SHARED; do
    local lg li
    lg=$(grep -E "^  $key = " "$g")
    li=$(grep -E "^  $key = " "$me")
    [ -n "$lg" ] || { fail "$case: libgomp printed no $key line"; continue; }
    [ "$lg" = "$li" ] || fail "$case: '$li' under $lib, '$lg' under libgomp"
  done
  if [ "$de" = verbose ] || [ "$arg" = verbose ]; then
    grep -qE "^  ITO_NUM_WORKERS = '2'$" "$me" || fail "$case: the verbose report lacks ITO_NUM_WORKERS = '2'"
  else
    grep -q "^  ITO_" "$me" && fail "$case: ITO_* lines in a report that is not verbose"
  fi
}

check startup true ""
check startup_verbose verbose ""
check call "" terse
check call_verbose "" verbose
check off false ""
[ $status -eq 0 ] && echo "display_env.sh: PASS (${extra[*]:-defaults})"
exit $status
