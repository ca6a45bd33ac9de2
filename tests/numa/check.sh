#!/usr/bin/env bash
# check.sh TEST_NUMA: what test_numa cannot see from inside (docs/numa.md):
#   - a bad ITO_NUMA stops the program with one line and exit status 2;
#   - ITO_NUMA=on on a topology of one node says so in one line and runs;
#   - a bad ITO_PLACES (its syntax, or CPUs the topology does not have)
#     stops the program with one line and exit status 2;
#   - ito_numa_free of a pointer ito did not return is reported in one line
#     and frees nothing (a Debug or sanitizer build then stops: its
#     assertion; a Release build goes on).
set -u
prog=$1
run() { ${NUMA_EMULATOR:-} "$@"; }
fail() { echo "check.sh: $*" >&2; exit 1; }

err=$(ITO_NUMA=maybe run "$prog" real 2>&1 > /dev/null)
rc=$?
[ $rc -eq 2 ] || fail "ITO_NUMA=maybe: exit status $rc, not 2"
[ "$err" = "ito: ITO_NUMA=maybe is not valid: expected auto, on or off" ] ||
  fail "ITO_NUMA=maybe: message '$err'"

err=$(env -u HWLOC_SYNTHETIC -u HWLOC_XMLFILE ITO_NUMA=on ${NUMA_EMULATOR:-} "$prog" real 2>&1 > /dev/null) ||
  fail "ITO_NUMA=on failed: $err"
case $err in
  "") echo "check.sh: this machine has several NUMA nodes: no message expected" ;;
  "ito: ITO_NUMA=on, but the topology has one NUMA node ("*"): running as one node") ;;
  *) fail "ITO_NUMA=on on one node: message '$err'" ;;
esac

# places: the syntax at start, then CPUs the topology has
for v in bogus '{}' '{0:4}:0' '{5000}' 'cores(0)' '{1,2' 'cores,{0}' '{0}:2:x'; do
  err=$(ITO_PLACES="$v" run "$prog" real 2>&1 > /dev/null)
  rc=$?
  [ $rc -eq 2 ] || fail "ITO_PLACES='$v': exit status $rc, not 2"
  case $err in
    "ito: ITO_PLACES=$v is not valid: expected threads, cores, ll_caches, numa_domains or sockets"*) ;;
    *) fail "ITO_PLACES='$v': message '$err'" ;;
  esac
  [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "ITO_PLACES='$v': more than one line"
done
err=$(unset HWLOC_SYNTHETIC HWLOC_XMLFILE; ITO_PLACES='{1000}' run "$prog" real 2>&1 > /dev/null)
rc=$?
[ $rc -eq 2 ] || fail "ITO_PLACES={1000}: exit status $rc, not 2"
printf '%s\n' "$err" | grep -q "^ito: ITO_PLACES={1000} is not valid: expected places whose CPUs the machine has (place 0 has none of the [0-9]* CPUs of " ||
  fail "ITO_PLACES={1000}: message '$err'"

err=$(run "$prog" badfree 2>&1 > /dev/null)
printf '%s\n' "$err" | grep -q "^ito: ito_numa_free(0x[0-9a-f]*, [0-9]*): not a block ito_numa_alloc\* returned with that size; nothing freed$" ||
  fail "a bad free: message '$err'"
echo "check.sh: PASS"
