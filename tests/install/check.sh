#!/usr/bin/env bash
# Installs a build of ito into a scratch prefix, then builds and runs a small
# consumer project against it, through CMake (find_package) and pkg-config.
#   tests/install/check.sh BUILD_DIR SCRATCH_DIR
# CMAKE, CC and CXX may name the tools to use (ctest passes those of the build).
# Exit status 77 (ctest: skipped) when a part could not run (the compiler
# has no -fopenmp): every other part has then passed.
set -euo pipefail

fail() { echo "install check FAILED: $*" >&2; exit 1; }

[ $# -eq 2 ] || fail "usage: $0 BUILD_DIR SCRATCH_DIR"
build=$(cd "$1" 2>/dev/null && pwd) || fail "build dir '$1' not found"
mkdir -p "$2"
scratch=$(cd "$2" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmake=${CMAKE:-cmake}
cc=${CC:-cc}
cxx=${CXX:-c++}
prefix=$scratch/prefix

# Start from nothing so that nothing stale can make the check pass.
rm -rf "$prefix" "$scratch/consumer" "$scratch/pkgconfig-c"

echo "== install $build into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$scratch/install.log" 2>&1 \
  || { cat "$scratch/install.log" >&2; fail "cmake --install failed"; }

for f in include/ito/ito.h include/ito/ito.hpp lib/libito.so lib/libito.a lib/libito-pthread.so lib/libito-omp.so \
         lib/pkgconfig/ito.pc lib/cmake/ito/itoConfig.cmake \
         lib/cmake/ito/itoConfigVersion.cmake lib/cmake/ito/itoTargets.cmake; do
  [ -e "$prefix/$f" ] || fail "$f missing from the installed tree"
done

# Runs a program and checks that its output holds the expected text.
run_and_check() {
  local what=$1 expect=$2 out rc=0
  shift 2
  out=$(LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        timeout 120 "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    printf '%s\n' "$out" >&2
    fail "$what exited with status $rc"
  fi
  printf '%s\n' "$out"
  grep -qF -- "$expect" <<<"$out" || fail "$what did not print '$expect'"
}

echo "== consumer project with find_package(ito)"
"$cmake" -S "$here" -B "$scratch/consumer" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    >"$scratch/consumer-configure.log" 2>&1 \
  || { cat "$scratch/consumer-configure.log" >&2; fail "configuring the consumer project failed"; }
"$cmake" --build "$scratch/consumer" >"$scratch/consumer-build.log" 2>&1 \
  || { cat "$scratch/consumer-build.log" >&2; fail "building the consumer project failed"; }

run_and_check "consumer_c" "ito consumer c: sum=85344" "$scratch/consumer/consumer_c"
run_and_check "consumer_cpp" "ito consumer c++: fib(20)=6765" "$scratch/consumer/consumer_cpp"
run_and_check "consumer_cpp_static" "ito consumer c++: fib(20)=6765" \
  "$scratch/consumer/consumer_cpp_static"

if [ -x "$scratch/consumer/consumer_mpi" ]; then
  if command -v mpirun >/dev/null; then
    run_and_check "consumer_mpi (ito::ito_mpi)" "ito consumer mpi: 32 exchanges checked" \
      env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe -np 2 "$scratch/consumer/consumer_mpi"
  else
    echo "consumer_mpi built; no mpirun to run it"
  fi
elif [ -e "$prefix/lib/libito-mpi.so" ]; then
  fail "libito-mpi.so is installed but find_package(ito) gave no ito::ito_mpi"
fi

echo "== main.c with pkg-config"
command -v pkg-config >/dev/null || fail "pkg-config not found"
pcflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ito) \
  || fail "pkg-config --cflags --libs ito failed"
echo "pkg-config: $pcflags"
# shellcheck disable=SC2086  # the flags are meant to be split
"$cc" -o "$scratch/pkgconfig-c" "$here/main.c" $pcflags \
  || fail "compiling main.c with the pkg-config flags failed"
run_and_check "main.c built with pkg-config" "ito consumer c: sum=85344" "$scratch/pkgconfig-c"

echo "== the installed libito-pthread.so runs an unmodified pthread program"
"$cc" -O2 -pthread -o "$scratch/pthread-prog" "$here/pthread_prog.c" \
  || fail "compiling pthread_prog.c failed"
run_and_check "pthread_prog natively" "pthread prog: sum=499500" "$scratch/pthread-prog"
out=$(LD_PRELOAD="$prefix/lib/libito-pthread.so" ITO_PTHREAD_VERIFY=1 timeout 120 \
      "$scratch/pthread-prog" 2>&1) || { printf '%s\n' "$out" >&2; fail "pthread_prog preloaded failed"; }
printf '%s\n' "$out"
grep -qF "pthread prog: sum=499500" <<<"$out" || fail "pthread_prog preloaded printed a wrong sum"
grep -qE "ito-pthread: [1-9][0-9]* threads ran as ito threads" <<<"$out" \
  || fail "the preloaded libito-pthread.so ran no thread as an ito thread"

echo "== the installed libito-omp.so runs a gcc -fopenmp program, preloaded and linked"
omp_expect="omp prog: members=3 sum=499500 fib=6765"
skipped=""
if "$cc" -O2 -fopenmp -o "$scratch/omp-prog" "$here/omp_prog.c" 2>/dev/null; then
  run_and_check "omp_prog with libgomp" "$omp_expect" "$scratch/omp-prog"
  out=$(LD_PRELOAD="$prefix/lib/libito-omp.so" LD_DEBUG=bindings timeout 120 \
        "$scratch/omp-prog" 2>"$scratch/omp-bind.log") || fail "omp_prog preloaded failed"
  grep -qF "$omp_expect" <<<"$out" || fail "omp_prog preloaded printed '$out'"
  grep -qE "to $prefix/lib/libito-omp.so.*GOMP_parallel" "$scratch/omp-bind.log" \
    || fail "GOMP_parallel was not bound to the preloaded libito-omp.so"
  # linked instead of libgomp: compiled with -fopenmp, linked without it
  "$cc" -O2 -fopenmp -c -o "$scratch/omp-prog.o" "$here/omp_prog.c" \
    && "$cc" -o "$scratch/omp-prog-ito" "$scratch/omp-prog.o" -L"$prefix/lib" -lito-omp \
         -Wl,-rpath,"$prefix/lib" || fail "linking omp_prog with -lito-omp failed"
  if ldd "$scratch/omp-prog-ito" | grep -q libgomp; then fail "omp_prog linked with -lito-omp needs libgomp"; fi
  run_and_check "omp_prog linked with libito-omp" "$omp_expect" "$scratch/omp-prog-ito"
else
  skipped="$cc has no -fopenmp: the installed libito-omp.so was not run"
  echo "($skipped)"
fi

# The exported symbols (docs/dropin.md section 10): libito.so exports the
# public ABI under ITO_0.1 and the shim's entry points under ITO_DROPIN_0.1,
# nothing else; the shim's interposers carry no version.
command -v objdump >/dev/null || fail "objdump not found"
bad=$(objdump -T "$prefix/lib/libito.so" | awk '$2 == "g" && $0 !~ /\*UND\*/ {
        ver = $(NF-1); name = $NF
        if (name == ver) next  # the version node itself
        if (ver == "ITO_0.1" && name ~ /^ito_[a-z]/) next
        if (ver == "ITO_DROPIN_0.1" && name ~ /^ito__dropin_/) next
        if (ver == "ITO_DROPIN_0.1" && name == "ito__debug_info") next  # for debuggers
        print ver, name }')
[ -z "$bad" ] || fail "libito.so exports symbols outside its version nodes: $bad"
versioned=$(objdump -T "$prefix/lib/libito-pthread.so" | awk '$0 !~ /\*UND\*/ && $NF ~ /^pthread_create$/ { print $(NF-1) }')
[ "$versioned" = "Base" ] || fail "libito-pthread.so's pthread_create carries version '$versioned' (expected none: Base)"

# The gdb extension, in gdb's auto-load layout for the installed library:
# gdb loads it by itself when the consumer's libito.so is loaded.
[ -e "$prefix/share/ito/gdb/ito-gdb.py" ] || fail "share/ito/gdb/ito-gdb.py missing"
autoload=$(ls "$prefix/share/gdb/auto-load$prefix/lib/"libito.so.*-gdb.py 2>/dev/null | head -1)
[ -n "$autoload" ] || fail "no libito.so.*-gdb.py under share/gdb/auto-load$prefix/lib"
if command -v gdb >/dev/null; then
  out=$(LD_LIBRARY_PATH="$prefix/lib" timeout 120 gdb -q -batch -nx \
        -iex "add-auto-load-scripts-directory $prefix/share/gdb/auto-load" \
        -iex "set auto-load safe-path $prefix" \
        -ex "set breakpoint pending on" -ex "break exit" -ex run -ex "info ito-threads" "$scratch/consumer/consumer_c" 2>&1) ||
    fail "gdb on consumer_c exited with an error: $out"
  echo "$out" | grep -q "Id   State\|No lightweight threads" ||
    fail "gdb did not auto-load the extension for the installed libito.so: $out"
else
  skipped="${skipped:+$skipped; }gdb is not installed (the gdb extension's auto-load)"
fi

if [ -n "$skipped" ]; then
  echo "install check: SKIPPED: the other parts passed, but $skipped"
  exit 77
fi
echo "install check passed"
