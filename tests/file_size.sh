#!/usr/bin/env bash
# file_size.sh ROOT [LIMIT]: every source file of the project (the runtime,
# its headers, tests, benchmarks, models and tools) has at most LIMIT lines
# (800 unless given): files are split by concern before they grow past what
# one reads in a sitting.
set -u
root=$1 limit=${2:-800}
[ -d "$root/src" ] || { echo "file_size.sh: $root/src: no such folder" >&2; exit 1; }
# one wc for all: "LINES PATH" per file, then a total line
report=$(find "$root/src" "$root/include" "$root/tests" "$root/bench" "$root/verify" \
           "$root/tools" -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' -o -name '*.cpp' \
           -o -name '*.hpp' -o -name '*.py' -o -name '*.sh' -o -name '*.pml' \) -print0 2>/dev/null |
         xargs -0 -r wc -l | grep -v ' total$')
n=$(printf '%s\n' "$report" | grep -c .)
[ "$n" -gt 0 ] || { echo "file_size.sh: no sources found under $root" >&2; exit 1; }
over=$(printf '%s\n' "$report" | awk -v lim="$limit" -v root="$root/" '
  $1 > lim { f = $2; sub("^" root, "", f)
             printf "file_size.sh: %s has %d lines, over %d: split it by concern\n", f, $1, lim }')
if [ -n "$over" ]; then
  echo "$over" >&2
  exit 1
fi
echo "file_size.sh: $n sources, each at most $limit lines"
