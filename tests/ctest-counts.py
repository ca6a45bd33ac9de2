#!/usr/bin/env python3
"""ctest-counts.py XML: the counts of one ctest run, from its JUnit output
(ctest --output-junit XML), on one line: "111 tests: 94 passed, 0 failed,
17 skipped". A test that did not run (SKIP_RETURN_CODE, a failed
requirement, disabled) is counted as skipped, never as passed. Without
the file, or with one that is not ctest's JUnit output (the build or ctest
stopped first): "no ctest results in XML", exit status 1."""
import sys
import xml.etree.ElementTree as ET


def main():
    if len(sys.argv) != 2:
        print("usage: ctest-counts.py XML", file=sys.stderr)
        return 2
    path = sys.argv[1]
    try:
        suite = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        print(f"no ctest results in {path}")
        return 1
    if suite.tag != "testsuite":
        print(f"no ctest results in {path}")
        return 1
    passed = failed = skipped = 0
    for case in suite.iter("testcase"):
        status = case.get("status")
        if status == "run" and case.find("failure") is None:
            passed += 1
        elif status in ("notrun", "disabled") or case.find("skipped") is not None:
            skipped += 1
        else:
            failed += 1
    print(f"{passed + failed + skipped} tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
