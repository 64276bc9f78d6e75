#!/usr/bin/env bash
# dist_step.sh [BUILD_DIR] [STEPS]: one helix_lm training step (the default
# model: D=256, 4 blocks, global batch 16 x 128 bytes, AdamW) on this machine
# as 1 rank x 2 threads and as 2 ranks x 1 thread (mpirun), the time spent
# in collectives per step and its share; the gradient all-reduce alone
# (dist-allreduce, every rank arriving together); then an estimate of the
# step time at 8, 64 and 512 ranks over common links from the measured
# message size, with the ring all-reduce cost
#     t = 2 (p-1)/p * bytes / bandwidth + 2 (p-1) * latency
# (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters
# of workstations", JPDC 2009). Nothing here is asserted by the tests.
# COMPUTE_MS=ms takes that compute time for the estimate instead of the
# measured one (a figure from a quieter run of the same machine, say).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
steps=${2:-40}
bin=$build/examples/helix_lm
ar=$build/bench/dist-allreduce
[ -x "$bin" ] && [ -x "$ar" ] || { echo "build first: cmake --build $build" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "no mpirun (apt-get install openmpi-bin)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
conf="--steps $steps --warmup 10 --eval-every 0 --ckpt-every 0 --val-windows 8 --bytes 0 --plain"

# the mean step time from metrics.csv, skipping the first 5 steps (warm-up
# of the caches): (seconds[last] - seconds[5]) / (steps - 5), in ms
step_ms() {
    awk -F, -v k="$steps" 'NR > 1 && $1 == 5 { a = $2 } NR > 1 && $1 == k { b = $2 }
        END { printf "%.1f", 1e3 * (b - a) / (k - 5) }' "$1/metrics.csv"
}

echo "helix_lm, $steps steps of the default model (global batch 16 x 128 bytes):"
"$bin" train $conf --threads 2 --out "$work/one" > "$work/one.log" 2>&1
t1=$(step_ms "$work/one")
echo "  1 rank  x 2 threads: $t1 ms a step"
mpirun -np 2 "$bin" train $conf --threads 1 --out "$work/two" > "$work/two.log" 2>&1
t2=$(step_ms "$work/two")
line=$(grep '^distributed: 2 ranks;' "$work/two.log")
comm=$(echo "$line" | sed -n 's/.*(\([0-9.]*\) ms a step.*/\1/p')
bytes=$(echo "$line" | sed -n 's/.*, \([0-9]*\) bytes reduced a step.*/\1/p')
echo "  2 ranks x 1 thread : $t2 ms a step; in collectives $comm ms a step" \
     "($(awk -v c="$comm" -v t="$t2" 'BEGIN { printf "%.1f", 100 * c / t }')% of the step," \
     "waiting for the other rank included), $bytes bytes reduced a step"
floats=$((bytes / 4))
pure=$(mpirun -np 2 "$ar" "$floats" 20 | sed -n 's/.*mean \([0-9.]*\) ms, best \([0-9.]*\) ms.*/\1 \2/p')
read -r pure_mean pure_best <<< "$pure"
echo "  the gradient all-reduce alone, 2 ranks arriving together ($bytes bytes, shared memory):" \
     "mean $pure_mean ms, best $pure_best ms"
echo "  overlapping it with the backward pass could save at most the all-reduce itself:" \
     "$pure_best..$pure_mean ms of a $t2 ms step" \
     "($(awk -v c="$pure_mean" -v t="$t2" 'BEGIN { printf "%.1f", 100 * c / t }')% at most)"

echo
echo "ESTIMATE (a model, not a measurement): the step at p ranks, each with the per-rank"
echo "batch above (16/2 = 8 rows) and the 2-rank compute time (${COMPUTE_MS:-$t2 ms less $comm} ms),"
echo "the $bytes-byte gradient reduced by a ring all-reduce, no overlap:"
awk -v bytes="$bytes" -v t2="$t2" -v comm="$comm" -v override="${COMPUTE_MS:-}" 'BEGIN {
    compute = override != "" ? override + 0 : t2 - comm
    n = split("10GbE 100GbE IB-HDR NVLink", name, " ")
    split("1.25e9 12.5e9 25e9 300e9", bw, " ")     # bytes/s, one direction
    split("20e-6 5e-6 2e-6 3e-6", lat, " ")          # seconds a message
    printf "  %-8s %7s  %-20s %-20s %-20s\n", "link", "GB/s", "p=8", "p=64", "p=512"
    for (i = 1; i <= n; i++) {
        printf "  %-8s %7.2f ", name[i], bw[i] / 1e9
        split("8 64 512", ps, " ")
        for (j = 1; j <= 3; j++) {
            p = ps[j]
            t = 1e3 * (2 * (p - 1) / p * bytes / bw[i] + 2 * (p - 1) * lat[i])
            printf " %7.1f ms (%4.1f%% comm)", compute + t, 100 * t / (compute + t)
        }
        printf "\n"
    }
    printf "  (compute %.1f ms a step; the rest is the all-reduce: %s)\n", compute,
           "its bandwidth term stays under 2 x bytes / bandwidth, its latency term grows with p"
}'
