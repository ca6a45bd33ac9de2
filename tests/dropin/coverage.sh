#!/usr/bin/env bash
# Compares libc's pthread exports with libito-pthread.so's (docs/dropin.md
# section 6): every call that takes a thread, mutex, condition variable,
# rwlock, barrier, spinlock, once or key must be interposed, or be in the
# pass-through list below with its reason. A new glibc export fails the test
# until it is handled or listed. Then checks the I/O interposers by name.
#   coverage.sh LIBITO_PTHREAD_SO
set -euo pipefail
shim=$1
libc=$(ldd /bin/sh | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -n "$libc" ] && [ -e "$libc" ] || { echo "coverage: cannot find libc.so.6"; exit 1; }

# Calls that reach libc on purpose, and why.
declare -A pass=(
  [pthread_atfork]="glibc keeps and runs the handlers around fork; the runtime's own are registered among them (src/pthread/init.c)"
  [pthread_getconcurrency]="a hint with no object"
  [pthread_setconcurrency]="a hint with no object"
  [pthread_getattr_default_np]="attributes only"
  [pthread_setattr_default_np]="attributes only"
  [pthread_kill_other_threads_np]="does nothing in glibc"
  [__pthread_cleanup_routine]="the C++ cleanup class's own routine, on the caller's frame"
  [__pthread_register_cancel_defer]="pthread_cleanup_push_defer_np (a GNU extension): its handler is in libc's chain, not run at an ito thread's cancellation"
  [__pthread_unregister_cancel_restore]="pthread_cleanup_pop_restore_np (a GNU extension): libc's chain"
  [_pthread_cleanup_push]="the cleanup ABI before glibc 2.3.3: its handlers do not run at an ito thread's pthread_exit"
  [_pthread_cleanup_pop]="the cleanup ABI before glibc 2.3.3"
  [_pthread_cleanup_push_defer]="the cleanup ABI before glibc 2.3.3"
  [_pthread_cleanup_pop_restore]="the cleanup ABI before glibc 2.3.3"
  [__pthread_get_minstack]="GLIBC_PRIVATE"
  [__pthread_keys]="GLIBC_PRIVATE data"
  [__pthread_mutexattr_init]="attributes only"
  [__pthread_mutexattr_destroy]="attributes only"
  [__pthread_mutexattr_settype]="attributes only"
)

exports() { objdump -T "$1" | awk '$0 !~ /\*UND\*/ { print $NF }' | sort -u; }
mapfile -t theirs < <(exports "$libc" | grep -E '^_{0,2}pthread_' \
  | grep -v -E '^_{0,2}pthread_(attr|mutexattr|condattr|rwlockattr|barrierattr)_')
mine=$(exports "$shim")
missing=0 handled=0 passed=0
for f in "${theirs[@]}"; do
  if grep -qx -- "$f" <<<"$mine"; then
    handled=$((handled + 1))
  elif [ -n "${pass[$f]+x}" ]; then
    passed=$((passed + 1))
  else
    echo "coverage: $f is exported by libc but neither interposed nor listed as passing through"
    missing=$((missing + 1))
  fi
done
echo "coverage: ${#theirs[@]} pthread calls in $libc: $handled interposed, $passed pass through (listed), $missing unhandled"

# The I/O and descriptor calls docs/io.md says the shim interposes: an
# interposer left out of the version script would be local, and libc's call
# would run unseen (a parked thread never woken by dup2, a listener's view
# wrong).
io_calls=(read write readv writev recv send recvfrom sendto recvmsg sendmsg accept accept4
          connect close poll __poll_chk __read_chk __recv_chk __recvfrom_chk
          fcntl fcntl64 ioctl setsockopt dup dup2 dup3 close_range closefrom)
io_missing=0
for f in "${io_calls[@]}"; do
  if ! grep -qx -- "$f" <<<"$mine"; then
    echo "coverage: $f is not exported by $shim"
    io_missing=$((io_missing + 1))
  fi
done
echo "coverage: ${#io_calls[@]} I/O and descriptor calls: $((${#io_calls[@]} - io_missing)) interposed, $io_missing missing"
[ "$missing" -eq 0 ] && [ "$io_missing" -eq 0 ]
