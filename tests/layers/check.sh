#!/bin/sh
# check.sh [OBJECT...]: every arrow between gad's layers is one that the
# table below allows (DESIGN §1). Two kinds of arrow are read:
# - symbols: for each object of the library (ctest passes the gad_obj
#   target's objects, .../src/<folder>/<file>.o, as one ;-separated list),
#   every symbol it uses that an object of the library defines must be
#   defined in its own folder or in one the table allows;
# - includes: every #include "..." of every source of src/ (.c, .h, .cu,
#   .cuh, .def) must name a header of its own folder, of a folder the table
#   allows, or the public one (include/). A bare name is looked up as the
#   compiler does: beside the file, then in src/core, then in include/.
# Exit 1 with a line per wrong arrow, naming it; 0 when there is none.
# GAD_LAYERS_SRC names another tree to read (tests/layers/plant.sh plants
# wrong arrows in a copy).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
src=${GAD_LAYERS_SRC:-$root/src}
inc=$(cd "$src/../include" 2>/dev/null && pwd || echo "$root/include")

# The layers, top to bottom (examples and the tests sit above them all and
# reach gad through include/ only):
#   dist -> optim -> nn -> io -> grad -> ops -> {ad, backend} -> core
#   cpu, cuda -> backend -> core
# A folder may use every folder below it on its own path down: io may call
# the public ops (a load puts tensors on a device); the optimizers take a
# parameter set (optim -> nn); ad and backend do not see each other. The
# back ends implement backend/ using core and backend's shared helpers, and
# no back end sees another.
allowed() {
    case $1 in
    core) echo "core" ;;
    ad) echo "ad core" ;;
    backend) echo "backend core" ;;
    cpu) echo "cpu backend core" ;;
    cuda) echo "cuda backend core" ;;
    ops) echo "ops ad backend core" ;;
    grad) echo "grad ops ad backend core" ;;
    io) echo "io grad ops ad backend core" ;;
    nn) echo "nn io grad ops ad backend core" ;;
    optim) echo "optim nn io grad ops ad backend core" ;;
    dist) echo "dist optim nn io grad ops ad backend core" ;;
    *) echo "" ;;
    esac
}
# The arrows up that the table allows by name, "<folder>/<file> <symbol>":
# the registry is the one place in backend/ that names a back end, each by
# one entry point (the CPU's table, the CUDA driver's descriptor).
exceptions="backend/registry.c gad__cpu_backend
backend/registry.c gad__cuda_driver"
layers="core ad backend cpu cuda ops grad io nn optim dist"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
wrong() {
    echo "wrong arrow $1 -> $2: $3"
    bad=1
}

# ---------------------------------------------------------------- symbols
for arg in "$@"; do
    for o in $(echo "$arg" | tr ';' ' '); do
        l=$(basename "$(dirname "$o")")
        echo "$o" >>"$tmp/objs.$l"
    done
done
: >"$tmp/def.all"
for l in $layers; do
    [ -f "$tmp/objs.$l" ] || continue
    xargs nm --defined-only -g <"$tmp/objs.$l" 2>/dev/null |
        awk 'NF == 3 {print $3}' | sort -u >"$tmp/def.$l"
    cat "$tmp/def.$l" >>"$tmp/def.all"
done
sort -u -o "$tmp/def.all" "$tmp/def.all"
for l in $layers; do
    [ -f "$tmp/objs.$l" ] || continue
    : >"$tmp/ok"
    for a in $(allowed "$l"); do
        [ -f "$tmp/def.$a" ] && cat "$tmp/def.$a" >>"$tmp/ok"
    done
    sort -u -o "$tmp/ok" "$tmp/ok"
    while read -r o; do
        file=$(basename "$o" .o)
        nm -u "$o" | awk '{print $NF}' | sort -u >"$tmp/use"
        # used, defined by the library, not by an allowed folder
        for s in $(comm -12 "$tmp/use" "$tmp/def.all" | comm -23 - "$tmp/ok"); do
            if printf '%s\n' "$exceptions" | grep -qx "$l/$file $s"; then continue; fi
            from=$(grep -lx "$s" "$tmp"/def.* | grep -v 'def\.all$' | sed 's/.*def\.//' | head -1)
            wrong "$l" "$from" "src/$l/$file uses $s (src/$from)"
        done
    done <"$tmp/objs.$l"
done

# ---------------------------------------------------------------- includes
for l in $layers; do
    [ -d "$src/$l" ] || continue
    ok=" $(allowed "$l") "
    for f in "$src/$l"/*.c "$src/$l"/*.h "$src/$l"/*.cu "$src/$l"/*.cuh "$src/$l"/*.def; do
        [ -f "$f" ] || continue
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | sort -u); do
            case $h in
            */*) to=${h%%/*} ;;
            *)
                if [ -f "$src/$l/$h" ]; then to=$l
                elif [ -f "$src/core/$h" ]; then to=core
                else continue # include/ (public) or a system header
                fi ;;
            esac
            [ -d "$src/$to" ] || continue
            case $ok in
            *" $to "*) ;;
            *) wrong "$l" "$to" "src/$l/$(basename "$f") includes \"$h\"" ;;
            esac
        done
    done
done
# a folder of src/ that the table does not know is an arrow nobody checked
for d in "$src"/*/; do
    d=$(basename "$d")
    case " $layers " in
    *" $d "*) ;;
    *) echo "src/$d is not in the table of tests/layers/check.sh"; bad=1 ;;
    esac
done
[ $bad -eq 0 ] && echo "layers: every arrow is one the table allows"
exit $bad
