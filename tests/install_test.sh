#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install gad from a build directory into a prefix that is not a system one,
# as a user without root would (make install PREFIX=...), then use the
# installed package as README says:
# - the quickstart example built with CMake's find_package (gad::gad and
#   gad::gad_static) and with `cc -std=c11 prog.c $(pkg-config --cflags
#   --libs gad)`, and examples/cpp_quickstart.cpp (gad.hpp) both ways when
#   there is a C++ compiler;
# - every program run with LD_LIBRARY_PATH unset, and the shared ones
#   loading libgad.so.0 from the prefix (the rpath CMake gives a program
#   linked to an imported library; gad.pc's -Wl,-rpath);
# - no installed text file naming the build or source tree, no run path
#   of libgad.so into them, and no CMake or pkg-config file naming a
#   library file by its absolute path: the package depends neither on where
#   it was built nor on where it is installed (the pkg-config build runs
#   again from a moved prefix); also for a CBLAS found at a path of its own
#   (a configure of a scratch dir checks the export set and gad.pc).
# Usage: tests/install_test.sh BUILD_DIR [PREFIX]   (default: a temp dir)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ $# -ge 2 ]; then prefix=$(realpath -m "$2"); else prefix=$work/prefix; fi
rm -rf "$prefix" "$prefix.moved"
fail() { echo "FAIL: $*" >&2; exit 1; }

# make install as a user types it (not with what an enclosing make passes
# down); it builds nothing when the build dir is up to date.
if command -v make >/dev/null; then
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CC -u CXX -u CMAKE_FLAGS \
      -u BUILD -u PREFIX -u DESTDIR \
      make --no-print-directory -C "$root" install BUILD="$build" \
      PREFIX="$prefix" > "$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "make install PREFIX=$prefix"; }
  echo "make install PREFIX=...: ok"
else
  cmake --install "$build" --prefix "$prefix" >/dev/null
fi
[ -f "$prefix/include/gad.h" ] && [ -f "$prefix/include/gad.hpp" ] &&
  [ -f "$prefix/include/gad_call_sites.h" ] ||
  fail "gad.h, gad.hpp and gad_call_sites.h are not all in $prefix/include"
pcdir=$(dirname "$(find "$prefix" -name gad.pc | head -n1)")

# Nothing installed names this machine's build.
for tree in "$build" "$root"; do
  if grep -rIlF "$tree" "$prefix"; then
    fail "the installed files above name $tree"
  fi
done
if grep -rnE '(^|[ ;"])/[^ ;"]*\.(so|a|dylib)([ ;"]|$)' "$prefix"/lib*/cmake "$pcdir"; then
  fail "an installed CMake or pkg-config file names a library file by its path"
fi
if command -v readelf >/dev/null; then
  while IFS= read -r so; do
    if readelf -d "$so" | grep -E 'R(UN)?PATH' | grep -F -e "$build" -e "$root"; then
      fail "$so keeps a run path into the build machine's trees"
    fi
  done < <(find "$prefix" -name 'libgad.so*' -type f)
fi
echo "no path of the build machine: ok"

# The same with a CBLAS at a path of this machine's own (configured only,
# not built: the export set and gad.pc are written at generate time): the
# package names it by its link name.
fake=$work/fake-blas
mkdir -p "$fake/include" "$fake/lib"
: > "$fake/include/cblas.h"
cmake -S "$root" -B "$work/blas-build" -DGAD_BUILD_TESTS=OFF \
  -DGAD_CBLAS_INCLUDE_DIR="$fake/include" \
  -DGAD_CBLAS_LIBRARY="$fake/lib/libopenblas.so" >"$work/blas.log" 2>&1 ||
  { cat "$work/blas.log"; fail "configuring with a CBLAS"; }
exported=$(find "$work/blas-build/CMakeFiles/Export" -name 'gadTargets.cmake')
grep -q 'gad::cblas' "$exported" || fail "the export set does not link gad::cblas"
grep -q '^Libs.private:.* -lopenblas' "$work/blas-build/gad.pc" ||
  fail "gad.pc does not say -lopenblas"
grep -q '"openblas"' "$work/blas-build/gadConfig.cmake" ||
  fail "gadConfig.cmake does not look for openblas"
if grep -nF "$fake" "$exported" "$work/blas-build/gad.pc" "$work/blas-build/gadConfig.cmake"; then
  fail "the package names the CBLAS by its path on this machine"
fi
echo "a CBLAS is exported by name: ok"

# With CUDA (configured only, where nvcc exists): a static link needs
# libcudart_static.a, on no linker's default path, so gad.pc's
# Libs.private names its folder with -L before -lcudart_static.
nvcc=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
if [ -n "$nvcc" ]; then
  cmake -S "$root" -B "$work/cuda-build" -DGAD_BUILD_TESTS=OFF -DGAD_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc" >"$work/cuda.log" 2>&1 ||
    { cat "$work/cuda.log"; fail "configuring with CUDA"; }
  libs=$(sed -n 's/^Libs.private: //p' "$work/cuda-build/gad.pc")
  case " $libs " in
    *" -lcudart_static "*) ;;
    *) fail "gad.pc with CUDA does not say -lcudart_static: $libs" ;;
  esac
  found=""
  for f in $libs; do
    case "$f" in -L*) [ -f "${f#-L}/libcudart_static.a" ] && found=${f#-L} ;; esac
    [ "$f" = -lcudart_static ] && break
  done
  [ -n "$found" ] || fail "gad.pc names -lcudart_static without the -L of its folder: $libs"
  echo "gad.pc with CUDA names libcudart_static's folder ($found): ok"
else
  echo "gad.pc with CUDA: skipped (no nvcc)"
fi

# run PROGRAM: run it with no LD_LIBRARY_PATH; a program linked to
# libgad.so must load the one in the prefix.
run() {
  if command -v ldd >/dev/null && ldd "$1" | grep -q 'libgad\.so'; then
    local lib
    lib=$(ldd "$1" | awk '/libgad\.so/ { print $3 }')
    case $(realpath "$lib" 2>/dev/null || echo "$lib") in
      "$(realpath "$2")"/*) ;;
      *) fail "$1 loads libgad from '$lib', not from $2" ;;
    esac
  fi
  env -u LD_LIBRARY_PATH "$1" >"$work/run.log" 2>&1 ||
    { cat "$work/run.log"; fail "$1 did not run"; }
}

cp "$root/examples/quickstart.c" "$root/examples/cpp_quickstart.cpp" "$work/"
cat > "$work/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(gad REQUIRED)
add_executable(quick_shared quickstart.c)
target_link_libraries(quick_shared PRIVATE gad::gad)
add_executable(quick_static quickstart.c)
target_link_libraries(quick_static PRIVATE gad::gad_static)
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  add_executable(cpp_quick cpp_quickstart.cpp)
  target_compile_features(cpp_quick PRIVATE cxx_std_17)
  target_link_libraries(cpp_quick PRIVATE gad::gad)
endif()
CM
cmake -S "$work" -B "$work/b" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; fail "find_package(gad)"; }
cmake --build "$work/b" >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; fail "building against find_package(gad)"; }
run "$work/b/quick_shared" "$prefix"
run "$work/b/quick_static" "$prefix"
if [ -x "$work/b/cpp_quick" ]; then
  run "$work/b/cpp_quick" "$prefix"
  echo "find_package: ok (C and C++)"
else
  echo "find_package: ok (C; no C++ compiler)"
fi

if ! command -v pkg-config >/dev/null; then
  echo "pkg-config: not installed, skipped"
  exit 0
fi
cc=${CC:-cc}
cxx=${CXX:-c++}
# pc_build PCDIR: README's commands, with gad.pc from PCDIR.
pc_build() {
  local flags
  flags=$(PKG_CONFIG_PATH="$1" pkg-config --cflags --libs gad)
  # shellcheck disable=SC2086
  "$cc" -std=c11 "$work/quickstart.c" $flags -o "$work/quick_pc"
  if command -v "$cxx" >/dev/null; then
    # shellcheck disable=SC2086
    "$cxx" -std=c++17 "$work/cpp_quickstart.cpp" $flags -o "$work/cpp_pc"
  fi
}
pc_build "$pcdir"
run "$work/quick_pc" "$prefix"
[ ! -x "$work/cpp_pc" ] || run "$work/cpp_pc" "$prefix"
# with every call through its call-site macro (the installed gad_call_sites.h)
# shellcheck disable=SC2086
"$cc" -std=c11 -DGAD_CALL_SITES "$work/quickstart.c" \
  $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs gad) -o "$work/quick_sites"
run "$work/quick_sites" "$prefix"
echo "pkg-config: ok"

# The same from the prefix moved elsewhere.
mv "$prefix" "$prefix.moved"
rm -f "$work/quick_pc" "$work/cpp_pc"
pc_build "$prefix.moved${pcdir#"$prefix"}"
run "$work/quick_pc" "$prefix.moved"
mv "$prefix.moved" "$prefix"
echo "pkg-config, prefix moved: ok"
