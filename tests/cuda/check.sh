#!/usr/bin/env bash
# tests/cuda/check.sh: the CUDA back end's check on a GPU machine, in one
# run of at most 10 minutes on one H200: builds gad with CUDA from this tree
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
# Then helix_lm on the GPU (--device cuda): its self-test, and 100 steps
# against the CPU, twice, resumed, and its checkpoint evaluated on the CPU;
# and tests/test_helix_lm_dist.sh on 2 ranks sharing the GPU.
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

echo "== helix_lm on the GPU"
# --quick on the GPU (train, stop, resume bit for bit, eval, carried-state
# sampling, weight decay); then 100 steps of one configuration on the CPU
# and twice on the GPU: the GPU's losses within 1e-4 (relative) of the
# CPU's step by step, the two GPU runs bitwise equal, a run stopped at
# step 50 and resumed on the GPU bitwise equal to the uninterrupted one,
# and the GPU's checkpoint evaluated on the CPU within 1e-4 of the GPU.
if [ "$only_dist" = 1 ]; then
  echo "check.sh: skipped (GAD_CHECK_DIST_ONLY=1)"
elif ! cmake --build "$build" -j "$jobs" --target helix_lm >"$log" 2>&1; then
  grep -E "error|warning" -A3 "$log" | head -n 40
  echo "FAIL helix_lm: did not build"
  failed=$((failed + 1))
else
  hx=$build/examples/helix_lm
  hd=$(mktemp -d)
  hx_ok() { echo "ok   helix_lm: $1"; passed=$((passed + 1)); }
  hx_fail() { tail -n 20 "$log"; echo "FAIL helix_lm: $1"; failed=$((failed + 1)); }
  common=(--d 64 --layers 2 --batch 8 --seq 64 --steps 100 --warmup 10 --eval-every 50
          --ckpt-every 0 --bytes 0 --threads 4 --plain)
  # the losses, learning rates and norms of metrics.csv (no clock columns)
  figures() { cut -d, -f1,4-7 "$1/metrics.csv"; }
  if timeout 180 "$hx" --quick --device cuda >"$log" 2>&1; then hx_ok "--quick on cuda"
  else hx_fail "--quick on cuda"; fi
  if timeout 120 "$hx" train --out "$hd/cpu" "${common[@]}" >"$log" 2>&1 &&
     timeout 120 "$hx" train --out "$hd/gpu" --device cuda "${common[@]}" >"$log" 2>&1 &&
     timeout 120 "$hx" train --out "$hd/gpu2" --device cuda "${common[@]}" >"$log" 2>&1; then
    if paste -d, <(figures "$hd/cpu") <(figures "$hd/gpu") | awk -F, '
         NR > 1 { for (i = 2; i <= 5; i++) if ($i != "" && ($(i + 5) == "" ||
                  ($i - $(i + 5)) ^ 2 > (1e-4 * $i) ^ 2)) { print "step " $1 ": " $0; bad = 1 } }
         END { exit bad }' >"$log"; then hx_ok "100 steps on cuda within 1e-4 of the CPU's"
    else hx_fail "100 steps on cuda against the CPU's"; fi
    if cmp -s <(figures "$hd/gpu") <(figures "$hd/gpu2"); then hx_ok "two cuda runs bitwise equal"
    else diff <(figures "$hd/gpu") <(figures "$hd/gpu2") | head >"$log"; hx_fail "two cuda runs"; fi
    if timeout 120 "$hx" train --out "$hd/res" --device cuda "${common[@]}" --stop-at 50 \
         >"$log" 2>&1 &&
       timeout 120 "$hx" train --out "$hd/res" --device cuda --resume "${common[@]}" \
         >"$log" 2>&1 &&
       cmp -s <(figures "$hd/gpu") <(figures "$hd/res"); then hx_ok "resumed on cuda bit for bit"
    else hx_fail "resumed on cuda"; fi
    eg=$(timeout 60 "$hx" eval --out "$hd/gpu" --device cuda 2>&1 | grep -o 'loss [0-9.]*')
    ec=$(timeout 60 "$hx" eval --out "$hd/gpu" --device cpu 2>&1 | grep -o 'loss [0-9.]*')
    if [ -n "$eg" ] && [ -n "$ec" ] &&
       awk -v a="${eg#loss }" -v b="${ec#loss }" 'BEGIN { exit !((a - b) ^ 2 <= (1e-4 * a) ^ 2) }'
    then hx_ok "the cuda checkpoint on the CPU ($ec; cuda $eg)"
    else echo "cuda: $eg, cpu: $ec" >"$log"; hx_fail "the cuda checkpoint on the CPU"; fi
  else
    hx_fail "100 steps (cpu, cuda, cuda)"
  fi
  rm -rf "$hd"
fi

echo "== helix_lm on 2 ranks sharing the GPU (host copies)"
# tests/test_helix_lm_dist.sh with --device cuda: 2 ranks give the losses of
# one process within 1e-5, two runs and a resume bit for bit, the faults
if [ "$only_dist" = 1 ] || [ -z "$mpirun" ] ||
   ! grep -q test_dist_np2 "$build/tests/CTestTestfile.cmake" 2>/dev/null; then
  echo "check.sh: skipped (no MPI in this build, no mpirun, or GAD_CHECK_DIST_ONLY=1)"
elif GAD_DIST_NCCL=0 HELIX_EXTRA="--device cuda" timeout 300 \
     sh tests/test_helix_lm_dist.sh "$mpirun" "$build/examples/helix_lm" \
     "$(mktemp -d)" >"$log" 2>&1; then
  echo "ok   helix_lm: 2 ranks on cuda (host copies) as one process"
  passed=$((passed + 1))
else
  tail -n 20 "$log"
  echo "FAIL helix_lm: 2 ranks on cuda"
  failed=$((failed + 1))
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
