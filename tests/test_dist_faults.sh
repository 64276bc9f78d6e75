#!/bin/sh
# test_dist_faults.sh MPIEXEC TEST_DIST: no hang when a rank is lost.
#
#   1. A rank that hangs (sleeps instead of joining an all-reduce): the
#      others fail with a comm error naming it within the deadline
#      (GAD_DIST_TIMEOUT=3 s here) plus the grace period, and mpirun ends.
#   2. A rank killed with SIGKILL, under a plain mpirun: the launcher ends
#      the job at once, non-zero, naming the rank.
#   3. The same under OpenMPI's --enable-recovery, where the launcher lets
#      the others run on: the library's deadline (5 s) stops them with a
#      comm error naming the dead rank, well inside the bound.
#   4. gad_dist_init after gad_dist_finalize: an unsupported error on every
#      rank, no abort.
#   5-7. A rank's local error, a transport failing half-way through a
#      collective, ranks with different bucket sizes: tensors untouched,
#      and a comm error breaks the world on every rank.
# Each run is bounded by `timeout` so that a hang fails the test.
set -u
MPIEXEC=${1:?usage: test_dist_faults.sh MPIEXEC TEST_DIST}
BIN=${2:?usage: test_dist_faults.sh MPIEXEC TEST_DIST}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() {
    cat "$out"
    echo "FAIL: $*" >&2
    exit 1
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# 1. a rank that hangs
t0=$(now)
GAD_DIST_TIMEOUT=3 timeout 60 "$MPIEXEC" -np 2 -x GAD_DIST_TIMEOUT "$BIN" --hang 40 >"$out" 2>&1
rc=$?
el=$(secs "$t0" "$(now)")
[ $rc -ne 0 ] || fail "mpirun exited 0 with a hanging rank"
[ $rc -ne 124 ] || fail "the hang was not detected within 60 s"
grep -q "rank 0: status comm after" "$out" || fail "rank 0 did not report a comm error"
grep -q "no answer from rank(s) 1" "$out" || fail "the error does not name rank 1"
grep -q "rank 0: fault detected as expected" "$out" || fail "rank 0's checks failed"
echo "hang: rank 0 stopped after $el s (deadline 3 s): $(grep 'rank 0: status' "$out" | cut -c1-160)"

# 2. SIGKILL, plain mpirun: the launcher ends the job
t0=$(now)
timeout 60 "$MPIEXEC" -np 3 "$BIN" --kill >"$out" 2>&1
rc=$?
el=$(secs "$t0" "$(now)")
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "mpirun exited $rc after a rank was killed"
grep -q "rank 2 .*signal 9" "$out" || fail "mpirun did not name the killed rank"
echo "SIGKILL, plain mpirun: the job ended in $el s with status $rc, naming rank 2"

# 3. SIGKILL, the launcher lets the others run: gad's deadline stops them
if "$MPIEXEC" -np 1 --enable-recovery true >/dev/null 2>&1; then
    t0=$(now)
    GAD_DIST_TIMEOUT=5 timeout 60 "$MPIEXEC" -np 3 --enable-recovery -x GAD_DIST_TIMEOUT \
        "$BIN" --kill >"$out" 2>&1
    rc=$?
    el=$(secs "$t0" "$(now)")
    [ $rc -ne 124 ] || fail "the dead rank was not detected within 60 s"
    for r in 0 1; do
        grep -q "rank $r: status comm after .*no answer from rank(s) 2" "$out" ||
            fail "rank $r did not report a comm error naming rank 2"
        grep -q "rank $r: fault detected as expected" "$out" || fail "rank $r's checks failed"
    done
    echo "SIGKILL, --enable-recovery: ranks 0 and 1 stopped with a comm error in $el s (deadline 5 s):"
    grep 'rank 0: status' "$out" | cut -c1-200
else
    echo "SIGKILL with recovery: skipped ($MPIEXEC has no --enable-recovery)"
fi
# 4. gad_dist_init after gad_dist_finalize: an error on every rank (MPI
#    cannot be initialized twice), not OpenMPI's abort
timeout 60 "$MPIEXEC" -np 2 "$BIN" --reinit >"$out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "init after finalize: mpirun exited $rc"
for r in 0 1; do
    grep -q "rank $r: .*refused as expected" "$out" || fail "rank $r: init after finalize was not refused"
done
echo "init after finalize: $(grep 'rank 0: unsupported' "$out" | cut -c1-160)"

# 5. one rank fails before a collective, the other gets a comm error: the
#    world is broken on both, every later collective fails at once
timeout 60 "$MPIEXEC" -np 2 "$BIN" --broken local >"$out" 2>&1
for r in 0 1; do
    grep -q "rank $r: world broken as expected" "$out" || fail "rank $r: the world was not broken after a local error"
done
echo "a local error: $(grep 'rank 0: comm' "$out" | cut -c1-150)"

# 6. the transport fails half-way through an all-reduce of several buckets
#    (injected): the tensors keep their old values, the world is broken
GAD_DIST_BUCKET_BYTES=4096 timeout 60 "$MPIEXEC" -np 2 -x GAD_DIST_BUCKET_BYTES "$BIN" \
    --broken midway >"$out" 2>&1
for r in 0 1; do
    grep -q "rank $r: 0 elements changed" "$out" || fail "rank $r: a failed all-reduce changed the tensors"
    grep -q "rank $r: world broken as expected" "$out" || fail "rank $r: the world was not broken after a failed all-reduce"
done
echo "a failure half-way: the tensors unchanged on every rank"

# 7. different GAD_DIST_BUCKET_BYTES (the wire layout): refused before any
#    data move, on every rank
timeout 60 "$MPIEXEC" -np 2 "$BIN" --bucket-mismatch >"$out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "bucket mismatch: mpirun exited $rc"
for r in 0 1; do
    grep -q "rank $r: bucket mismatch refused as expected" "$out" || fail "rank $r: a bucket mismatch was not refused"
done
echo "bucket mismatch: $(grep 'rank 0: shape' "$out" | cut -c1-160)"

echo "test_dist_faults: ok"
