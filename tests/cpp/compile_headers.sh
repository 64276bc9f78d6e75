#!/bin/sh
# SPDX-License-Identifier: MIT
# gad.h and gad.hpp compile cleanly as C++: each C++ compiler given builds
# tests/cpp/gad_h.cpp (gad.h alone) and tests/cpp/gad_hpp.cpp as C++11,
# C++17 and (where the compiler has it) C++20, with -Wall -Wextra -Wpedantic
# -Werror, then also with warnings strict C++ projects turn on, and
# gad_hpp.cpp with -fno-exceptions and with GAD_HPP_NO_EXCEPTIONS, and both
# with GAD_CALL_SITES (every call through gad_call_sites.h). Exits 77 (ctest: skipped) when no
# compiler is given.
# Usage: tests/cpp/compile_headers.sh SOURCE_DIR OUT_DIR [CXX...]
set -eu
src=$1
out=$2
shift 2
if [ $# -eq 0 ]; then
  echo "no C++ compiler: skipped"
  exit 77
fi
mkdir -p "$out"
warn="-Wall -Wextra -Wpedantic -Werror"
strict="-Wold-style-cast -Wconversion -Wsign-conversion -Wshadow -Wcast-qual -Wzero-as-null-pointer-constant"
n=0
build() { # CXX STD FILE FLAGS...
  cxx=$1 std=$2 file=$3
  shift 3
  n=$((n + 1))
  if ! "$cxx" "-std=$std" $warn "$@" -I"$src/include" -c "$src/tests/cpp/$file" \
       -o "$out/$n.o"; then
    echo "FAIL: $cxx -std=$std $warn $* $file"
    exit 1
  fi
}
for cxx in "$@"; do
  stds="c++11 c++17"
  if echo 'int main() {}' | "$cxx" -std=c++20 -x c++ -fsyntax-only - 2>/dev/null; then
    stds="$stds c++20"
  fi
  for std in $stds; do
    build "$cxx" "$std" gad_h.cpp
    build "$cxx" "$std" gad_h.cpp $strict
    build "$cxx" "$std" gad_hpp.cpp
    build "$cxx" "$std" gad_hpp.cpp $strict
    # every function through its call-site macro (gad_call_sites.h)
    build "$cxx" "$std" gad_h.cpp -DGAD_CALL_SITES $strict
    build "$cxx" "$std" gad_hpp.cpp -DGAD_CALL_SITES $strict
  done
  build "$cxx" c++17 gad_hpp.cpp -fno-exceptions
  build "$cxx" c++17 gad_hpp.cpp -DGAD_HPP_NO_EXCEPTIONS
  echo "$cxx ($stds): gad.h and gad.hpp compile cleanly"
done
