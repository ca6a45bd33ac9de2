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

DEPS         := build-essential cmake pkg-config libtbb-dev libomp-14-dev clang \
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

build:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build build -j$(JOBS)

build-debug:
	cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DITO_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build build-debug -j$(JOBS)

build-asan:
	cmake -S . -B build-asan -DITO_SANITIZE=address -DITO_BUILD_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build build-asan -j$(JOBS)

# ThreadSanitizer: the runtime's switches carry its fiber annotations, and
# every fork is a lightweight thread of its own there (docs/fibers.md).
build-tsan:
	cmake -S . -B build-tsan -DITO_SANITIZE=thread -DITO_BUILD_BENCH=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)
	cmake --build build-tsan -j$(JOBS)

# Every stage runs even if an earlier one failed; the summary says which did,
# with ctest's counts (tests/ctest-counts.sh: skipped tests are counted
# apart, never as passed). Each stage's ctest output is kept in
# <build dir>/ctest.log. The model checks (label verify) do not depend on
# the build: the Release stage runs them, the Debug stage leaves them out.
test: deps
	@rc=0; res=(); \
	counts() { bash tests/ctest-counts.sh "$$1" || true; }; \
	echo "==== Release build and tests"; \
	rm -f build/ctest.log; \
	if $(MAKE) --no-print-directory build && \
	   ctest --test-dir build --output-on-failure -j$(TEST_JOBS) | tee build/ctest.log; then \
	  res+=("Release (build/):              PASS ($$(counts build/ctest.log))"); \
	else res+=("Release (build/):              FAIL ($$(counts build/ctest.log))"); rc=1; fi; \
	echo "==== Debug build and tests"; \
	rm -f build-debug/ctest.log; \
	if $(MAKE) --no-print-directory build-debug && \
	   ctest --test-dir build-debug --output-on-failure -j$(TEST_JOBS) -LE verify \
	     | tee build-debug/ctest.log; then \
	  res+=("Debug (build-debug/):          PASS ($$(counts build-debug/ctest.log); verify_* in Release only)"); \
	else res+=("Debug (build-debug/):          FAIL ($$(counts build-debug/ctest.log); verify_* in Release only)"); rc=1; fi; \
	echo "==== AddressSanitizer + UBSan build and tests"; \
	rm -f build-asan/ctest.log; \
	if $(MAKE) --no-print-directory build-asan && \
	   UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j$(TEST_JOBS) \
	     | tee build-asan/ctest.log; then \
	  res+=("ASan+UBSan (build-asan/):      PASS ($$(counts build-asan/ctest.log))"); \
	else res+=("ASan+UBSan (build-asan/):      FAIL ($$(counts build-asan/ctest.log))"); rc=1; fi; \
	echo "==== ThreadSanitizer build and tests"; \
	rm -f build-tsan/ctest.log; \
	if $(MAKE) --no-print-directory build-tsan && \
	   TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	     ctest --test-dir build-tsan --output-on-failure -j$(TEST_JOBS) | tee build-tsan/ctest.log; then \
	  res+=("TSan (build-tsan/):            PASS ($$(counts build-tsan/ctest.log))"); \
	else res+=("TSan (build-tsan/):            FAIL ($$(counts build-tsan/ctest.log))"); rc=1; fi; \
	echo "==== aarch64 cross build and tests under qemu"; \
	mkdir -p build; rm -f build-aarch64/ctest.log; \
	if $(MAKE) --no-print-directory test-aarch64 2>&1 | tee build/test-aarch64.log; then \
	  if grep -q '^aarch64: .*skipped' build/test-aarch64.log; then \
	    res+=("aarch64 qemu (build-aarch64/): SKIPPED (cross compiler or qemu-user not installable)"); \
	  else res+=("aarch64 qemu (build-aarch64/): PASS ($$(counts build-aarch64/ctest.log))"); fi; \
	else res+=("aarch64 qemu (build-aarch64/): FAIL ($$(counts build-aarch64/ctest.log))"); rc=1; fi; \
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
	cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
	  -DCMAKE_BUILD_TYPE=Release -DITO_BUILD_BENCH=OFF $(CMAKE_ARGS); \
	cmake --build build-aarch64 -j$(JOBS); \
	ctest --test-dir build-aarch64 --output-on-failure -j$(TEST_JOBS) | tee build-aarch64/ctest.log

# BENCH=name runs one benchmark, WORKERS=n fixes the worker count.
bench:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory build
	python3 bench/run.py $(if $(BENCH),--bench $(BENCH)) $(if $(WORKERS),--workers $(WORKERS))
	@echo "bench: report in $(CURDIR)/results/REPORT.md"

clean:
	rm -rf build build-debug build-asan build-tsan build-aarch64
