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

echo "test_dist_faults: ok"
