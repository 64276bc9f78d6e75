# The two commands of the README:
#   make run    build (Release) and run the main program (the HELIX LM demo)
#   make test   build everything and run the whole test suite (ctest)
# Variables: BUILD (build dir), CC, CMAKE_FLAGS (e.g. -DGAD_BLAS=OFF),
# JOBS (parallel build jobs).

BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CMAKE ?= cmake
CTEST ?= ctest

.PHONY: all build test run bench compare clean install

all: build

# CC=clang on the command line chooses the compiler of a new build dir.
CC_FLAG := $(if $(filter command line environment,$(origin CC)),-DCMAKE_C_COMPILER=$(CC))

$(BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CC_FLAG) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
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

install: build
	$(CMAKE) --install $(BUILD)

clean:
	rm -rf $(BUILD)
