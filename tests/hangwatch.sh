# hangwatch.sh: sourced by the test drivers that run programs (tests/dropin/
# both.sh, tests/omp/compare.sh) so that a run that hangs says where.
#
# watched_run LIMIT OUT ERR DOG CMD [ARGS...]: runs CMD in the foreground
# (a background job would start with SIGINT and SIGQUIT ignored), stdout to
# OUT, stderr to ERR. If it still runs after LIMIT seconds (empty: never
# watched), what it is doing goes to DOG (its stderr so far and, where gdb
# is installed, ito's threads by tools/gdb/ito-gdb.py and every OS thread's
# stack) and it is killed. Sets watched_rc: CMD's exit status, or 124 when
# it was killed so (DOG then is not empty).

hangwatch_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# hangwatch_dog PIDFILE LIMIT ERR DOG: the watchdog, in the background.
hangwatch_dog() {
  local pidfile=$1 limit=$2 err=$3 dog=$4 pid
  sleep "$limit"
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  {
    echo "hangwatch: process $pid still running after $limit s; its stderr so far:"
    cat "$err"
    if command -v gdb >/dev/null 2>&1; then
      echo "hangwatch: its threads, as gdb sees them:"
      timeout 20 gdb -p "$pid" -batch -nx -ex "set pagination off" \
        -ex "source $hangwatch_here/../tools/gdb/ito-gdb.py" -ex "info ito-threads" \
        -ex "thread apply all bt 30" 2>&1 | grep -v '^\[New LWP\|^warning: ' | head -n 400
    fi
  } >"$dog"
  kill -KILL "$pid" 2>/dev/null
}

watched_run() {
  local limit=$1 out=$2 err=$3 dog=$4
  shift 4
  local pidfile="$dog.pid" watcher=""
  rm -f "$dog" "$pidfile"
  if [ -n "$limit" ]; then
    [ "$limit" -lt 1 ] && limit=1
    hangwatch_dog "$pidfile" "$limit" "$err" "$dog" </dev/null >/dev/null 2>&1 &
    watcher=$!
  fi
  sh -c 'echo $$ >"$0"; exec "$@"' "$pidfile" "$@" >"$out" 2>"$err"
  watched_rc=$?
  if [ -n "$watcher" ]; then
    pkill -P "$watcher" 2>/dev/null # (its sleep)
    kill "$watcher" 2>/dev/null
    wait "$watcher" 2>/dev/null
    [ -s "$dog" ] && watched_rc=124
  fi
  rm -f "$pidfile"
}
