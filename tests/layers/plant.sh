#!/bin/sh
# plant.sh CC OBJECTS: check.sh sees wrong arrows. In a copy of src/ it
# plants includes of upper headers (a .c of core, a .cuh of cuda) and, beside
# the library's objects, objects that use upper symbols (backend using an
# optimizer, ad using backend's table: a sibling); check.sh must exit 1 and
# name each arrow, and pass on the tree as it is.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cc=$1
objs=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "plant: $*"
    exit 1
}

sh "$here/check.sh" "$objs" >"$tmp/clean.out" || {
    cat "$tmp/clean.out"
    fail "the tree as it is fails the check"
}

cp -R "$root/src" "$tmp/src"
cp -R "$root/include" "$tmp/include"
echo '#include "optim/optim_int.h"' >>"$tmp/src/core/error.c"
echo '#include "ops/ops_int.h"' >"$tmp/src/cuda/planted.cuh"
mkdir -p "$tmp/obj/src/backend" "$tmp/obj/src/ad"
printf 'int gad_optim_steps(void);\nint planted_a(void) { return gad_optim_steps(); }\n' >"$tmp/a.c"
printf 'extern const void *gad__backends[];\nconst void *planted_b(void) { return gad__backends[0]; }\n' >"$tmp/b.c"
"$cc" -c "$tmp/a.c" -o "$tmp/obj/src/backend/planted.c.o"
"$cc" -c "$tmp/b.c" -o "$tmp/obj/src/ad/planted.c.o"

rc=0
GAD_LAYERS_SRC="$tmp/src" sh "$here/check.sh" "$objs;$tmp/obj/src/backend/planted.c.o;$tmp/obj/src/ad/planted.c.o" >"$tmp/out" || rc=$?
cat "$tmp/out"
[ "$rc" -eq 1 ] || fail "check.sh exited $rc on planted arrows, not 1"
for want in \
    'wrong arrow core -> optim: src/core/error.c includes "optim/optim_int.h"' \
    'wrong arrow cuda -> ops: src/cuda/planted.cuh includes "ops/ops_int.h"' \
    'wrong arrow backend -> optim: src/backend/planted.c uses gad_optim_steps (src/optim)' \
    'wrong arrow ad -> backend: src/ad/planted.c uses gad__backends (src/backend)'; do
    grep -qxF "$want" "$tmp/out" || fail "missing: $want"
done
[ "$(grep -c '^wrong arrow' "$tmp/out")" -eq 4 ] || fail "more wrong arrows than the four planted"
echo "plant: check.sh names the four planted arrows"
