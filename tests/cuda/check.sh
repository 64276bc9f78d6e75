#!/usr/bin/env bash
# tests/cuda/check.sh: the CUDA back end's check on a GPU machine, in one
# run of at most 8 minutes on one H200: builds gad with CUDA from this tree
# into its own build dir (build-cuda-check, or $1), runs tests/cuda/test_cuda
# (every op of the registry on the GPU against the CPU, strided, broadcast
# and empty inputs, gradcheck and gradgradcheck there, two runs bitwise
# equal, out of memory and a bad index reported and recovered from, GEMM
# timing beside cuBLAS) and prints, as its last line, "N passed, N failed"
# (N passed: the tests that printed ok; failed: those that printed FAIL, or
# 1 when the build failed or the program ended without its summary).
# Set GAD_CHECK_SUITE=1 to run the whole ctest suite of that build too.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-cuda-check}
jobs=$(nproc 2>/dev/null || echo 4)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

fail_line() { echo "$*"; echo "0 passed, 1 failed"; exit 1; }

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader || echo "(no nvidia-smi)"
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || fail_line "check.sh: no nvcc (looked for $nvcc)"

echo "== configure and build ($build, $jobs jobs)"
t0=$(date +%s)
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DGAD_CUDA=ON -DGAD_WERROR=OFF \
     -DCMAKE_CUDA_COMPILER="$nvcc" >"$log" 2>&1; then
  tail -n 40 "$log"
  fail_line "check.sh: configure failed"
fi
if ! cmake --build "$build" -j "$jobs" --target test_cuda >"$log" 2>&1; then
  grep -E "error|warning" -A3 "$log" | head -n 60
  tail -n 20 "$log"
  fail_line "check.sh: build failed"
fi
echo "built in $(( $(date +%s) - t0 )) s"

echo "== test_cuda"
timeout 420 "$build/tests/test_cuda" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
passed=$(grep -c '^ok  ' "$log")
failed=$(grep -c '^FAIL ' "$log")
if [ "$rc" -eq 77 ]; then
  echo "check.sh: test_cuda found no CUDA device"
  failed=$((failed + 1))
elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "check.sh: test_cuda ended with status $rc"
  failed=1
fi

if [ "${GAD_CHECK_SUITE:-0}" = 1 ]; then
  echo "== the whole suite with CUDA"
  if cmake --build "$build" -j "$jobs" >"$log" 2>&1 &&
     ctest --test-dir "$build" -j "$jobs" --output-on-failure >"$log" 2>&1; then
    passed=$((passed + 1))
  else
    tail -n 40 "$log"
    failed=$((failed + 1))
  fi
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
