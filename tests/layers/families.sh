#!/bin/sh
# families.sh CC OBJECTS: the family column of src/ops/ops.def is true.
# Every row X(ID, name, family, pwords), elementwise.def's included, says
# which file of src/ops holds the op; that file's object must define the
# op's VJP and gradcheck sample (gad__vjp_<name>, gad__sample_<name>). A
# row NOGRAD(ID, name, family), an op without a gradient, or
# COMPOSITE(ID, name, family), an op made of others, needs the sample only.
# ctest passes the gad_obj target's objects as one ;-separated list.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for o in $(echo "$2" | tr ';' ' '); do
    case $o in */src/ops/*) echo "$o" ;; esac
done >"$tmp/objs"
# the rows, as the preprocessor sees them: "name family vjp|nograd|composite"
printf '#define X(ID, name, family, pwords) ROW name family vjp\n#define NOGRAD(ID, name, family) ROW name family nograd\n#define COMPOSITE(ID, name, family) ROW name family composite\n#include "ops/ops.def"\n' >"$tmp/rows.c"
"$cc" -E -P -I "$root/src" -I "$root/src/core" -I "$root/include" "$tmp/rows.c" |
    awk '$1 == "ROW" {print $2, $3, $4}' >"$tmp/rows"
[ -s "$tmp/rows" ] || { echo "families: no rows read from src/ops/ops.def"; exit 1; }
bad=0
while read -r name family kind; do
    o=$(grep "/src/ops/$family\.c\.o$" "$tmp/objs" || true)
    if [ -z "$o" ]; then
        echo "ops.def: $name's family $family names no file src/ops/$family.c"
        bad=1
        continue
    fi
    syms="gad__sample_$name"
    [ "$kind" = vjp ] && syms="gad__vjp_$name $syms"
    for s in $syms; do
        nm --defined-only -g "$o" | awk '{print $3}' | grep -qx "$s" ||
            { echo "ops.def: $name's family is $family, but src/ops/$family.c does not define $s"; bad=1; }
    done
done <"$tmp/rows"
[ $bad -eq 0 ] && echo "families: $(wc -l <"$tmp/rows") ops, each in the file its row names"
exit $bad
