# Entry points: `make test` and `make bench` (both install what they need on
# Debian 12 first). The build itself is CMake; see CMakeLists.txt.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS  ?= 2
CMAKE_ARGS ?=
BENCH      ?=
WORKERS    ?=

DEPS         := build-essential cmake pkg-config libtbb-dev libomp-14-dev clang clang-format \
                python3-matplotlib gnuplot-nox valgrind spin gfortran \
                libhwloc-dev hwloc-nox libnuma-dev openmpi-bin libopenmpi-dev
AARCH64_DEPS := gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user

# apt-get needs root: use sudo when not root and sudo exists.
SUDO := $(shell if [ "$$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)
APT_INSTALL := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends

.PHONY: deps build build-debug build-asan build-tsan test test-aarch64 bench clean

# Installs only the packages that are missing; apt-get update only if any are.
deps:
	@if ! command -v dpkg >/dev/null 2>&1; then \
	  echo "deps: dpkg not found (not Debian?); make sure these are installed: $(DEPS)"; \
	  exit 0; \
	fi; \
	missing=""; \
	for p in $(DEPS); do dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "deps: all installed"; exit 0; fi; \
	echo "deps: installing:$$missing"; \
	$(SUDO) apt-get update; \
	$(APT_INSTALL) $$missing

# The builds and their tests are CMake presets (CMakePresets.json): build
# is `release`, build-debug `debug`, build-asan `asan`, build-tsan `tsan`
# (its switches carry ThreadSanitizer's fiber annotations,
# docs/fibers.md), build-aarch64 `aarch64`.
build build-debug build-asan build-tsan:
	cmake --preset $(PRESET_$@) $(CMAKE_ARGS)
	cmake --build --preset $(PRESET_$@) -j$(JOBS)
PRESET_build       := release
PRESET_build-debug := debug
PRESET_build-asan  := asan
PRESET_build-tsan  := tsan

# Every stage runs even if an earlier one failed; the summary says which did,
# with the counts of ctest's JUnit output (tests/ctest-counts.py: skipped
# tests are counted apart, never as passed). Each stage keeps its ctest
# output in <build dir>/ctest.log and its JUnit file in ctest-junit.xml.
# The model checks (label verify) do not depend on the build: the Release
# stage runs them, the Debug stage leaves them out (its test preset).
test: deps
	@rc=0; res=(); \
	counts() { python3 tests/ctest-counts.py "$$1" || true; }; \
	stage() { \
	  local title=$$1 dir=$$2 preset=$$3 note=$$4 s=PASS; \
	  echo "==== $$title build and tests"; \
	  rm -f $$dir/ctest.log $$dir/ctest-junit.xml; \
	  if $(MAKE) --no-print-directory $$dir && \
	     ctest --preset $$preset -j$(TEST_JOBS) --output-junit "$(CURDIR)/$$dir/ctest-junit.xml" \
	       | tee $$dir/ctest.log; then :; else s=FAIL; rc=1; fi; \
	  res+=("$$(printf '%-30s' "$$title ($$dir/):") $$s ($$(counts $$dir/ctest-junit.xml)$$note)"); \
	}; \
	stage Release build release ""; \
	stage Debug build-debug debug "; verify_* in Release only"; \
	stage ASan+UBSan build-asan asan ""; \
	stage TSan build-tsan tsan ""; \
	echo "==== aarch64 cross build and tests under qemu"; \
	mkdir -p build; rm -f build-aarch64/ctest.log build-aarch64/ctest-junit.xml; \
	title=$$(printf '%-30s' "aarch64 qemu (build-aarch64/):"); \
	if $(MAKE) --no-print-directory test-aarch64 2>&1 | tee build/test-aarch64.log; then \
	  if grep -q '^aarch64: .*skipped' build/test-aarch64.log; then \
	    res+=("$$title SKIPPED (cross compiler or qemu-user not installable)"); \
	  else res+=("$$title PASS ($$(counts build-aarch64/ctest-junit.xml))"); fi; \
	else res+=("$$title FAIL ($$(counts build-aarch64/ctest-junit.xml))"); rc=1; fi; \
	echo; echo "==== summary"; printf '%s\n' "$${res[@]}"; \
	echo "(each stage's ctest output: <build dir>/ctest.log)"; \
	exit $$rc

# Cross build for aarch64, tests run through qemu-aarch64 (see
# cmake/toolchain-aarch64.cmake). Skipped, with status 0, where the cross
# compiler or qemu-user can be neither found nor installed.
test-aarch64:
	@have=1; \
	for c in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ qemu-aarch64; do \
	  command -v "$$c" >/dev/null 2>&1 || have=0; \
	done; \
	if [ "$$have" = 0 ]; then \
	  missing=""; \
	  for p in $(AARCH64_DEPS); do dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  echo "aarch64: installing:$$missing"; \
	  if ! { $(SUDO) apt-get update && $(APT_INSTALL) $$missing; }; then \
	    echo "aarch64: cross compiler or qemu-user not installable, skipped"; \
	    exit 0; \
	  fi; \
	fi; \
	set -x; \
	cmake --preset aarch64 $(CMAKE_ARGS); \
	cmake --build --preset aarch64 -j$(JOBS); \
	ctest --preset aarch64 -j$(TEST_JOBS) --output-junit "$(CURDIR)/build-aarch64/ctest-junit.xml" \
	  | tee build-aarch64/ctest.log

# BENCH=name runs one benchmark, WORKERS=n fixes the worker count.
bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build
	python3 bench/run.py $(if $(BENCH),--bench $(BENCH)) $(if $(WORKERS),--workers $(WORKERS))
	@echo "bench: report in $(CURDIR)/results/REPORT.md"

clean:
	rm -rf build build-debug build-asan build-tsan build-aarch64
