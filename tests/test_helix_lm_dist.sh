#!/bin/sh
# test_helix_lm_dist.sh MPIEXEC BIN SCRATCH: helix_lm trained by several
# ranks (examples/helix_lm/dist.c), a tiny model for 50 steps:
#
#   1. 2 ranks with the global batch 8 give, step by step, the training
#      and validation losses of one process with batch 8, within 1e-5
#      relative (the sums run in another order; nothing else differs), or
#      HELIX_DIST_TOL.
#   2. Two 2-rank runs are the same, bit for bit (every CSV column but the
#      wall clock).
#   3. A 2-rank run stopped at step 20 and resumed with 2 ranks gives the
#      uninterrupted 2-rank run's metrics, bit for bit.
#   4. A resume with another world size is an error naming both sizes; a
#      global batch that the ranks do not divide is an error; ranks started
#      with different models (mpirun's MPMD form) fail with a clear error.
#   5. A rank killed with SIGKILL mid-run: the other stops, non-zero, with a
#      message naming the rank (plain mpirun ends the job; under
#      --enable-recovery gad's deadline, 5 s here, stops it), and the last
#      checkpoint still loads.
# HELIX_EXTRA adds options to every run: tests/cuda/check.sh runs it all
# with --device cuda, the ranks sharing one GPU through host copies.
set -u
MPIEXEC=${1:?usage: test_helix_lm_dist.sh MPIEXEC BIN SCRATCH}
BIN=${2:?usage: test_helix_lm_dist.sh MPIEXEC BIN SCRATCH}
DIR=${3:?usage: test_helix_lm_dist.sh MPIEXEC BIN SCRATCH}
NAME=$(basename "$BIN") # helix_lm, or gpt (the same program with a transformer)
K=50
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rm -rf "$DIR" && mkdir -p "$DIR" || fail "cannot make $DIR"
CONF="--d 32 --layers 2 --batch 8 --seq 32 --steps $K --warmup 10 --lr 1e-2 --min-lr 1e-3
      --eval-every 10 --ckpt-every 10 --val-windows 24 --seed 7 --threads 1 --bytes 0 --plain
      ${HELIX_EXTRA:-}" # HELIX_EXTRA: more options for every run (tests/cuda/check.sh: --device cuda)
run() { # run NAME NP ARGS...: train, the log in DIR/NAME.log
    name=$1 np=$2
    shift 2
    if [ "$np" = 0 ]; then
        timeout 300 "$BIN" train "$@" > "$DIR/$name.log" 2>&1
    else
        timeout 300 "$MPIEXEC" -np "$np" "$BIN" train "$@" > "$DIR/$name.log" 2>&1
    fi
}

# 1. one process against 2 ranks
# shellcheck disable=SC2086
run one 0 $CONF --out "$DIR/one" || { cat "$DIR/one.log"; fail "the 1-process run failed"; }
# shellcheck disable=SC2086
run two 2 $CONF --out "$DIR/two" || { cat "$DIR/two.log"; fail "the 2-rank run failed"; }
grep -q "distributed: 2 ranks" "$DIR/two.log" || fail "the 2-rank run did not run on 2 ranks"
[ "$(grep -c '^step ' "$DIR/two.log")" -gt 0 ] || fail "rank 0 printed no progress"
[ "$(grep -c "$NAME: [0-9]* parameters" "$DIR/two.log")" -eq 1 ] ||
    fail "not rank 0 alone printed the banner"
rows=$(($(wc -l < "$DIR/two/metrics.csv") - 2))
[ "$rows" -eq "$K" ] || fail "the 2-rank metrics.csv has $rows step rows, not $K"
# columns: step,seconds,tokens,train_loss,val_loss,lr,grad_norm,session (w of them)
worst=$(paste -d, "$DIR/one/metrics.csv" "$DIR/two/metrics.csv" | awk -F, '
    NR == 1 { n = NF / 2 }
    NR > 1 {
        if ($1 != $(1 + n) || $3 != $(3 + n)) { print "row " NR ": steps or tokens differ"; exit }
        for (c = 4; c <= 5; c++) {
            a = $c; b = $(c + n)
            if ((a == "") != (b == "")) { print "row " NR ": a loss is missing"; exit }
            if (a == "") continue
            r = (a - b) / a; if (r < 0) r = -r
            if (r > w) w = r
        }
    }
    END { if (w == "") w = 0; printf "%.3g\n", w }')
case $worst in
row*) fail "1 process vs 2 ranks: $worst" ;;
esac
TOL=${HELIX_DIST_TOL:-1e-5} # tests/cuda/check.sh sets the GPU's (its comment says why)
awk -v w="$worst" -v t="$TOL" 'BEGIN { exit !(w <= t) }' ||
    fail "the 2-rank losses differ from the 1-process ones by $worst relative (> $TOL)"
echo "2 ranks vs 1 process, global batch 8, $K steps: losses within $worst relative"

# 2. the same 2-rank run again
# shellcheck disable=SC2086
run two_b 2 $CONF --out "$DIR/two_b" || { cat "$DIR/two_b.log"; fail "the second 2-rank run failed"; }
cut -d, -f1,3-7 "$DIR/two/metrics.csv" > "$DIR/two.cols"
cut -d, -f1,3-7 "$DIR/two_b/metrics.csv" > "$DIR/two_b.cols"
cmp -s "$DIR/two.cols" "$DIR/two_b.cols" || {
    diff "$DIR/two.cols" "$DIR/two_b.cols" | head
    fail "two 2-rank runs differ"
}
cmp -s "$DIR/two/checkpoint.safetensors" "$DIR/two_b/checkpoint.safetensors" ||
    echo "note: the checkpoints differ (their run.seconds do)"
echo "two 2-rank runs: the same metrics, bit for bit"

# 3. stopped at step 20, resumed with 2 ranks
# shellcheck disable=SC2086
run part1 2 $CONF --out "$DIR/part" --stop-at 20 || { cat "$DIR/part1.log"; fail "the run to stop failed"; }
grep -q "stopped at step 20" "$DIR/part1.log" || fail "the run did not stop at step 20"
run part2 2 --out "$DIR/part" --resume --threads 1 --bytes 0 --plain ||
    { cat "$DIR/part2.log"; fail "the 2-rank resume failed"; }
cut -d, -f1,3-7 "$DIR/part/metrics.csv" > "$DIR/part.cols"
cmp -s "$DIR/two.cols" "$DIR/part.cols" || {
    diff "$DIR/two.cols" "$DIR/part.cols" | head
    fail "the resumed 2-rank run differs from the uninterrupted one"
}
echo "2 ranks stopped at step 20 and resumed: the uninterrupted run's metrics, bit for bit"

# 4. other world sizes
run part3 0 --out "$DIR/part" --resume --steps 60 --threads 1 --bytes 0 &&
    fail "a 1-process resume of a 2-rank checkpoint succeeded"
grep -q "trained on 2 ranks, this run has 1" "$DIR/part3.log" ||
    { cat "$DIR/part3.log"; fail "no message naming both world sizes"; }
run part4 3 --out "$DIR/part" --resume --steps 60 --threads 1 --bytes 0 &&
    fail "a 3-rank resume of a 2-rank checkpoint succeeded"
grep -q "trained on 2 ranks, this run has 3" "$DIR/part4.log" ||
    { cat "$DIR/part4.log"; fail "no message naming both world sizes (3 ranks)"; }
# shellcheck disable=SC2086
run odd 3 $CONF --out "$DIR/odd" && fail "a batch of 8 over 3 ranks succeeded"
grep -q "batch 8 cannot be split over 3 ranks" "$DIR/odd.log" ||
    { cat "$DIR/odd.log"; fail "no message for a batch the ranks do not divide"; }
echo "resume on 1 or 3 ranks of a 2-rank run, batch 8 on 3 ranks: errors naming the sizes"
# a rank with another model (MPMD: --d 32 on rank 0, --d 48 on rank 1)
MM="--layers 2 --batch 8 --seq 32 --steps 5 --val-windows 8 --threads 1 --bytes 0 --plain"
# shellcheck disable=SC2086
timeout 120 "$MPIEXEC" -np 1 "$BIN" train --d 32 $MM --out "$DIR/mm" : \
    -np 1 "$BIN" train --d 48 $MM --out "$DIR/mm" > "$DIR/mm.log" 2>&1
[ $? -ne 124 ] || fail "ranks with different models hung"
for r in "$NAME:" "$NAME\[rank 1\]:"; do
    grep -q "^$r cannot broadcast the parameters: shape error in dist_broadcast: the ranks disagree" \
        "$DIR/mm.log" || { cat "$DIR/mm.log"; fail "no clear error from $r for a different model"; }
done
echo "a rank with another model (--d 48 against 32): a shape error on both ranks, no hang"

# 5. a rank killed with SIGKILL mid-run
kill_run() { # kill_run NAME EXTRA_MPIEXEC_FLAGS...
    name=$1
    shift
    rm -f "$DIR"/pid.* "$DIR"/rc.*
    # shellcheck disable=SC2086,SC2016
    GAD_DIST_TIMEOUT=5 timeout 120 "$MPIEXEC" -np 2 "$@" -x GAD_DIST_TIMEOUT sh -c '
        "$0" train "$@" & echo $! > "'"$DIR"'/pid.$OMPI_COMM_WORLD_RANK"
        wait $!; echo $? > "'"$DIR"'/rc.$OMPI_COMM_WORLD_RANK"' "$BIN" \
        $CONF --steps 100000 --ckpt-every 5 --eval-every 0 --out "$DIR/$name" \
        > "$DIR/$name.log" 2>&1 &
    mp=$!
    i=0
    while [ ! -s "$DIR/$name/metrics.csv" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    [ -s "$DIR/pid.1" ] || fail "$name: rank 1 did not start"
    t0=$(date +%s)
    kill -9 "$(cat "$DIR/pid.1")"
    wait $mp
    mrc=$?
    el=$(($(date +%s) - t0))
    [ $mrc -ne 124 ] || fail "$name: the run did not stop within 120 s"
    [ $el -le 30 ] || fail "$name: the other rank took $el s to stop"
}
kill_run killed
grep -q "process rank 1 " "$DIR/killed.log" || { cat "$DIR/killed.log"; fail "mpirun did not name the killed rank"; }
[ "$mrc" -ne 0 ] || fail "mpirun exited 0 after a rank was killed"
echo "SIGKILL of rank 1, plain mpirun: the job stopped in ${el} s, status $mrc, naming rank 1"
if timeout 30 "$MPIEXEC" -np 1 --enable-recovery true > /dev/null 2>&1; then
    kill_run killed_rec --enable-recovery
    grep -q "comm error in dist_.*no answer from rank(s) 1" "$DIR/killed_rec.log" ||
        { cat "$DIR/killed_rec.log"; fail "rank 0 gave no comm error naming rank 1"; }
    [ -s "$DIR/rc.0" ] && [ "$(cat "$DIR/rc.0")" -ne 0 ] || fail "rank 0 did not exit non-zero"
    echo "SIGKILL of rank 1, --enable-recovery: rank 0 stopped in ${el} s with status $(cat "$DIR/rc.0"):"
    grep "comm error" "$DIR/killed_rec.log" | cut -c1-200
fi
"$BIN" eval --out "$DIR/killed" --threads 1 > "$DIR/killed_eval.log" 2>&1 ||
    { cat "$DIR/killed_eval.log"; fail "the killed run's last checkpoint does not load"; }
echo "the killed run's last checkpoint loads: $(cat "$DIR/killed_eval.log")"
echo "test_helix_lm_dist: ok"
