#!/usr/bin/env bash
# config_readme.sh CONFIG_ROWS README LIB...: every variable the runtime and
# the drop-in libraries read (config_rows, after loading LIB...) has a row
# in README.md's environment table, and every row of that table is a
# variable they read.
set -u
rows=$1 readme=$2
shift 2
read_vars=$("$rows" "$@" | sort -u) || { echo "config_readme.sh: $rows failed" >&2; exit 1; }
[ -n "$read_vars" ] || { echo "config_readme.sh: no rows listed" >&2; exit 1; }
# the table's rows: | `NAME` | ...
table_vars=$(sed -n 's/^| *`\([A-Z][A-Z0-9_]*\)` *|.*/\1/p' "$readme" | sort -u)
missing=$(comm -23 <(echo "$read_vars") <(echo "$table_vars"))
extra=$(comm -13 <(echo "$read_vars") <(echo "$table_vars"))
status=0
if [ -n "$missing" ]; then
  echo "config_readme.sh: read but not in README.md's table:" $missing >&2
  status=1
fi
if [ -n "$extra" ]; then
  echo "config_readme.sh: in README.md's table but read by nobody:" $extra >&2
  status=1
fi
[ $status -eq 0 ] && echo "config_readme.sh: README.md lists the $(echo "$read_vars" | wc -l) variables read: PASS"
exit $status
