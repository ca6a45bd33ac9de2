#!/usr/bin/env bash
# ctest-counts.sh LOG: the counts of one ctest run, read from its output
# (LOG), on one line: "111 tests: 94 passed, 0 failed, 17 skipped".
# ctest's own summary ("100% tests passed, 0 tests failed out of 111")
# counts skipped tests as passed; the skipped ones are those it lists as
# "(Skipped)" or "(Disabled)" under "The following tests did not run:".
# Without that
# summary in LOG (the build or ctest stopped first): "no ctest summary in
# LOG", exit status 1.
set -u
if [ $# -ne 1 ]; then
  echo "usage: ctest-counts.sh LOG" >&2
  exit 2
fi
log=$1
if [ ! -f "$log" ]; then
  echo "no ctest summary in $log"
  exit 1
fi
line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
if [ -z "$line" ]; then
  if grep -q '^No tests were found' "$log"; then
    echo "0 tests"
    exit 0
  fi
  echo "no ctest summary in $log"
  exit 1
fi
failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
skipped=$(sed -n '/^The following tests did not run:/,/^[^[:space:]]/p' "$log" |
          grep -cE '^[[:space:]]+[0-9]+ - .* \((Skipped|Disabled)\)$')
echo "$total tests: $((total - failed - skipped)) passed, $failed failed, $skipped skipped"
