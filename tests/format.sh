#!/usr/bin/env bash
# format.sh ROOT: every C and C++ source of the project (the runtime, its
# headers, tests, benchmarks, models and tools) is as clang-format 14
# (Debian 12's) lays it out under ROOT/.clang-format. Another version lays
# some constructs out differently: SKIPPED (exit status 77), as without
# clang-format. Reformat with: clang-format -i FILE.
set -u
root=$1
[ -f "$root/.clang-format" ] || { echo "format.sh: $root/.clang-format: no such file" >&2; exit 1; }
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "format.sh: SKIPPED: clang-format not installed (apt-get install clang-format)"
  exit 77
fi
version=$("$cf" --version | sed -nE 's/.*version ([0-9]+)\..*/\1/p')
if [ "$version" != 14 ]; then
  echo "format.sh: SKIPPED: $cf is version ${version:-unknown}; the layout is clang-format 14's"
  exit 77
fi
mapfile -d '' files < <(find "$root/src" "$root/include" "$root/tests" "$root/bench" "$root/verify" \
  "$root/tools" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' \) \
  -print0 2>/dev/null)
[ "${#files[@]}" -gt 0 ] || { echo "format.sh: no sources found under $root" >&2; exit 1; }
# one run for all: clang-format names each file that differs
out=$("$cf" --style=file --dry-run --Werror "${files[@]}" 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
  printf '%s\n' "$out" | sed -nE 's/^(.+):[0-9]+:[0-9]+: error: .*/\1/p' | sort -u |
    while read -r f; do
      echo "format.sh: ${f#"$root"/} is not laid out as .clang-format says: clang-format -i it" >&2
    done
  printf '%s\n' "$out" | grep -q ': error: ' || printf '%s\n' "$out" >&2
  exit 1
fi
echo "format.sh: ${#files[@]} sources laid out as .clang-format says"
