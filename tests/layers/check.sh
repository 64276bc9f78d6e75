#!/bin/sh
# check.sh OBJECT...: every arrow between gad's layers points down (DESIGN
# §1). For each object file of the library (ctest passes the gad_obj
# target's objects, .../src/<folder>/<file>.c.o), the gad symbols it uses but does not define must
# be defined in its own folder or in a folder below it:
#   core <- backend, ad, cpu <- ops <- grad <- nn, dist
# (cpu and any other back end implement backend's table with core alone;
# backend's registry names the CPU's table, its first entry, and probes the
# back ends that need a driver through their one entry point, cuda/cuda.h;
# dist's NCCL transport takes the CUDA back end's stream through the same
# header, an arrow down from the top). It also checks
# the #include lines of the sources, so that a header of an upper layer is
# not even seen from below. Exit 1 and a line per arrow that runs up.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)/src
# allowed[folder] = the folders it may reach
allowed() {
    case $1 in
    core) echo "core" ;;
    backend) echo "backend core cpu cuda" ;;
    cpu|cuda) echo "cpu cuda backend core" ;;
    ad) echo "ad core" ;;
    ops) echo "ops ad backend core" ;;
    grad) echo "grad ops ad backend core" ;;
    io) echo "io grad ops ad backend core" ;;
    nn) echo "nn io grad ops ad backend core" ;;
    optim) echo "optim nn io grad ops ad backend core" ;;
    dist) echo "optim nn io dist grad ops ad backend core cuda" ;;
    *) echo "" ;;
    esac
}
layers="core backend cpu cuda ad ops grad io nn optim dist"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the objects by folder (ctest may pass them as one ;-separated list)
for arg in "$@"; do
    for o in $(echo "$arg" | tr ';' ' '); do
        l=$(basename "$(dirname "$o")")
        echo "$o" >>"$tmp/objs.$l"
    done
done
for l in $layers; do
    [ -f "$tmp/objs.$l" ] || continue
    xargs nm --defined-only -g <"$tmp/objs.$l" 2>/dev/null |
        awk 'NF == 3 && $3 ~ /^gad/ {print $3}' | sort -u >"$tmp/def.$l"
done
bad=0
for l in $layers; do
    [ -f "$tmp/objs.$l" ] || continue
    : >"$tmp/ok"
    for a in $(allowed "$l"); do
        [ -f "$tmp/def.$a" ] && cat "$tmp/def.$a" >>"$tmp/ok"
    done
    sort -u -o "$tmp/ok" "$tmp/ok"
    while read -r o; do
        nm -u "$o" | awk '$2 ~ /^gad/ {print $2}' | sort -u >"$tmp/use"
        for s in $(comm -23 "$tmp/use" "$tmp/ok"); do
            from=$(grep -lx "$s" "$tmp"/def.* 2>/dev/null | sed 's/.*def\.//' | head -1)
            echo "up: src/$l/$(basename "$o" .o) uses $s from src/${from:-?}"
            bad=1
        done
    done <"$tmp/objs.$l"
    # includes of headers from folders above
    for f in "$src/$l"/*.c "$src/$l"/*.h; do
        [ -f "$f" ] || continue
        for inc in $(sed -n 's/^#include "\([a-z]*\)\/[^"]*".*/\1/p' "$f" | sort -u); do
            case " $(allowed "$l") " in
            *" $inc "*) ;;
            *) echo "up: src/$l/$(basename "$f") includes a header of src/$inc"; bad=1 ;;
            esac
        done
    done
done
[ $bad -eq 0 ] && echo "layers: every arrow points down"
exit $bad
