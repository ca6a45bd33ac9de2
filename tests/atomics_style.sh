#!/usr/bin/env bash
# atomics_style.sh ROOT: the runtime and its drop-in libraries (src/,
# include/) use one style of atomics (src/core/base.h): plain fields
# through GCC's __atomic builtins, never C11's _Atomic, <stdatomic.h> or
# atomic_* calls. (Tests and benchmarks are programs as users write them,
# free to use either.)
set -u
root=$1
[ -d "$root/src" ] || { echo "atomics_style.sh: $root/src: no such folder" >&2; exit 1; }
n=$(find "$root/src" "$root/include" -type f \( -name '*.c' -o -name '*.h' -o -name '*.hpp' \) | wc -l)
[ "$n" -gt 0 ] || { echo "atomics_style.sh: no sources under $root/src" >&2; exit 1; }
bad=$(grep -rnE '\b_Atomic\b|<stdatomic\.h>|(^|[^_[:alnum:]])atomic_(load|store|exchange|compare_exchange|fetch_[a-z]+|thread_fence|signal_fence|init|flag_[a-z_]+)(_explicit)?[[:space:]]*\(' \
        "$root/src" "$root/include" --include='*.c' --include='*.h' --include='*.hpp' |
      grep -v '^[^:]*:[0-9]*:[[:space:]]*\(/\*\|\*\)')
if [ -n "$bad" ]; then
  echo "$bad" | sed "s|^$root/||; s|^|atomics_style.sh: C11 atomics (use the __atomic builtins, src/core/base.h): |" >&2
  exit 1
fi
echo "atomics_style.sh: $n sources of src/ and include/ use the __atomic builtins only"
