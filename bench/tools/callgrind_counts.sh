#!/usr/bin/env bash
# callgrind_counts.sh BINDIR [BINDIR2]: instruction counts of the fork and
# join fast paths, repeatable where timings are not.
#
#   fib_par   inclusive instructions of fib_par(int) in `fib_ito 25 1` on
#             one worker (the warm-up fib(20) and fib(25), one spawn and
#             one sync per call)
#   spawn     inclusive instructions of create_many(long) in `spawn_loop_ito`
#             on one worker (31 measurements of 1,000 spawn+sync pairs)
#
# With two directories, prints both and the ratio (second / first).
# Needs valgrind (make deps installs it).
set -u
command -v valgrind >/dev/null || { echo "callgrind_counts.sh: valgrind is not installed" >&2; exit 2; }
[ $# -ge 1 ] || { echo "usage: callgrind_counts.sh BINDIR [BINDIR2]" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ito-cg.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# inclusive Ir of the first (non-recursive) entry of a function
incl() {
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    awk -v fn="$2" '$0 ~ ":"fn"[[:space:]]" || $0 ~ ":"fn" \\[" {gsub(",", "", $1); print $1; exit}'
}

measure() {
  local dir=$1 tag=$2
  ITO_NUM_WORKERS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/fib.$tag" \
    "$dir/fib_ito" 25 1 >/dev/null 2>&1 || { echo "fib_ito failed in $dir" >&2; exit 1; }
  ITO_NUM_WORKERS=1 valgrind --tool=callgrind --callgrind-out-file="$tmp/spawn.$tag" \
    "$dir/spawn_loop_ito" >/dev/null 2>&1 || { echo "spawn_loop_ito failed in $dir" >&2; exit 1; }
  fib=$(incl "$tmp/fib.$tag" 'fib_par[(]int[)]')
  spawn=$(incl "$tmp/spawn.$tag" 'create_many[(]long[)]')
  echo "$fib $spawn"
}

read -r f1 s1 < <(measure "$1" a)
printf '%-10s %14s %14s\n' "" "fib_par" "spawn"
printf '%-10s %14s %14s\n' "first" "$f1" "$s1"
if [ $# -ge 2 ]; then
  read -r f2 s2 < <(measure "$2" b)
  printf '%-10s %14s %14s\n' "second" "$f2" "$s2"
  awk -v a="$f1" -v b="$f2" -v c="$s1" -v d="$s2" \
    'BEGIN { printf "%-10s %14.4f %14.4f\n", "ratio", b / a, d / c }'
fi
