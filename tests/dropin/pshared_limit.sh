#!/usr/bin/env bash
# pshared_limit.sh PSHARED_MANY LIB: threads waiting in glibc's kernel
# waits on process-shared objects, preloaded with LIB on 2 workers
# (docs/monitor.md, "Waits in the kernel"):
#  1. 2000 waiters, past the 256 extra workers of ITO_EXTRA_WORKERS and
#     the 1024 workers ito once had in all: every wait ends, the output is
#     the native run's (each waiter is an OS thread natively too);
#  2. 100 waiters with ITO_WORKER_LIMIT=64: the program cannot go on, and
#     the monitor says so in one line naming that limit, not asking for a
#     larger ITO_EXTRA_WORKERS (which cannot help). The program is then
#     killed, with its watchdog (its own process group).
#
# Exit status: 0 pass, 1 failure, 2 usage.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -f "$2" ]; then
  echo "usage: pshared_limit.sh PSHARED_MANY LIBITO_PTHREAD" >&2
  exit 2
fi
prog=$1 lib=$(realpath "$2")
err=$(mktemp "${TMPDIR:-/tmp}/ito-limit.XXXXXX") || exit 1
trap 'rm -f "$err"' EXIT

want_out=$("$prog" 2000 2> /dev/null)
got_out=$(env LD_PRELOAD="$lib" ITO_NUM_WORKERS=2 "$prog" 2000 2> "$err")
if [ -z "$want_out" ] || [ "$got_out" != "$want_out" ]; then
  echo "pshared_limit.sh: FAIL: 2000 waiters: native said \"$want_out\", preloaded \"$got_out\"; stderr:" >&2
  cut -c1-300 "$err" >&2
  exit 1
fi
# the monitor's one line for growing past the cap: ito ran the waiters
if ! grep -q "more start for such waits, up to 8192 workers in all" "$err"; then
  echo "pshared_limit.sh: FAIL: 2000 waiters: no line on growing past ITO_EXTRA_WORKERS; stderr:" >&2
  cut -c1-300 "$err" >&2
  exit 1
fi
echo "2000 waiters: $got_out"

want="ito's limit of 64 workers in all is reached"
setsid env LD_PRELOAD="$lib" ITO_NUM_WORKERS=2 ITO_WORKER_LIMIT=64 "$prog" 100 > /dev/null 2> "$err" &
pid=$!
seen=0
# the message comes 2 s after the last worker blocked; up to 100 s on a
# loaded machine
for _ in $(seq 1 1000); do
  if grep -qF "$want" "$err"; then seen=1; break; fi
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.1
done
kill -KILL -- "-$pid" 2> /dev/null
wait "$pid" 2> /dev/null
if [ "$seen" = 1 ]; then
  grep -F "$want" "$err" | head -n 1
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
