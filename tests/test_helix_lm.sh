#!/bin/sh
# test_helix_lm.sh BIN SCRATCH: end-to-end test of the helix_lm program.
#
#   1. Train a tiny model for K steps with checkpoints (the uninterrupted run).
#   2. Train the same configuration, stopped after k < K steps, then resume
#      it to K: every column of metrics.csv but the wall clock (step, tokens,
#      train loss, validation loss, learning rate, gradient norm) must be the
#      same text as the uninterrupted run's, so the losses from step k on are
#      identical bit for bit (the CSV prints each f32 loss exactly).
#   3. eval of the checkpoint prints a finite loss, the one training ended at.
#   4. sample prints the prompt and exactly the requested number of bytes.
#   5. Errors give a message and a non-zero exit, never a crash: a missing
#      data file, a bad flag, a corrupt or missing checkpoint.
#
# Both runs use the same thread count: gad's kernels are deterministic for a
# fixed count. Runs in a few seconds.
set -u

BIN=${1:?usage: test_helix_lm.sh path/to/helix_lm scratch-dir}
DIR=${2:?usage: test_helix_lm.sh path/to/helix_lm scratch-dir}
THREADS=${HELIX_TEST_THREADS:-2}
K=60
k=25

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

[ -x "$BIN" ] || fail "$BIN is not an executable"
rm -rf "$DIR" && mkdir -p "$DIR" || fail "cannot make $DIR"

CONF="--d 32 --layers 2 --batch 8 --seq 32 --steps $K --warmup 10 --lr 1e-2 --min-lr 1e-3
      --eval-every 10 --ckpt-every 20 --val-windows 24 --seed 7 --threads $THREADS --bytes 0"

# 1. the uninterrupted run
# shellcheck disable=SC2086
"$BIN" train $CONF --out "$DIR/full" > "$DIR/full.log" 2>&1 ||
    { cat "$DIR/full.log"; fail "training failed"; }
for f in checkpoint.safetensors metrics.csv loss.svg; do
    [ -s "$DIR/full/$f" ] || fail "training wrote no $f"
done
grep -q '<svg' "$DIR/full/loss.svg" && grep -q '</svg>' "$DIR/full/loss.svg" ||
    fail "loss.svg is not an SVG document"
rows=$(($(wc -l < "$DIR/full/metrics.csv") - 2)) # less the header and step 0
[ "$rows" -eq "$K" ] || fail "metrics.csv has $rows step rows, not $K"

# 2. stopped at step k, then resumed (the configuration comes from the
# checkpoint: only --out, --resume and the thread count are given)
# shellcheck disable=SC2086
"$BIN" train $CONF --out "$DIR/part" --stop-at $k > "$DIR/part1.log" 2>&1 ||
    { cat "$DIR/part1.log"; fail "the run to be interrupted failed"; }
grep -q "stopped at step $k" "$DIR/part1.log" || fail "the run did not stop at step $k"
"$BIN" train --out "$DIR/part" --resume --threads "$THREADS" --bytes 0 > "$DIR/part2.log" 2>&1 ||
    { cat "$DIR/part2.log"; fail "resuming failed"; }
grep -q "resumed from .* at step $k" "$DIR/part2.log" || fail "the run did not resume at step $k"
cut -d, -f1,3- "$DIR/full/metrics.csv" > "$DIR/full.cols"
cut -d, -f1,3- "$DIR/part/metrics.csv" > "$DIR/part.cols"
if ! cmp -s "$DIR/full.cols" "$DIR/part.cols"; then
    diff "$DIR/full.cols" "$DIR/part.cols" | head -20
    fail "the resumed run's metrics differ from the uninterrupted run's"
fi
n_after=$(awk -F, -v k=$k 'NR > 1 && $1 >= k' "$DIR/part.cols" | wc -l)
echo "resume: stopped at step $k and resumed to $K: the same losses, bit for bit" \
     "($n_after rows from step $k on)"

# 3. eval prints a finite loss: the validation loss the run ended with
"$BIN" eval --out "$DIR/part" --threads "$THREADS" > "$DIR/eval.log" 2>&1 ||
    { cat "$DIR/eval.log"; fail "eval failed"; }
loss=$(sed -n 's/^validation loss \([^ ]*\) nats.*/\1/p' "$DIR/eval.log")
awk -v v="$loss" 'BEGIN { exit !(v + 0 == v && v > 0 && v < 5.545) }' ||
    fail "eval printed '$loss', not a finite loss below 5.545"
last=$(tail -n 1 "$DIR/part/metrics.csv" | cut -d, -f5)
[ "$loss" = "$last" ] || fail "eval gives $loss, training ended at $last"
echo "eval: validation loss $loss nats/byte"

# 4. sample: the prompt, the requested bytes, a newline
prompt="And God said"
"$BIN" sample --out "$DIR/full" --prompt "$prompt" --bytes 100 --seed 3 \
    --threads "$THREADS" > "$DIR/sample.out" 2> "$DIR/sample.err" ||
    { cat "$DIR/sample.err"; fail "sample failed"; }
size=$(wc -c < "$DIR/sample.out")
[ "$size" -eq $((${#prompt} + 100 + 1)) ] ||
    fail "sample wrote $size bytes, not ${#prompt} + 100 + a newline"
head -c ${#prompt} "$DIR/sample.out" | grep -q "^$prompt\$" || fail "sample does not start with the prompt"
"$BIN" sample --out "$DIR/full" --prompt "" --bytes 7 --temperature 0 > "$DIR/greedy.out" 2>/dev/null ||
    fail "greedy sampling with an empty prompt failed"
[ "$(wc -c < "$DIR/greedy.out")" -eq 8 ] || fail "greedy sampling wrote the wrong number of bytes"
echo "sample: $(head -c 60 "$DIR/sample.out" | tr '\n' ' ')..."

# plain text (not gzip) reads too
awk 'BEGIN { for (i = 0; i < 3000; i++) print "In the beginning God created", i * 7919 % 10007 }' \
    > "$DIR/plain.txt"
"$BIN" train --data "$DIR/plain.txt" --out "$DIR/plain" --d 16 --layers 1 --batch 4 --seq 16 \
    --steps 3 --val-windows 4 --threads "$THREADS" --bytes 5 > "$DIR/plain.log" 2>&1 ||
    { cat "$DIR/plain.log"; fail "training on a plain .txt file failed"; }

# 5. errors: a clear message and exit status 1 or 2 (not a signal)
expect_error() { # expect_error WHAT PATTERN command...
    what=$1 pat=$2
    shift 2
    "$@" > "$DIR/err.out" 2> "$DIR/err.log"
    rc=$?
    [ $rc -eq 1 ] || [ $rc -eq 2 ] || { cat "$DIR/err.log"; fail "$what: exit status $rc"; }
    grep -q "$pat" "$DIR/err.log" || { cat "$DIR/err.log"; fail "$what: no message like '$pat'"; }
}
expect_error "a missing data file" "cannot open the data file" \
    "$BIN" train --data "$DIR/no-such-file.txt.gz" --out "$DIR/x" --steps 1
expect_error "an unknown flag" "unknown option" "$BIN" train --no-such-flag
expect_error "a bad number" "wants an integer" "$BIN" train --steps 12abc
expect_error "a missing value" "needs a value" "$BIN" train --lr
expect_error "an unknown command" "unknown command" "$BIN" fly
expect_error "a missing checkpoint" "cannot read the checkpoint" "$BIN" eval --out "$DIR/nothing-here"
head -c 1000 "$DIR/full/checkpoint.safetensors" > "$DIR/truncated.safetensors"
expect_error "a truncated checkpoint" "not valid" "$BIN" sample --ckpt "$DIR/truncated.safetensors"
printf 'not a checkpoint at all' > "$DIR/junk.safetensors"
expect_error "a junk checkpoint" "not valid" "$BIN" eval --ckpt "$DIR/junk.safetensors"
mkdir -p "$DIR/tiny" && printf 'too short' > "$DIR/tiny/t.txt"
expect_error "a data file that is too small" "too small" \
    "$BIN" train --data "$DIR/tiny/t.txt" --out "$DIR/y" --steps 1
if command -v gzip > /dev/null; then
    awk 'BEGIN { for (i = 0; i < 3000; i++) print "In the beginning God created", i * 7919 % 10007 }' |
        gzip -c | head -c 2000 > "$DIR/truncated.txt.gz"
    expect_error "a truncated .gz file" "truncated" \
        "$BIN" train --data "$DIR/truncated.txt.gz" --out "$DIR/z" --steps 1
fi
echo "errors: all reported cleanly"

rm -rf "$DIR"
echo "PASS"
