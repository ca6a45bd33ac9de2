#!/usr/bin/env bash
# names.sh MODEL SRCDIR: every function and variable of the runtime the
# Promela model says it models (the ito__* names and idle_after_publish,
# unsleep_locked in its comments) still appears in the sources, so the model cannot silently drift from the code
# it claims to follow.
set -u
model=$1 src=$2
# the model and the files it includes (next to it)
files=("$model")
for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$model"); do
  [ -f "$(dirname "$model")/$inc" ] || { echo "names.sh: $model includes $inc, not found" >&2; exit 1; }
  files+=("$(dirname "$model")/$inc")
done
names=$(cat "${files[@]}" | grep -o '\bito__[a-z_]*\b\|\bidle_after_publish\b\|\bunsleep_locked\b' | sort -u)
[ -n "$names" ] || { echo "names.sh: $model names no function" >&2; exit 1; }
missing=""
for n in $names; do
  grep -rqw "$n" "$src" --include=*.c --include=*.h || missing="$missing $n"
done
if [ -n "$missing" ]; then
  echo "names.sh: $model names functions that no longer exist:$missing" >&2
  exit 1
fi
echo "names.sh: the $(echo "$names" | wc -l) functions $model names exist: PASS"
