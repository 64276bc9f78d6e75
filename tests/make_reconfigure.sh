#!/bin/sh
# SPDX-License-Identifier: MIT
# The Makefile's configure step: a changed CMAKE_FLAGS or CC takes effect on
# a build dir that exists (README: `make test CMAKE_FLAGS=...`, `make test
# CC=clang`), exactly (an option left out takes its default again); an
# unchanged one configures nothing; make without them uses the dir as it is,
# also one configured by hand. Configures only; builds nothing.
# Usage: tests/make_reconfigure.sh SOURCE_DIR WORK_DIR [MAKE]
set -eu
src=$1
work=$2
make=${3:-make}
rm -rf "$work"
mkdir -p "$work"
b="$work/build"

# Run make as a user would, not with what an enclosing make (make test ->
# ctest -> this script) passes down in MAKEFLAGS and the environment.
m() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CC -u CXX -u CMAKE_FLAGS \
      -u BUILD -u PREFIX -u JOBS "$make" --no-print-directory -C "$src" \
      configure BUILD="$b" "$@" > "$work/out" 2>&1 || {
    cat "$work/out"; echo "FAIL: make configure $*"; exit 1; }
}
cache() { grep "^$1:" "$b/CMakeCache.txt" | sed 's/^[^=]*=//'; }
expect() { # NAME VALUE WHAT
  v=$(cache "$1")
  [ "$v" = "$2" ] || { cat "$work/out"; echo "FAIL: $3: $1 is '$v', not '$2'"; exit 1; }
}
fail() { cat "$work/out"; echo "FAIL: $*"; exit 1; }

m CMAKE_FLAGS="-DGAD_BLAS=OFF"
expect GAD_BLAS OFF "first configure"
expect GAD_THREADS ON "first configure"
m CMAKE_FLAGS="-DGAD_THREADS=OFF"
expect GAD_THREADS OFF "CMAKE_FLAGS changed"
expect GAD_BLAS ON "an option left off takes its default again"
grep -q 'configuring .* again' "$work/out" || fail "no message on a changed configuration"

# Nothing changed: no configure (the cache is not rewritten, nothing said).
before=$(cksum < "$b/CMakeCache.txt")
touch -d '2000-01-01' "$b/CMakeCache.txt"
m CMAKE_FLAGS="-DGAD_THREADS=OFF"
[ ! -s "$work/out" ] || fail "an unchanged command line printed something"
[ "$(cksum < "$b/CMakeCache.txt")" = "$before" ] || fail "an unchanged command line reconfigured"
[ "$(find "$b/CMakeCache.txt" -newermt '2001-01-01')" = "" ] || fail "the cache was touched"

# Quoted flags compare as the arguments cmake gets.
m CMAKE_FLAGS="-DGAD_SANITIZE='' -DCMAKE_C_FLAGS='-O2 -g'"
expect CMAKE_C_FLAGS "-O2 -g" "quoted CMAKE_FLAGS"
m CMAKE_FLAGS="-DGAD_SANITIZE='' -DCMAKE_C_FLAGS='-O2 -g'"
[ ! -s "$work/out" ] || fail "the same quoted CMAKE_FLAGS reconfigured"

# No variables: the dir as it is, configured again or not.
m
[ ! -s "$work/out" ] || fail "make with no variables configured"
expect CMAKE_C_FLAGS "-O2 -g" "make with no variables"
# CMAKE_FLAGS= (given, empty): the defaults again.
m CMAKE_FLAGS=
expect CMAKE_C_FLAGS "" "CMAKE_FLAGS="
expect GAD_THREADS ON "CMAKE_FLAGS="

# Another compiler, when there is one.
for cc in clang gcc; do
  command -v "$cc" >/dev/null 2>&1 || continue
  m CC="$cc"
  case $(cache CMAKE_C_COMPILER) in
    *"$cc"*) ;;
    *) fail "CC=$cc: CMAKE_C_COMPILER is $(cache CMAKE_C_COMPILER)" ;;
  esac
  # and its C++ compiler with it, when there is one
  cxx=$(echo "$cc" | sed 's/^clang/clang++/; s/^gcc/g++/')
  if command -v "$cxx" >/dev/null 2>&1; then
    case $(cache CMAKE_CXX_COMPILER) in
      *"$cxx"*) ;;
      *) fail "CC=$cc: CMAKE_CXX_COMPILER is $(cache CMAKE_CXX_COMPILER), not $cxx" ;;
    esac
  fi
done

# A dir configured by hand keeps its options while make is given none.
rm -rf "$b"
cmake -S "$src" -B "$b" -DGAD_BLAS=OFF > "$work/out" 2>&1 || fail "cmake by hand"
m
expect GAD_BLAS OFF "a dir configured by hand"
echo "make configure: ok"
