#!/usr/bin/env bash
# Runs one MPI test program under mpirun (Open MPI from Debian) with
# --oversubscribe, in bounded time, and checks what it says (docs/mpi.md).
#
#   check.sh CASE MPIEXEC PROGRAM [PRELOAD]
# CASE: random (2 ranks x 1000 threads, 2 workers each), random4 (4 ranks),
# calls (2 ranks, one worker each), serialized, funneled and single (MPI
# initialised by the program at that level: funnel mode, its message), cpp (the
# C++ iwait), pthread and omp (unmodified programs, PRELOAD the drop-in
# library and libito-mpi.so, colon-separated), stale (PROGRAM libito-mpi.so
# itself, with a libito.so.0 that lacks the drop-in interface).
set -u
case_="$1" mpiexec="$2" prog="$3" preload="${4:-}"
# root (CI, containers) needs Open MPI's permission
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# a sanitized build: Open MPI's own allocations at exit are not ours
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Ranks unbound (--bind-to none): the workers of a rank on every CPU. (The
# pthread case once hung so in MPI_Init, 5 runs of 6: libpsm2's
# constructor sets the thread's affinity inside dlopen; docs/dropin.md,
# "Pinning".)
bind="--bind-to none"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() { # ranks workers args...
  local np="$1" w="$2"
  shift 2
  local pre=()
  [ -n "$preload" ] && pre=(-x LD_PRELOAD="$preload")
  timeout 120 "$mpiexec" --oversubscribe $bind -np "$np" -x ITO_NUM_WORKERS="$w" \
    -x OMP_NUM_THREADS="${team:-$w}" -x ASAN_OPTIONS "${pre[@]}" "$prog" "$@" >"$out" 2>&1
}
fail() {
  echo "check.sh $case_: $1"
  cat "$out"
  exit 1
}
case "$case_" in
  random)
    run 2 2 1000 64 || fail "exit status $?"
    grep -q "2 ranks x 1000 threads, 64-word pairs: all checked" "$out" || fail "no result line"
    ;;
  random4)
    run 4 2 1000 32 || fail "exit status $?"
    grep -q "4 ranks x 1000 threads, 32-word pairs: all checked" "$out" || fail "no result line"
    ;;
  serialized|funneled|single)
    # MPI's levels: SINGLE 0, FUNNELED 1, SERIALIZED 2
    lvl=$(case $case_ in single) echo 0;; funneled) echo 1;; *) echo 2;; esac)
    name=MPI_THREAD_$(echo "$case_" | tr a-z A-Z)
    run 2 2 300 16 "$case_" || fail "exit status $?"
    grep -q "all checked (thread level $lvl)" "$out" || fail "no result line"
    grep -q "^ito-mpi: MPI runs at thread level $name, not MPI_THREAD_MULTIPLE: the blocking MPI calls of lightweight threads are funnelled through worker 0" "$out" ||
      fail "no line about the funnel"
    ;;
  calls)
    run 2 1 || fail "exit status $?"
    grep -q "^test_mpi_calls: every call checked" "$out" || fail "no result line"
    [ "$(grep -c "^ito-mpi: MPI_Finalize while 1 lightweight thread waits in MPI calls: they would never finish. Join them before MPI_Finalize; MPI was not finalized (MPI_ERR_PENDING)" "$out")" = 2 ] ||
      fail "not one line about MPI_Finalize a rank"
    ;;
  cpp)
    run 2 2 50 || fail "exit status $?"
    grep -q "^test_mpi_cpp: 50 rounds, every successor saw the data" "$out" || fail "no result line"
    ;;
  pthread)
    run 2 2 300 32 || fail "exit status $?"
    grep -q "^test_mpi_pthread: 2 ranks x 300 threads: 0 wrong" "$out" || fail "no result line"
    ;;
  omp)
    # a team of 300 members on 2 workers: each task blocks its member in MPI
    team=300 run 2 2 300 32 || fail "exit status $?"
    grep -q "^test_mpi_omp: 2 ranks x 300 tasks on 300 threads: 0 wrong" "$out" || fail "no result line"
    ;;
  stale)
    # PROGRAM is libito-mpi.so: loaded with a libito.so.0 from elsewhere
    # that lacks the drop-in interface (an older install first on the
    # library path), the program stops at start with the loader's line
    # naming the missing interface, never hangs
    stub=$(mktemp -d)
    printf 'ITO_0.1 { global: ito_yield; ito_nanosleep; local: *; };\n' >"$stub/v.map"
    printf 'int ito_yield(void) { return 0; }\nint ito_nanosleep(const void *t) { (void)t; return 0; }\n' \
      >"$stub/s.c"
    ${CC:-cc} -shared -fPIC -Wl,--version-script="$stub/v.map" -Wl,-soname,libito.so.0 \
      -o "$stub/libito.so.0" "$stub/s.c" || { rm -rf "$stub"; fail "cannot build the stub"; }
    LD_LIBRARY_PATH="$stub" LD_PRELOAD="$prog" timeout 20 true >"$out" 2>&1
    rc=$?
    rm -rf "$stub"
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "exit status $rc: not stopped at start"
    grep -q "version \`ITO_DROPIN_0.1' not found (required by .*libito-mpi" "$out" ||
      fail "no line naming the missing interface"
    ;;
  *) echo "check.sh: unknown case $case_"; exit 2 ;;
esac
cat "$out"
echo "check.sh $case_: OK"
