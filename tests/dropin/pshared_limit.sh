#!/usr/bin/env bash
# pshared_limit.sh PSHARED_MANY LIB: more threads waiting in glibc's kernel
# waits on process-shared objects than ito has workers in all (1024): the
# program (pshared_many with 1100 waiters, preloaded with LIB on 2 workers)
# cannot go on, as docs/monitor.md ("Waits in the kernel") says, and the
# monitor must say so in one line naming the limit, not ask for a larger
# ITO_EXTRA_WORKERS (which cannot help). The program is then killed, with
# its watchdog (its own process group).
#
# Exit status: 0 pass, 1 failure, 2 usage.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -f "$2" ]; then
  echo "usage: pshared_limit.sh PSHARED_MANY LIBITO_PTHREAD" >&2
  exit 2
fi
prog=$1 lib=$2
err=$(mktemp "${TMPDIR:-/tmp}/ito-limit.XXXXXX") || exit 1
trap 'rm -f "$err"' EXIT
want="ito's limit of [0-9]+ workers in all is reached"

setsid env LD_PRELOAD="$lib" ITO_NUM_WORKERS=2 "$prog" 1100 > /dev/null 2> "$err" &
pid=$!
seen=0
# the message comes 2 s after the last worker blocked; up to 100 s on a
# loaded machine
for _ in $(seq 1 1000); do
  if grep -qE "$want" "$err"; then seen=1; break; fi
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.1
done
kill -KILL -- "-$pid" 2> /dev/null
wait "$pid" 2> /dev/null
if [ "$seen" = 1 ]; then
  grep -E "$want" "$err" | head -n 1
  if grep -q "raise ITO_EXTRA_WORKERS" "$err"; then
    echo "pshared_limit.sh: FAIL: the monitor also asked for a larger ITO_EXTRA_WORKERS" >&2
    exit 1
  fi
  echo "pshared_limit.sh: PASS"
  exit 0
fi
echo "pshared_limit.sh: FAIL: no line with \"$want\" on stderr; it said:" >&2
cut -c1-300 "$err" >&2
exit 1
