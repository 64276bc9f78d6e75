#!/bin/sh
# SPDX-License-Identifier: MIT
# tools/setup.sh: what `make run` and `make test` need before they build,
# installed when it is missing (the Makefile runs this first), so that a
# fresh Debian or Ubuntu machine with make and a C compiler needs nothing
# else.
#
#   needed:   cmake (the build), zlib (helix_lm reads .gz data; `make run`)
#   wanted:   OpenBLAS (fast GEMM), OpenMPI (the multi-process examples
#             and tests); the build works without them, slower or with
#             the distributed tests skipped
#
# What is missing is installed with apt-get: as root directly, otherwise
# through `sudo -n` (never a password prompt). Where neither can run, it
# prints the exact command and fails if something needed is missing (a
# wanted one only gets the command and the note). Nothing is run when all
# is there.
#
# Environment: CC (the compiler the headers are looked for with; default
# cc), CMAKE (default cmake), GAD_SETUP=0 (do nothing), GAD_SETUP=print
# (say what would be installed, install nothing; tests/test_setup.sh).
#   tools/setup.sh --packages   print every package it may install
set -u

# package(s) of each part, on Debian and Ubuntu
PKG_cmake="cmake"
PKG_zlib="zlib1g-dev"
PKG_openblas="libopenblas-dev"
PKG_openmpi="libopenmpi-dev openmpi-bin"

if [ "${1:-}" = "--packages" ]; then
    echo $PKG_cmake $PKG_zlib $PKG_openblas $PKG_openmpi
    exit 0
fi
[ "${GAD_SETUP:-}" = 0 ] && exit 0

cc=${CC:-cc}
cmake=${CMAKE:-cmake}

# 0 when the C compiler finds the header
has_header() {
    printf '#include <%s>\n' "$1" | "$cc" -E -x c - >/dev/null 2>&1
}

# 0 when the C compiler links a program with -l$1
has_lib() {
    printf 'int main(void) { return 0; }\n' |
        "$cc" -x c - -o /dev/null "-l$1" >/dev/null 2>&1
}

need="" want=""
command -v "$cmake" >/dev/null 2>&1 || need="$need cmake"
has_header zlib.h || need="$need zlib"
# the header and a library CMakeLists.txt takes (another package's cblas.h
# alone, e.g. the reference BLAS's, is not enough)
{ has_header cblas.h || has_header openblas/cblas.h; } &&
    { has_lib openblas || has_lib cblas || has_lib blis; } || want="$want openblas"
# any MPI will do (mpicc: MPICH too); OpenMPI is what gets installed
{ command -v mpicc >/dev/null 2>&1 || has_header mpi.h || has_header openmpi/mpi.h; } &&
    command -v mpiexec >/dev/null 2>&1 || want="$want openmpi"
[ -z "$need$want" ] && exit 0

pkgs=""
for part in $need $want; do
    eval "pkgs=\"\$pkgs \$PKG_$part\""
done
pkgs=${pkgs# }
say() { echo "gad setup: $*" >&2; }
[ -n "$need" ] && say "missing, needed to build:$need"
[ -n "$want" ] && say "missing, wanted (the build works without):$want"

if [ "${GAD_SETUP:-}" = print ]; then
    say "would install: apt-get install -y --no-install-recommends $pkgs"
    exit 0
fi

cannot() { # why
    say "cannot install them here ($1); run:"
    say "  sudo apt-get update && sudo apt-get install -y --no-install-recommends $pkgs"
    if [ -n "$need" ]; then
        say "and then make again (missing:$need)"
        exit 1
    fi
    say "going on without:$want"
    exit 0
}

command -v apt-get >/dev/null 2>&1 ||
    { say "no apt-get: install$need$want with the system's package manager"; [ -z "$need" ]; exit; }
if [ "$(id -u)" = 0 ]; then
    as=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as="sudo -n"
else
    cannot "not root, and sudo needs a password or is not there"
fi
say "installing: $pkgs"
export DEBIAN_FRONTEND=noninteractive
$as apt-get update -qq >&2 || cannot "apt-get update failed"
$as apt-get install -y -qq --no-install-recommends $pkgs >&2 || cannot "apt-get install failed"
exit 0
