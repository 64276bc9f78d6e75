# SPDX-License-Identifier: MIT
# The two commands of the README:
#   make run    build (Release) and run the main program (the HELIX LM demo)
#   make test   build everything and run the whole test suite (ctest)
# Each first installs what the build needs and is missing (setup, below).
# Variables: BUILD (build dir), CC and CXX (compilers), CMAKE_FLAGS (e.g.
# -DGAD_BLAS=OFF), JOBS (parallel build jobs), PREFIX (make install's
# destination; default /usr/local, or what the build dir was configured
# with).
#
# CC, CXX and CMAKE_FLAGS configure the build dir exactly as they say: make
# keeps the configure line it used in $(BUILD)/make-configure.args and, when
# they ask for another one, says so and configures the dir again from a
# fresh cache (an option left out takes its default again; CMAKE_FLAGS=
# asks for the defaults). Without any of them, make uses the build dir as
# it is (configuring it with the defaults if it is new), so that `make
# test` and `make run` after `make test CC=clang` use the clang build and
# configure nothing. Keep two configurations side by side with BUILD=dir.

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CMAKE ?= cmake
CTEST ?= ctest
PREFIX ?=

.PHONY: all setup configure build test run bench compare clean install generated

all: build

# CC=clang (or CXX=clang++) on the command line or in the environment
# chooses the compiler. CC alone also picks its C++ compiler when there is
# one (clang -> clang++, gcc-12 -> g++-12, cc -> c++), so that the C++
# tests and example are built with the same toolchain (and sanitizer).
CC_FLAG := $(if $(filter command line environment,$(origin CC)),-DCMAKE_C_COMPILER=$(CC))
CC_NAME := $(notdir $(CC))
CXX_OF_CC := $(patsubst %$(CC_NAME),%,$(CC))$(or \
  $(if $(filter clang%,$(CC_NAME)),$(patsubst clang%,clang++%,$(CC_NAME))),\
  $(if $(filter gcc%,$(CC_NAME)),$(patsubst gcc%,g++%,$(CC_NAME))),\
  $(if $(filter cc,$(CC_NAME)),c++))
CXX_FLAG := $(strip $(if $(filter command line environment,$(origin CXX)),\
  -DCMAKE_CXX_COMPILER=$(CXX),$(if $(CC_FLAG),$(if $(filter clang% gcc% cc,$(CC_NAME)),\
  $(if $(shell command -v '$(CXX_OF_CC)' 2>/dev/null),-DCMAKE_CXX_COMPILER=$(CXX_OF_CC))))))
CONFIGURE_ARGS = -DCMAKE_BUILD_TYPE=Release $(CC_FLAG) $(CXX_FLAG) $(CMAKE_FLAGS)
# 1 when CC, CXX or CMAKE_FLAGS is given (on the command line or in the
# environment), even empty.
CONFIGURE_GIVEN := $(if $(CC_FLAG)$(CXX_FLAG)$(filter command line environment,$(origin CMAKE_FLAGS)),1,0)

# What the build needs and does not find (cmake, zlib; OpenBLAS, OpenMPI)
# is installed first with apt-get, as root or through sudo -n, never with
# a password prompt; where it cannot be, tools/setup.sh prints the exact
# command (and stops when cmake or zlib is missing). GAD_SETUP=0 skips it.
setup:
	@CC='$(CC)' CMAKE='$(CMAKE)' sh tools/setup.sh

# The line is written one argument per line by the shell itself, so that
# CMAKE_FLAGS with quotes compares as the arguments cmake gets.
configure: setup
	@mkdir -p '$(BUILD)'; \
	args='$(BUILD)/make-configure.args'; \
	printf '%s\n' $(CONFIGURE_ARGS) > "$$args.new"; \
	if [ -f '$(BUILD)/CMakeCache.txt' ]; then \
	  if [ $(CONFIGURE_GIVEN) = 0 ] || cmp -s "$$args.new" "$$args"; then \
	    rm -f "$$args.new"; exit 0; \
	  fi; \
	  if [ -f "$$args" ]; then \
	    echo "gad: $(BUILD) was configured with: $$(tr '\n' ' ' < "$$args")"; \
	  else echo "gad: $(BUILD) was configured by hand (not by make)"; fi; \
	  echo "gad: now asked for: $$(tr '\n' ' ' < "$$args.new")"; \
	  echo "gad: configuring $(BUILD) again from a fresh cache"; \
	  rm -rf '$(BUILD)/CMakeCache.txt' '$(BUILD)/CMakeFiles'; \
	fi; \
	rm -f "$$args"; \
	if $(CMAKE) -S . -B '$(BUILD)' $(CONFIGURE_ARGS); then \
	  mv "$$args.new" "$$args"; \
	else \
	  rm -f '$(BUILD)/CMakeCache.txt' "$$args.new"; exit 1; \
	fi

build: configure
	$(CMAKE) --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS)

# The main program: train the HELIX byte-level language model on the King
# James Bible for 180 s, then print where the checkpoint, metrics and plot
# went and a 300-byte sample from "And God said".
run: build
	$(BUILD)/examples/helix_lm train --time-budget 180 --out helix_run

bench: build

compare: bench
	bench/compare --build $(BUILD)

# The files derived from gad.h, the tests and the back ends' tables, after
# a change to any (a new public function, a new elementwise op's row, a
# kernel entry): the call-site macros (include/gad_call_sites.h), the
# bad-input page (docs/errors.md) and the op x back end table
# (docs/backends.md). test_call_sites, call_sites_generated, test_bad_input
# and test_backends fail until then.
generated: build
	python3 tools/gen_call_sites.py
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target test_bad_input test_backends
	$(BUILD)/tests/test_bad_input --markdown > docs/errors.md
	$(BUILD)/tests/test_backends --markdown > docs/backends.md

# make install PREFIX=$$HOME/.local installs without root; DESTDIR=dir
# (staged installs) is honoured by cmake --install too.
install: build
	$(CMAKE) --install $(BUILD) $(if $(strip $(PREFIX)),--prefix '$(abspath $(PREFIX))')

clean:
	rm -rf $(BUILD)
