#!/bin/sh
# select.sh [ROUNDS]: select-bench (gad) and select_ref.py (PyTorch) in
# alternation, 2 threads each, then each case's median over the rounds and
# gad's time over torch's. Needs a Release build (build/bench/select-bench)
# and a PyTorch (PYTHON, default /work/venv/bin/python, else python3).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../build/bench/select-bench}
py=${PYTHON:-/work/venv/bin/python}
[ -x "$py" ] || py=python3
rounds=${1:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
export GAD_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
i=0
while [ $i -lt "$rounds" ]; do
    "$bin" >>"$out"
    "$py" "$here/select_ref.py" >>"$out"
    i=$((i + 1))
done
"$py" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])
print("%-14s %10s %10s %7s" % ("case", "gad us", "torch us", "ratio"))
for c in cases:
    med = {}
    for impl in ("gad", "torch"):
        v = [r["median_us"] for r in rows if r["case"] == c and r["impl"] == impl]
        med[impl] = statistics.median(v)
    print("%-14s %10.1f %10.1f %7.2f" % (c, med["gad"], med["torch"], med["gad"] / med["torch"]))
PY
