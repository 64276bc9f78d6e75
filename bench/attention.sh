#!/bin/sh
# attention.sh [ROUNDS [T...]]: the attention benchmark of issue 27:
# scaled_dot_product_attention forward + backward, B=8 H=8 d=64, causal, f32,
# 2 threads, gad (build/bench/attn-bench) and PyTorch (bench/attention.py,
# with /work/venv/bin/python or $PYTHON) alternated run by run, ROUNDS
# rounds (3) of 5 timed calls each; prints every run's JSON line, then the
# medians over the rounds and gad/torch.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${ATTN_BENCH:-$here/../build/bench/attn-bench}
py=${PYTHON:-/work/venv/bin/python}
rounds=${1:-3}
[ $# -gt 0 ] && shift
sizes=${*:-512 2048}
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for T in $sizes; do
    r=0
    while [ $r -lt "$rounds" ]; do
        "$bin" "$T" 8 8 64 5 2 | tee -a "$tmp"
        "$py" "$here/attention.py" "$T" 8 8 64 5 2 | tee -a "$tmp"
        r=$((r + 1))
    done
done
"$py" - "$tmp" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for T in sorted({r["T"] for r in rows}):
    g = [r for r in rows if r["T"] == T and r["impl"] == "gad"]
    t = [r for r in rows if r["T"] == T and r["impl"] != "gad"]
    gm = statistics.median(r["median_s"] for r in g)
    tm = statistics.median(r["median_s"] for r in t)
    ga = statistics.median(r["extra_alloc_MiB"] for r in g)
    gr = statistics.median(r["extra_rss_MiB"] for r in g)
    tr = statistics.median(r["extra_rss_MiB"] for r in t)
    print(f"T={T}: gad {gm:.3f} s, torch {tm:.3f} s, gad/torch {gm / tm:.2f} (target <= 0.8); "
          f"extra memory: gad {ga:.2f} MiB (allocator) / {gr:.2f} MiB (peak RSS), "
          f"torch {tr:.2f} MiB (peak RSS), q/k/v/out each {g[0]['qkvo_MiB']:.0f} MiB")
PY
