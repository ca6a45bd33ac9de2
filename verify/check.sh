#!/usr/bin/env bash
# Model-checks verify/idle.pml (the idle-worker protocol of docs/idle.md)
# with spin, in a scratch directory.
#
#   verify/check.sh [--expect-error] [--progress] [-DNAME=VALUE ...]
#
# The -D options go to spin's preprocessor (N, FORKS, READIES, OUTSIDE,
# MAILS, ROUNDS, MIN_SPINNERS, SYMMETRIC, BROKEN, and for blocking I/O
# PARKS, G1SPLIT, IOINV: see the head of idle.pml).  Without --progress, pan
# searches every state for assertion violations (the counters, and a worker
# asleep for ever while an entry is left) and invalid end states (deadlock).
# With --progress it searches for non-progress cycles instead: runs that go
# on for ever without ever taking work.
#
# Exit status 0 when the result is the one expected: "errors: 0", or with
# --expect-error at least one error, whose shortest trail (pan -i) is then
# replayed and shown, one line per event.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
model=$here/idle.pml
expect_error=0
progress=0
defs=()
for a in "$@"; do
  case $a in
    --expect-error) expect_error=1 ;;
    --progress) progress=1 ;;
    -D*) defs+=("$a") ;;
    *) echo "check.sh: unknown argument: $a" >&2; exit 2 ;;
  esac
done

if ! command -v spin >/dev/null 2>&1; then
  echo "check.sh: spin (the SPIN model checker) is not installed." >&2
  echo "check.sh: install it with 'apt-get install spin', or run 'make deps' (make test does)." >&2
  exit 1
fi
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null 2>&1; then
  echo "check.sh: no C compiler ($cc) to build spin's verifier" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ito-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/idle.pml"
cp "$here/idle_worker.pml" "$work/" # (idle.pml includes it)
cd "$work"

echo "check.sh: idle.pml ${defs[*]:-} $([ $progress = 1 ] && echo '(non-progress cycles)')"
spin "${defs[@]}" -a idle.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
# COLLAPSE: compressed state storage; MEMLIM: stop, rather than swap, at 4 GB.
if [ $progress = 1 ]; then
  "$cc" -O2 -w -DNP -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c
  panargs=(-l -m200000)
elif [ $expect_error = 1 ]; then
  # REACH: pan -i (iterative shortening) then finds the shortest trail
  "$cc" -O2 -w -DSAFETY -DREACH -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c
  panargs=(-m200000 -i)
else
  "$cc" -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c
  panargs=(-m200000)
fi

start=$(date +%s%N)
set +e
./pan "${panargs[@]}" >pan.out 2>&1
set -e
end=$(date +%s%N)

grep -E "^(State-vector|pan:|	(assertion|invalid|non-progress|cycle))" pan.out | grep -v "wrote idle.pml.trail\|reducing search depth" || true
grep -E "states, stored|transitions \(|total actual memory" pan.out || true
echo "check.sh: pan ran for $(( (end - start) / 1000000 )) ms"

errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.out | tail -1)
if [ -z "$errors" ]; then
  echo "check.sh: FAIL: pan did not finish (no 'errors:' line)"
  tail -20 pan.out
  exit 1
fi
if grep -q "reached -DMEMLIM bound\|max search depth too small" pan.out; then
  echo "check.sh: FAIL: the search was incomplete (memory or depth bound)"
  exit 1
fi

# The trail pan saved, replayed as the model's printf lines, one event a line.
print_trail() {
  spin "${defs[@]}" -T -t idle.pml 2>&1 | sed -n '/^#processes/q;/^ *$/d;p' | sed 's/^/  /'
}

if [ $expect_error = 0 ]; then
  if [ "$errors" = 0 ]; then
    echo "check.sh: PASS: errors: 0"
    exit 0
  fi
  echo "check.sh: FAIL: errors: $errors; the trail:"
  print_trail
  exit 1
fi

if [ "$errors" = 0 ]; then
  echo "check.sh: FAIL: the checker found no error in a variant that must have one"
  exit 1
fi
echo "check.sh: PASS: rejected as expected (errors: $errors); the shortest trail, event by event:"
print_trail
exit 0
