#!/usr/bin/env bash
# tsan_check.sh BUILD_DIR SCRATCH_DIR: the ThreadSanitizer variant of ito
# as a user gets it (README, "ThreadSanitizer"): installs a build made with
# -DITO_SANITIZE=thread into a scratch prefix, builds tsan_user.c against
# it with -fsanitize=thread, and runs it: correct, the sanitizer reports
# nothing; built with -DRACE (two threads bump a counter with no lock),
# the sanitizer reports that race, in tsan_user.c. CC may name the compiler.
set -uo pipefail
fail() { echo "tsan_check.sh: FAILED: $*" >&2; exit 1; }
[ $# -eq 2 ] || fail "usage: tsan_check.sh BUILD_DIR SCRATCH_DIR"
build=$1
scratch=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cc=${CC:-cc}
prefix=$scratch/prefix
rm -rf "$prefix"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$prefix" > "$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log" >&2; fail "cmake --install failed"; }
for race in 0 1; do
  exe=$scratch/tsan_user$race
  defs=""
  [ $race = 1 ] && defs=-DRACE
  "$cc" -fsanitize=thread -g -O1 $defs "$here/tsan_user.c" -I"$prefix/include" \
    -L"$prefix/lib" -lito -Wl,-rpath,"$prefix/lib" -o "$exe" 2> "$scratch/cc.log" ||
    { cat "$scratch/cc.log" >&2; fail "the user's program did not build"; }
  out=$(ITO_NUM_WORKERS=2 TSAN_OPTIONS="halt_on_error=0 exitcode=66" timeout 300 "$exe" 2>&1)
  rc=$?
  if [ $race = 0 ]; then
    [ $rc -eq 0 ] || { printf '%s\n' "$out" >&2; fail "the correct program: exit status $rc"; }
    if printf '%s\n' "$out" | grep -q "WARNING: ThreadSanitizer"; then
      printf '%s\n' "$out" >&2
      fail "the sanitizer reported something in a correct program"
    fi
    echo "tsan_check.sh: a correct program: no report"
  else
    [ $rc -eq 66 ] || { printf '%s\n' "$out" >&2; fail "the racy program: exit status $rc, not the sanitizer's 66"; }
    printf '%s\n' "$out" | grep -q "WARNING: ThreadSanitizer: data race" ||
      fail "no data race reported for the racy program"
    printf '%s\n' "$out" | grep -q "bump .*tsan_user.c" ||
      { printf '%s\n' "$out" >&2; fail "the report does not name the racy line's function"; }
    echo "tsan_check.sh: the unlocked counter: reported, in bump (tsan_user.c)"
  fi
done
echo "tsan_check.sh: PASS"
