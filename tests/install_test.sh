#!/usr/bin/env bash
# Install gad from a build directory into a prefix, then build the quickstart
# example against the installed files twice: with CMake's find_package and
# with pkg-config. Usage: tests/install_test.sh BUILD_DIR PREFIX
set -euo pipefail
build=$1
prefix=$(realpath -m "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$root/examples/quickstart.c" "$work/"
cat > "$work/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(gad REQUIRED)
add_executable(quick_shared quickstart.c)
target_link_libraries(quick_shared PRIVATE gad::gad)
add_executable(quick_static quickstart.c)
target_link_libraries(quick_static PRIVATE gad::gad_static)
CM
cmake -S "$work" -B "$work/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/b" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$work/b/quick_shared" >/dev/null
"$work/b/quick_static" >/dev/null
echo "find_package: ok"

libdir=$(dirname "$(find "$prefix" -name gad.pc | head -n1)")
export PKG_CONFIG_PATH="$libdir"
cc -std=c11 "$work/quickstart.c" $(pkg-config --cflags --libs gad) -o "$work/quick_pc"
LD_LIBRARY_PATH="$prefix/lib:$(dirname "$libdir"):${LD_LIBRARY_PATH:-}" "$work/quick_pc" >/dev/null
echo "pkg-config: ok"
