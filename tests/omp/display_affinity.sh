#!/usr/bin/env bash
# display_affinity.sh PROG LIBITO_OMP: OMP_DISPLAY_AFFINITY=true with a
# format of the fields both runtimes share: the lines each thread of the
# program's parallel region shows on stderr, in any order, must be gcc's
# runtime's (docs/openmp.md, "Affinity display").
set -u
prog=$1 lib=$2
fmt='thread %n of %N, level %L, ancestor %a, team %t of %T'
run() {
  env -u OMP_NUM_THREADS -u OMP_PLACES -u OMP_PROC_BIND OMP_DISPLAY_AFFINITY=true \
    OMP_AFFINITY_FORMAT="$fmt" ITO_NUM_WORKERS=2 "$@" "$prog" 2>&1 > /dev/null | sort
}
want=$(run env) || exit 1
got=$(run env LD_PRELOAD="$lib") || exit 1
[ -n "$want" ] || { echo "display_affinity.sh: gcc's runtime showed nothing" >&2; exit 1; }
if [ "$want" != "$got" ]; then
  echo "display_affinity.sh: libgomp showed:" >&2
  printf '%s\n' "$want" >&2
  echo "display_affinity.sh: libito-omp.so showed:" >&2
  printf '%s\n' "$got" >&2
  exit 1
fi
printf '%s\n' "$got"
echo "display_affinity.sh: PASS"
