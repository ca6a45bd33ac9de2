#!/usr/bin/env bash
# pthread_env.sh PROG LIB: libito-pthread.so's own variables go through the
# runtime's checked parser. Preloaded into PROG (a program that creates a
# thread and prints one line), each good value runs the program (any
# letter case), and each bad value stops it with exit status 2 and one line
# naming the variable, never a crash or a silent run.
set -u
prog=$1 lib=$2
[ -f "$lib" ] || { echo "pthread_env.sh: $lib: no such library" >&2; exit 1; }
status=0

run() { # VAR=VALUE: sets rc and err
  err=$(env -u ITO_PTHREAD -u ITO_PTHREAD_VERIFY "$1" LD_PRELOAD="$lib" timeout -k 5 30 "$prog" 2>&1 >/dev/null)
  rc=$?
}

for ok in ITO_PTHREAD=on ITO_PTHREAD=ON ITO_PTHREAD=Off ITO_PTHREAD=1 ITO_PTHREAD=0 \
          ITO_PTHREAD_VERIFY=0 ITO_PTHREAD_VERIFY=1; do
  run "$ok"
  if [ $rc -ne 0 ]; then
    echo "pthread_env.sh: $ok: exit status $rc, expected 0; stderr: $err" >&2
    status=1
  else
    echo "pthread_env.sh: $ok: runs"
  fi
done

for bad in ITO_PTHREAD=yes ITO_PTHREAD=onn ITO_PTHREAD=2 ITO_PTHREAD_VERIFY=2 \
           ITO_PTHREAD_VERIFY=yes ITO_PTHREAD_VERIFY=on; do
  run "$bad"
  var=${bad%%=*}
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [ $rc -ne 2 ] || ! printf '%s' "$err" | grep -q "^ito: $bad is not valid: expected " ||
     [ "$lines" -ne 1 ]; then
    echo "pthread_env.sh: $bad: exit status $rc, expected 2 and one line naming $var; stderr: $err" >&2
    status=1
  else
    echo "pthread_env.sh: $bad: refused: $err"
  fi
done
[ $status -eq 0 ] && echo "pthread_env.sh: PASS"
exit $status
