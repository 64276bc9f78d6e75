#!/bin/sh
# test_helix_kill.sh BIN SCRATCH: helix_lm's run directory survives kills.
#
# A tiny model trains with a checkpoint every 3 steps. The same run is
# killed with SIGKILL again and again, and resumed after every kill (or
# started over while there is no checkpoint yet):
#   - at fixed points of a save, through the program's test hook
#     (HELIX_LM_TEST_KILL=POINT@STEP, rundir.h): before it, between the
#     metrics and the checkpoint, between the checkpoint and the plot, after
#     the plot;
#   - at random moments (a seeded draw), which land in steps, evaluations
#     and saves (a save fsyncs: it is a good part of a tiny run's time).
# Then it runs to the end, and:
#   - metrics.csv has every step 0..S exactly once, and every column but the
#     wall clock and the session is the same text as an uninterrupted run's
#     (the resumed runs replay it bit for bit);
#   - no temporary file of helix_lm's own is left in the run directory, and
#     the files beside it that are not its own (or are a live process's)
#     are untouched;
#   - the final checkpoint loads (eval) at step S.
# About 10-20 s on 2 cores.
set -u

BIN=${1:?usage: test_helix_kill.sh path/to/helix_lm scratch-dir}
DIR=${2:?usage: test_helix_kill.sh path/to/helix_lm scratch-dir}
S=600
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
[ -x "$BIN" ] || fail "$BIN is not an executable"
rm -rf "$DIR" && mkdir -p "$DIR" || fail "cannot make $DIR"

awk 'BEGIN { for (i = 0; i < 4000; i++) print "In the beginning God created", i * 7919 % 10007 }' \
    > "$DIR/text.txt"
CONF="--data $DIR/text.txt --d 16 --layers 1 --batch 4 --seq 16 --steps $S --warmup 10
      --eval-every 10 --ckpt-every 3 --val-windows 8 --seed 3 --threads 1 --bytes 0 --plain"

# the uninterrupted run
# shellcheck disable=SC2086
"$BIN" train $CONF --out "$DIR/ref" > "$DIR/ref.log" 2>&1 || { cat "$DIR/ref.log"; fail "training failed"; }

RUN="$DIR/run"
mkdir -p "$RUN"
# leftovers of killed runs (a pid that has ended), and files that are not
# helix_lm's or belong to a live process (this shell)
sh -c 'exit 0' &
dead=$!
wait $dead
for f in "checkpoint.safetensors.tmp.$dead.0" "checkpoint.safetensors.tmp.$dead.7" \
         "metrics.csv.tmp.$dead" "loss.svg.tmp.$dead"; do
    : > "$RUN/$f"
done
for f in "checkpoint.safetensors.tmp.$$.0" "checkpoint.safetensors.tmp.notapid" \
         "notes.tmp.$dead.0" "checkpoint.safetensors.old"; do
    echo keep > "$RUN/$f"
done

kills=0
# start: train, resuming when there is a checkpoint; the rest of the
# arguments go before it (environment assignments)
start() {
    resume=
    [ -f "$RUN/checkpoint.safetensors" ] && resume=--resume
    # shellcheck disable=SC2086
    env "$@" "$BIN" train $CONF --out "$RUN" $resume >> "$DIR/run.log" 2>&1 &
    pid=$!
}

# at the fixed points of saves (3 | step)
for point in csv@6 checkpoint@9 save-begin@12 plot@15 csv@18; do
    start HELIX_LM_TEST_KILL=$point
    { wait $pid; } 2> /dev/null # (no "Killed" from the shell)
    rc=$?
    [ $rc -eq 137 ] || { tail -n 20 "$DIR/run.log"; fail "HELIX_LM_TEST_KILL=$point: exit $rc, not a SIGKILL"; }
    kills=$((kills + 1))
done
# after "csv@6" and "csv@18" a metrics.csv past the checkpoint was left:
# the resumes cut it back (checked at the end with the rest)

# at random moments
delays=$(awk 'BEGIN { srand(2026); for (i = 0; i < 14; i++) printf "%.3f ", 0.03 + 0.35 * rand() }')
for d in $delays; do
    start HELIX_LM_TEST_KILL=
    sleep "$d"
    if kill -9 "$pid" 2> /dev/null; then kills=$((kills + 1)); fi
    { wait "$pid"; } 2> /dev/null
done

# to the end
start HELIX_LM_TEST_KILL=
wait $pid || { tail -n 20 "$DIR/run.log"; fail "the last resume failed"; }
resumes=$(grep -c "^resumed from" "$DIR/run.log")
grep -q "^done: $S steps" "$DIR/run.log" || { tail -n 20 "$DIR/run.log"; fail "the run did not finish"; }
grep -q "removed .*checkpoint.safetensors.tmp.$dead.0, left by a run that was killed" "$DIR/run.log" ||
    fail "no note of the stale temporary file removed"

# every step once, the same rows as the uninterrupted run
awk -F, -v S=$S 'NR > 1 { if ($1 != NR - 2) { print "row " NR ": step " $1; exit 1 } n++ }
                 END { if (n != S + 1) { print n " rows"; exit 1 } }' "$RUN/metrics.csv" ||
    fail "metrics.csv does not have every step 0..$S exactly once"
cut -d, -f1,3-7 "$DIR/ref/metrics.csv" > "$DIR/ref.cols"
cut -d, -f1,3-7 "$RUN/metrics.csv" > "$DIR/run.cols"
cmp -s "$DIR/ref.cols" "$DIR/run.cols" ||
    { diff "$DIR/ref.cols" "$DIR/run.cols" | head; fail "the killed and resumed run's metrics differ from the uninterrupted run's"; }
sessions=$(tail -n 1 "$RUN/metrics.csv" | cut -d, -f8)

# no temporary file of ours left; the others untouched
left=$(cd "$RUN" && ls | grep -E '^(checkpoint\.safetensors|metrics\.csv|loss\.svg)\.tmp\.[0-9]+(\.[0-9]+)?$' |
       grep -v "^checkpoint.safetensors.tmp.$$.0\$")
[ -z "$left" ] || fail "temporary files left in the run directory: $left"
for f in "checkpoint.safetensors.tmp.$$.0" "checkpoint.safetensors.tmp.notapid" \
         "notes.tmp.$dead.0" "checkpoint.safetensors.old"; do
    [ "$(cat "$RUN/$f" 2> /dev/null)" = keep ] || fail "$f, not a stale file of helix_lm's, was touched"
done

# the final checkpoint loads
"$BIN" eval --out "$RUN" --data "$DIR/text.txt" --threads 1 > "$DIR/eval.log" 2>&1 ||
    { cat "$DIR/eval.log"; fail "the final checkpoint does not load"; }
grep -q "at step $S," "$DIR/eval.log" || { cat "$DIR/eval.log"; fail "the final checkpoint is not at step $S"; }

echo "kills: $kills SIGKILLs ($resumes resumes, $sessions sessions in the kept rows): metrics.csv has" \
     "steps 0..$S once each, as the uninterrupted run; no stale temporary files; the checkpoint loads"
rm -rf "$DIR"
echo PASS
