#!/usr/bin/env bash
# tests/cuda/check.sh: the CUDA back end's check on a GPU machine, in one
# run of at most 9 minutes on one H200: builds gad with CUDA from this tree
# into its own build dir (build-cuda-check, or $1), runs tests/cuda/test_cuda
# (every op of the registry on the GPU against the CPU, strided, broadcast
# and empty inputs, gradcheck and gradgradcheck there, two runs bitwise
# equal, out of memory and a bad index reported and recovered from, GEMM
# timing beside cuBLAS) and prints, as its last line, "N passed, N failed"
# (N passed: the tests that printed ok; failed: those that printed FAIL, or
# 1 when the build failed or the program ended without its summary).
# Then the distributed API with CUDA tensors (tests/test_dist, whose every
# rank checks the collectives against the single-process results it
# computes itself): one process; two ranks through host copies
# (GAD_DIST_NCCL=0); and two ranks over NCCL (each rank on GPU rank mod
# count). NCCL refuses two ranks on one GPU ("Duplicate GPU detected",
# ncclInvalidUsage), so on a machine with one GPU the NCCL run must fail
# cleanly instead: a comm error naming the op, at once, no hang (that
# counts as passed, and the line says the full check needs two GPUs).
# Each dist check counts as one test. They need MPI in the build and
# mpirun; without them they are skipped (and say so).
# Set GAD_CHECK_SUITE=1 to run the whole ctest suite of that build too, and
# GAD_CHECK_DIST_ONLY=1 to run the dist checks alone (no test_cuda).
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
only_dist=${GAD_CHECK_DIST_ONLY:-0}
target=test_cuda
[ "$only_dist" = 1 ] && target=test_dist
if ! cmake --build "$build" -j "$jobs" --target $target >"$log" 2>&1; then
  grep -E "error|warning" -A3 "$log" | head -n 60
  tail -n 20 "$log"
  fail_line "check.sh: build failed"
fi
echo "built in $(( $(date +%s) - t0 )) s"

passed=0 failed=0 rc=0
if [ "$only_dist" != 1 ]; then
  echo "== test_cuda"
  timeout 420 "$build/tests/test_cuda" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  passed=$(grep -c '^ok  ' "$log")
  failed=$(grep -c '^FAIL ' "$log")
fi
if [ "$only_dist" = 1 ]; then
  :
elif [ "$rc" -eq 77 ]; then
  echo "check.sh: test_cuda found no CUDA device"
  failed=$((failed + 1))
elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "check.sh: test_cuda ended with status $rc"
  failed=1
fi

echo "== test_dist with CUDA tensors"
mpirun=$(command -v mpirun || command -v mpiexec || true)
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
if ! grep -q test_dist_np2 "$build/tests/CTestTestfile.cmake" 2>/dev/null || [ -z "$mpirun" ]; then
  echo "check.sh: skipped (this build has no MPI, or there is no mpirun)"
elif ! cmake --build "$build" -j "$jobs" --target test_dist >"$log" 2>&1; then
  grep -E "error|warning" -A3 "$log" | head -n 40
  echo "FAIL dist: test_dist did not build"
  failed=$((failed + 1))
else
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1 GAD_DIST_TIMEOUT=60
  # name, expected transport, command
  dist_run() {
    local name=$1 want=$2
    shift 2
    timeout 150 "$@" >"$log" 2>&1
    local rc=$?
    if [ "$rc" -eq 0 ] && grep -q "($want)" "$log" && grep -q "cuda:" "$log" &&
       grep -q " checks, 0 failed" "$log"; then
      echo "ok   dist: $name ($(grep -m1 '^test_dist:' "$log"))"
      passed=$((passed + 1))
      return 0
    fi
    return 1
  }
  dist_fail() {
    tail -n 30 "$log"
    echo "FAIL dist: $1"
    failed=$((failed + 1))
  }
  dist_run "one process" none "$build/tests/test_dist" || dist_fail "one process"
  dist_run "2 ranks through host copies" mpi \
    env GAD_DIST_NCCL=0 "$mpirun" -n 2 "$build/tests/test_dist" ||
    dist_fail "2 ranks through host copies"
  if dist_run "2 ranks over NCCL ($ngpu GPUs)" mpi+nccl "$mpirun" -n 2 "$build/tests/test_dist"; then
    :
  elif [ "$ngpu" -lt 2 ] && grep -q "(mpi+nccl)" "$log" &&
       grep -Eq "comm error in dist_allreduce: ncclCommInitRankConfig (failed|timed out)" "$log"; then
    grep -m1 "ncclCommInitRankConfig" "$log"
    echo "ok   dist: 2 ranks over NCCL on 1 GPU: refused with a clean comm error, as NCCL" \
         "does (the full NCCL check needs 2 GPUs)"
    passed=$((passed + 1))
  else
    dist_fail "2 ranks over NCCL ($ngpu GPUs)"
  fi
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
