#!/usr/bin/env bash
# coverage.sh LIBITO_OMP: every GOMP_* and omp_* function that the system's
# libgomp exports (C and Fortran names; not the GOMP_PLUGIN_* interface of
# offload plugins) must be defined by LIBITO_OMP, implemented or as a stub
# that stops the program naming itself (src/omp/unsupported.def).
set -euo pipefail
lib=$1
gomp=$(gcc -print-file-name=libgomp.so.1)
[ -f "$gomp" ] || gomp=$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')
if [ ! -f "$gomp" ]; then echo "coverage: libgomp.so.1 not found"; exit 1; fi
theirs=$(nm -D --defined-only "$gomp" | awk '$2 == "T" || $2 == "W" || $2 == "i" {print $3}' |
         sed 's/@.*//' | grep -E '^(GOMP_|omp_)' | grep -v '^GOMP_PLUGIN_' | sort -u)
ours=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
missing=$(comm -23 <(echo "$theirs") <(echo "$ours"))
n=$(echo "$theirs" | wc -l)
if [ -n "$missing" ]; then
  echo "coverage: $(echo "$missing" | wc -l) of $n libgomp functions are not defined by $lib:"
  echo "$missing"
  exit 1
fi
echo "coverage: all $n GOMP_*/omp_* functions of $gomp are defined by $lib"
