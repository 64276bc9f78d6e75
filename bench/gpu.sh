#!/bin/sh
# bench/gpu.sh [BUILD_DIR [ROUNDS]]: gad's GPU workloads beside PyTorch's on
# the same GPU, in one run, and the table of ratios (bench/README.md, "GPU").
# Builds gad-bench with CUDA into BUILD_DIR (default build-bench-cuda;
# configured there, Release, when it has no CMake cache yet), then runs, for
# each of G1-G7 in turn, `gad-bench Gk` and `torch_ref.py Gk`, one process
# each, and then W6 on the CPU (both sides, for G7's GPU/CPU ratio), ROUNDS
# times (default 1), and prints bench/gpu_report.py's table of the medians.
# Figures of gad alone when torch (with CUDA) is not installed.
# Exits 1 when gad-bench measured nothing (no CUDA device, or a build
# without CUDA: gad-bench says which).
#   PYTHON=...            the interpreter for torch_ref.py (default python3)
#   CUDA_VISIBLE_DEVICES  the GPU, for both sides (they use CUDA device 0)
#   PEAK_F32_TFLOPS, PEAK_TF32_TFLOPS  the GPU's peaks (H200: 67 and 495)
#   WORKLOADS             the workloads to run (default "G1 G2 G3 G4 G5 G6 G7 W6")
#   GAD_BENCH_TF32=1      G6 and G7 in TF32 on both sides (metrics "..._tf32")
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-bench-cuda}
rounds=${2:-1}
py=${PYTHON:-python3}
jobs=$(nproc 2>/dev/null || echo 4)

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGAD_CUDA=ON >/dev/null
fi
cmake --build "$build" -j "$jobs" --target gad-bench >/dev/null
bench=$build/bench/gad-bench

command -v nvidia-smi >/dev/null 2>&1 &&
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
echo "gad: $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $bench"
torch_ok=1
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu.sh: $py has no torch with a CUDA device: gad's figures alone" >&2
  torch_ok=0
else
  "$py" -c 'import torch; print("torch %s (CUDA %s) on %s" % (torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0)))'
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
: >"$out/gad.jsonl"
: >"$out/torch.jsonl"
failed=""
# one run: its lines to stderr as they come and to the side's file; a run
# that fails is named at the end, and the others still run
one() { # side file command...
  side=$1 file=$2
  shift 2
  if ! "$@" >"$out/run"; then failed="$failed $side:$w"; fi
  cat "$out/run" >&2
  cat "$out/run" >>"$file"
}
r=1
while [ "$r" -le "$rounds" ]; do
  for w in ${WORKLOADS:-G1 G2 G3 G4 G5 G6 G7 W6}; do
    echo "== round $r: $w" >&2
    one gad "$out/gad.jsonl" "$bench" "$w"
    [ "$torch_ok" = 1 ] && one torch "$out/torch.jsonl" "$py" bench/torch_ref.py "$w"
  done
  r=$((r + 1))
done
echo
rc=0
"$py" bench/gpu_report.py "$out/gad.jsonl" "$out/torch.jsonl" || rc=1
if [ -n "$failed" ]; then
  echo "gpu.sh: these runs failed (their messages are above):$failed" >&2
  rc=1
fi
exit $rc
