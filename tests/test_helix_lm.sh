#!/bin/sh
# test_helix_lm.sh BIN SCRATCH: end-to-end test of the helix_lm program,
# and of the gpt example (the same program with a transformer: BIN named
# gpt; it has no checkpoints of version 1, so their check is helix_lm's).
#
#   1. Train a tiny model for K steps with checkpoints (the uninterrupted run).
#   2. Train the same configuration, stopped after k < K steps, then resume
#      it to K: every column of metrics.csv but the wall clock and the
#      session (step, tokens, train loss, validation loss, learning rate,
#      gradient norm) must be the same text as the uninterrupted run's, so
#      the losses and learning rates from step k on are identical bit for
#      bit (the CSV prints each f32 loss exactly). Resumed with a longer
#      --steps, the learning rate goes on from its value at step k and
#      decays to --min-lr at the new end (schedule.h's formula, checked row
#      by row); a finished run resumed for more steps stays at --min-lr.
#      The fresh model's loss is at most ln 256, a uniform guess; --steps at
#      or below the warm-up warns; progress lines show a validation loss
#      only where the step has a new one; the plot has the learning rate and
#      the resume.
#   3. eval of the checkpoint prints a finite loss, the one training ended at.
#   4. sample prints the prompt and exactly the requested number of bytes.
#   5. Errors give a message and a non-zero exit, never a crash: a missing
#      data file, a bad flag, a corrupt or missing checkpoint.
#   6. A checkpoint cannot hurt the program: crafted files (written here
#      with python3's standard library) whose configuration is out of range,
#      overflows a size, is not finite, or describes a model far bigger than
#      the tensors the file holds give one line naming the value and its
#      bound, fast and in little memory; one SIGTERM stops eval, sampling
#      and an evaluation inside training long before their work would end.
#
# Both runs use the same thread count: gad's kernels are deterministic for a
# fixed count. Runs in about half a minute (the signal checks wait 2 s each).
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
# the fresh model: a loss no worse than a uniform guess, ln 256 = 5.5451774
v0=$(awk -F, 'NR == 2 { print $5 }' "$DIR/full/metrics.csv")
awk -v v="$v0" 'BEGIN { exit !(v + 0 > 0 && v <= 5.5451775 + 1e-6) }' ||
    fail "the initial validation loss $v0 is above ln 256 = 5.5451774"
echo "init: the fresh model's validation loss is $v0 (ln 256 = 5.5451774)"
# plain progress lines: a validation loss on exactly the lines of the steps
# that have one in metrics.csv (every 10 and the end), with that value
# shellcheck disable=SC2086
"$BIN" train $CONF --out "$DIR/logs" --log-every 5 --plain > "$DIR/logs.log" 2>&1 ||
    { cat "$DIR/logs.log"; fail "training with --log-every 5 failed"; }
awk -F, 'NR > 2 && $5 != "" { printf "%d %.4f\n", $1, $5 }' "$DIR/logs/metrics.csv" > "$DIR/val.csv"
sed -n 's/^step \([0-9]*\) .* val \([0-9.]*\) .*/\1 \2/p' "$DIR/logs.log" | grep -v '^0 ' |
    sort -un -k1,1 > "$DIR/val.log"
cmp -s "$DIR/val.csv" "$DIR/val.log" ||
    { diff "$DIR/val.csv" "$DIR/val.log"; fail "the progress lines' validation losses are not the fresh ones"; }
grep -q "^step 5/$K  loss [0-9.]*  lr " "$DIR/logs.log" ||
    { cat "$DIR/logs.log"; fail "no plain progress line at step 5"; }
if grep '^step [0-9]*/' "$DIR/logs.log" | grep -q ' val '; then
    fail "a progress line without a new evaluation shows a validation loss"
fi
echo "progress: validation losses only on the lines of the steps that computed them"

# 2. stopped at step k, then resumed (the configuration comes from the
# checkpoint: only --out, --resume and the thread count are given)
# shellcheck disable=SC2086
"$BIN" train $CONF --out "$DIR/part" --stop-at $k > "$DIR/part1.log" 2>&1 ||
    { cat "$DIR/part1.log"; fail "the run to be interrupted failed"; }
grep -q "stopped at step $k" "$DIR/part1.log" || fail "the run did not stop at step $k"
"$BIN" train --out "$DIR/part" --resume --threads "$THREADS" --bytes 0 > "$DIR/part2.log" 2>&1 ||
    { cat "$DIR/part2.log"; fail "resuming failed"; }
grep -q "resumed from .* at step $k" "$DIR/part2.log" || fail "the run did not resume at step $k"
cut -d, -f1,3-7 "$DIR/full/metrics.csv" > "$DIR/full.cols"
cut -d, -f1,3-7 "$DIR/part/metrics.csv" > "$DIR/part.cols"
if ! cmp -s "$DIR/full.cols" "$DIR/part.cols"; then
    diff "$DIR/full.cols" "$DIR/part.cols" | head -20
    fail "the resumed run's metrics differ from the uninterrupted run's"
fi
n_after=$(awk -F, -v k=$k 'NR > 1 && $1 >= k' "$DIR/part.cols" | wc -l)
echo "resume: stopped at step $k and resumed to $K: the same losses, bit for bit" \
     "($n_after rows from step $k on)"
grep -q 'data-step="'$k'"' "$DIR/part/loss.svg" || fail "loss.svg does not mark the resume at step $k"
grep -q 'data-step=' "$DIR/full/loss.svg" && fail "loss.svg of a run never resumed marks a resume"
# the learning rate's curve: one point per step row (every row has an lr)
pts=$(sed -n '/<polyline id="lr"/,/"\/>/p' "$DIR/part/loss.svg" | grep -o '[0-9.]*,[0-9.]*' | wc -l)
[ "$pts" -eq "$K" ] || fail "loss.svg's learning-rate curve has $pts points, not $K"
echo "plot: the learning rate ($pts points) and the resume at step $k"

# mixed precision: --precision bf16 and f16 (a half working model over the
# f32 masters; f16 with a loss scaler) run the same checks: stopped at k
# and resumed (the precision, and f16's scale, from the checkpoint) to K,
# the same metrics bit for bit as the uninterrupted run
for p in bf16 f16; do
    # shellcheck disable=SC2086
    "$BIN" train $CONF --precision $p --out "$DIR/$p" > "$DIR/$p.log" 2>&1 ||
        { cat "$DIR/$p.log"; fail "training in $p failed"; }
    grep -q "^precision: $p working copies" "$DIR/$p.log" || fail "the $p run does not say its precision"
    # shellcheck disable=SC2086
    "$BIN" train $CONF --precision $p --out "$DIR/$p-part" --stop-at $k > "$DIR/$p-part1.log" 2>&1 ||
        { cat "$DIR/$p-part1.log"; fail "the $p run to be interrupted failed"; }
    "$BIN" train --out "$DIR/$p-part" --resume --threads "$THREADS" --bytes 0 > "$DIR/$p-part2.log" 2>&1 ||
        { cat "$DIR/$p-part2.log"; fail "resuming the $p run failed"; }
    grep -q "^precision: $p working copies" "$DIR/$p-part2.log" || fail "the resumed run is not in $p"
    cut -d, -f1,3-7 "$DIR/$p/metrics.csv" > "$DIR/$p.cols"
    cut -d, -f1,3-7 "$DIR/$p-part/metrics.csv" > "$DIR/$p-part.cols"
    if ! cmp -s "$DIR/$p.cols" "$DIR/$p-part.cols"; then
        diff "$DIR/$p.cols" "$DIR/$p-part.cols" | head -20
        fail "the resumed $p run's metrics differ from the uninterrupted run's"
    fi
    vf=$(tail -1 "$DIR/full.cols" | cut -d, -f4)
    vp=$(tail -1 "$DIR/$p.cols" | cut -d, -f4)
    awk -v a="$vf" -v b="$vp" 'BEGIN { d = a - b; exit !(d < 0.25 && d > -0.25) }' ||
        fail "the $p run's validation loss $vp is far from f32's $vf"
    echo "$p: stopped at step $k and resumed to $K: the same losses, bit for bit (val $vp, f32 $vf)"
done
grep -q "^f16: [0-9]* steps\? skipped" "$DIR/f16.log" || fail "the f16 run does not count its skipped steps"

# resumed with a longer --steps: the same rate at step k as the
# uninterrupted run, then lr(s) = min + (l_k - min)(1 + cos(pi (s - k) / (E - k))) / 2
# for the update s (the row of step s + 1), down to --min-lr at E
E=90
# shellcheck disable=SC2086
"$BIN" train $CONF --out "$DIR/long" --stop-at $k > /dev/null 2>&1 || fail "the run to extend failed"
"$BIN" train --out "$DIR/long" --resume --steps $E --threads "$THREADS" --bytes 0 \
    > "$DIR/long.log" 2>&1 || { cat "$DIR/long.log"; fail "resuming with --steps $E failed"; }
grep -q "from step $k the learning rate decays from" "$DIR/long.log" ||
    { cat "$DIR/long.log"; fail "no note of the re-anchored schedule"; }
awk -F, -v k=$k -v E=$E -v min=1e-3 '
    FNR == NR { if (FNR > 1) full[$1] = $6; next }
    FNR > 1 {
        s = $1 - 1                             # the update of this row
        if ($1 == k + 1) { lk = $6; if (lk != full[$1]) bad = bad " jump at " $1 ": " lk " vs " full[$1] }
        if ($1 > k + 1) {
            want = min + (lk - min) * (1 + cos(3.14159265358979324 * (s - k) / (E - k))) / 2
            # (1e-7: the CSV prints 9 digits)
            if ((want - $6) > 1e-7 * want || ($6 - want) > 1e-7 * want) bad = bad " row " $1 ": " $6 " vs " want
            if ($6 > prev) bad = bad " rises at " $1
        }
        prev = $6; last = $1; lastlr = $6
    }
    END {
        if (last != E) bad = bad " ends at " last
        if (!(lastlr > min && lastlr < min * 1.01)) bad = bad " last lr " lastlr
        if (bad != "") { print bad; exit 1 }
    }' "$DIR/full/metrics.csv" "$DIR/long/metrics.csv" ||
    fail "the extended schedule is not continuous at step $k or does not decay to --min-lr at $E"
# a finished run resumed for more: it goes on at --min-lr
cp -r "$DIR/full" "$DIR/more"
"$BIN" train --out "$DIR/more" --resume --steps $((K + 10)) --threads "$THREADS" --bytes 0 \
    > "$DIR/more.log" 2>&1 || { cat "$DIR/more.log"; fail "resuming a finished run failed"; }
awk -F, -v K=$K 'NR > 1 && $1 > K && $6 != 0.001 { bad = 1 } END { exit bad }' "$DIR/more/metrics.csv" ||
    fail "a finished run resumed for more steps does not stay at --min-lr"
echo "schedule: resumed with --steps $E, the rate goes on from step $k's and decays to --min-lr at $E"

# --steps at or below the warm-up: with the default warm-up it is shortened
# (and the rate decays); with an explicit one, kept (and a warning says so)
"$BIN" train --out "$DIR/short" --d 16 --layers 1 --batch 4 --seq 16 --steps 40 --val-windows 4 \
    --threads "$THREADS" --bytes 0 > "$DIR/short.log" 2>&1 ||
    { cat "$DIR/short.log"; fail "a run of 40 steps failed"; }
grep -q "warning: --steps 40 is at or below the default warm-up of 300 steps: the warm-up is shortened to 4" \
    "$DIR/short.log" || { cat "$DIR/short.log"; fail "no warning for --steps below the warm-up"; }
awk -F, 'NR == 6 { peak = $6 } NR > 6 && $6 > prev { bad = 1 } { prev = $6 }
         END { exit bad || !(prev < peak / 5) }' "$DIR/short/metrics.csv" ||
    fail "a run shorter than the default warm-up does not decay after its shortened warm-up"
"$BIN" train --out "$DIR/short2" --d 16 --layers 1 --batch 4 --seq 16 --steps 40 --warmup 40 \
    --val-windows 4 --threads "$THREADS" --bytes 0 > "$DIR/short2.log" 2>&1 ||
    { cat "$DIR/short2.log"; fail "a run of 40 steps with --warmup 40 failed"; }
grep -q "warning: --steps 40 is at or below --warmup 40: the learning rate rises for the whole run" \
    "$DIR/short2.log" || { cat "$DIR/short2.log"; fail "no warning for --steps at --warmup"; }
echo "warm-up: --steps at or below it warns (and the default one is shortened)"

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
expect_error "a bad --precision" "not one of f32, bf16, f16" \
    "$BIN" train --precision f8 --out "$DIR/x" --steps 1
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
# the run's own files (metrics.csv, loss.svg) never replace what is not a
# regular file: a FIFO there is an error and stays; a link is written through
TINY="--d 16 --layers 1 --batch 4 --seq 16 --steps 2 --val-windows 4 --threads 1 --bytes 0"
if command -v mkfifo > /dev/null; then
    mkdir -p "$DIR/fifo" && mkfifo "$DIR/fifo/metrics.csv"
    # shellcheck disable=SC2086
    expect_error "a FIFO at metrics.csv" "it is a FIFO, not a regular file" \
        "$BIN" train --out "$DIR/fifo" $TINY
    [ -p "$DIR/fifo/metrics.csv" ] || fail "the FIFO at metrics.csv was replaced"
fi
mkdir -p "$DIR/link" && : > "$DIR/linked.csv" && ln -s ../linked.csv "$DIR/link/metrics.csv"
# shellcheck disable=SC2086
"$BIN" train --out "$DIR/link" $TINY > "$DIR/link.log" 2>&1 ||
    { cat "$DIR/link.log"; fail "training with metrics.csv a link failed"; }
[ -L "$DIR/link/metrics.csv" ] && grep -q '^step' "$DIR/linked.csv" ||
    fail "metrics.csv, a link, was not written through to its target"
echo "errors: all reported cleanly"

# 6. hostile checkpoints and signals
if command -v python3 > /dev/null && command -v timeout > /dev/null; then
# craft SRC DST [drop=PREFIX | NAME=I64:V | NAME=F64:V]...: DST is the
# safetensors file SRC without the tensors whose names start with PREFIX,
# and with scalars NAME set (added or replaced) to V of that dtype
craft() {
    python3 - "$@" << 'EOF'
import json, struct, sys
src, dst, edits = sys.argv[1], sys.argv[2], sys.argv[3:]
raw = open(src, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
header = json.loads(raw[8:8 + n])
header.pop('__metadata__', None)
body = raw[8 + n:]
tensors = {k: (v['dtype'], v['shape'], body[v['data_offsets'][0]:v['data_offsets'][1]])
           for k, v in header.items()}
for e in edits:
    name, value = e.split('=', 1)
    if name == 'drop':
        tensors = {k: t for k, t in tensors.items() if not k.startswith(value)}
        continue
    dtype, v = value.split(':', 1)
    data = struct.pack('<q', int(v)) if dtype == 'I64' else struct.pack('<d', float(v))
    tensors[name] = (dtype, [], data)
out, blob = {}, b''
for k, (dtype, shape, data) in tensors.items():
    out[k] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(blob), len(blob) + len(data)]}
    blob += data
head = json.dumps(out).encode()
head += b' ' * (-len(head) % 8)
open(dst, 'wb').write(struct.pack('<Q', len(head)) + head + blob)
EOF
}
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }

H="$DIR/hostile"
mkdir -p "$H"
SRC="$DIR/full/checkpoint.safetensors"
# hostile NAME PATTERN EDITS...: eval, sample and train --resume (for one
# more step) of the crafted checkpoint each fail with PATTERN (20 s at
# most: no hang)
hostile() {
    name=$1 pat=$2
    shift 2
    craft "$SRC" "$H/$name.safetensors" "$@" || fail "cannot write the crafted checkpoint $name"
    mkdir -p "$H/$name" && cp "$H/$name.safetensors" "$H/$name/checkpoint.safetensors"
    expect_error "checkpoint $name: eval" "$pat" timeout -s KILL 20 \
        "$BIN" eval --ckpt "$H/$name.safetensors" --threads 1
    expect_error "checkpoint $name: sample" "$pat" timeout -s KILL 20 \
        "$BIN" sample --ckpt "$H/$name.safetensors" --bytes 5 --threads 1
    expect_error "checkpoint $name: train --resume" "$pat" timeout -s KILL 20 \
        "$BIN" train --out "$H/$name" --resume --steps $((K + 1)) --threads 1 --bytes 0
}
# sizes that wrap or overflow: B*T*8 is 2^65 (malloc(0), then writes), and
# B*T itself past 2^63
hostile batch-2p57 'hp.batch = 144115188075855872, outside its range \[1, 65536\]' \
    hp.batch=I64:144115188075855872
hostile batch-2p61 'hp.batch = 2305843009213693952, outside its range \[1, 65536\]' \
    hp.batch=I64:2305843009213693952
hostile batch-2p62 'hp.batch = 4611686018427387904, outside its range \[1, 65536\]' \
    hp.batch=I64:4611686018427387904
hostile step-bytes 'batch 1024 x seq 1024 = 1048576 bytes a step, above the maximum 65536' \
    hp.batch=I64:1024 hp.seq=I64:1024
hostile seq-2p20 'hp.seq = 1048576, outside its range \[2, 65536\]' hp.seq=I64:1048576
hostile threads 'run.threads = -5, outside its range' run.threads=I64:-5
# doubles that no integer cast may see: NaN, infinities, 1e300, fractions
hostile batch-nan 'hp.batch = nan, not a finite number' hp.batch=F64:nan
hostile seq-inf 'hp.seq = inf, not a finite number' hp.seq=F64:inf
hostile windows-1e300 'hp.val-windows = 1e+300, outside its range \[1, 65536\]' \
    hp.val-windows=F64:1e300
hostile batch-half 'hp.batch = 2.5, not an integer' hp.batch=F64:2.5
hostile step-1e300 'run.step = 1e+300, outside its range' run.step=F64:1e300
hostile lr-nan 'hp.lr = nan, not a finite number' hp.lr=F64:nan
hostile budget-inf 'hp.time-budget = -inf, not a finite number' hp.time-budget=F64:-inf
hostile seconds-nan 'run.seconds = nan, not a finite number' run.seconds=F64:nan
hostile windows-huge 'hp.val-windows = 1000000000000, outside its range \[1, 65536\]' \
    hp.val-windows=I64:1000000000000
expect_error "--val-windows past its maximum" "wants an integer in \[1, 65536\]" \
    timeout -s KILL 20 "$BIN" eval --out "$DIR/full" --val-windows 65537
expect_error "--batch x --seq past the maximum" "= 8388608 bytes a step, above the maximum 65536" \
    timeout -s KILL 20 "$BIN" train --out "$DIR/w" --batch 65536 --seq 128 --steps 1
expect_error "--bytes past its maximum" "wants an integer in \[0, 16777216\]" \
    timeout -s KILL 20 "$BIN" sample --out "$DIR/full" --bytes 16777217
echo "hostile checkpoints: out-of-range, overflowing and non-finite values all rejected"

# a run's clock at its bound (1e12 s) resumes, and the checkpoint it writes
# loads again: the clock saturates there (fuzz_helix's regress_seconds_max)
craft "$SRC" "$H/clock.safetensors" run.seconds=F64:1e12 || fail "cannot write the clock checkpoint"
mkdir -p "$H/clock" && cp "$H/clock.safetensors" "$H/clock/checkpoint.safetensors"
timeout -s KILL 60 "$BIN" train --out "$H/clock" --resume --steps $((K + 1)) --threads 1 \
    --bytes 0 > /dev/null 2>&1 || fail "a checkpoint at the clock's bound does not resume"
timeout -s KILL 20 "$BIN" eval --ckpt "$H/clock/checkpoint.safetensors" --threads 1 > /dev/null 2>&1 ||
    fail "the checkpoint a run at the clock's bound wrote does not load"
python3 - "$H/clock/checkpoint.safetensors" << 'EOF2' || fail "the saved clock is not 1e12 s"
import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
t = json.loads(raw[8:8 + n])['run.seconds']
assert struct.unpack('<d', raw[8 + n + t['data_offsets'][0]:][:8])[0] == 1e12
EOF2
echo "a run's clock at its bound: resumed, saved at the bound, loads again"

# a checkpoint of version 1 (no output bias, no run.lr_*): eval and sample
# read it (with a zero bias), train --resume says it cannot continue it;
# gpt says it lacks the bias
if [ "$(basename "$BIN")" = gpt ]; then
    craft "$SRC" "$H/v1.safetensors" drop=bout drop=run.lr_ run.version=I64:1 ||
        fail "cannot write the version-1 checkpoint"
    expect_error "gpt eval of a version-1 checkpoint" "has no parameter 'bout'" \
        "$BIN" eval --ckpt "$H/v1.safetensors" --threads 1
    echo "version 1: gpt says the checkpoint lacks its output bias"
else
craft "$SRC" "$H/v1.safetensors" drop=bout drop=run.lr_ run.version=I64:1 ||
    fail "cannot write the version-1 checkpoint"
"$BIN" eval --ckpt "$H/v1.safetensors" --threads 1 > "$DIR/v1.log" 2>&1 ||
    { cat "$DIR/v1.log"; fail "eval of a version-1 checkpoint failed"; }
grep -q "^validation loss [0-9.]* nats/byte" "$DIR/v1.log" || fail "eval of a version-1 checkpoint printed no loss"
"$BIN" sample --ckpt "$H/v1.safetensors" --bytes 5 --threads 1 > /dev/null 2>&1 ||
    fail "sample of a version-1 checkpoint failed"
mkdir -p "$H/v1" && cp "$H/v1.safetensors" "$H/v1/checkpoint.safetensors"
expect_error "train --resume of a version-1 checkpoint" "is a checkpoint of version 1" \
    "$BIN" train --out "$H/v1" --resume --steps $((K + 1)) --threads 1 --bytes 0
echo "version 1: eval and sample read it; resume says it cannot"
fi

# a model of width 8192 and 64 layers (120 GB) described by a 125 KB file:
# rejected by its shapes before anything is allocated, in 1 GB of address
# space (when the build allows a limit: ASan does not) and before the kill
# at 20 s (the work of a 120 GB model would take far longer)
craft "$SRC" "$H/wide.safetensors" drop=opt. hp.d=I64:8192 hp.layers=I64:64 ||
    fail "cannot write the crafted checkpoint wide"
mkdir -p "$H/wide" && cp "$H/wide.safetensors" "$H/wide/checkpoint.safetensors"
if sh -c 'ulimit -v 1000000 && exec "$0" --help' "$BIN" > /dev/null 2>&1; then
    VLIMIT="ulimit -v 1000000;"
else
    VLIMIT=""
    echo "(the build needs more address space than 1 GB: the wide model runs without the limit)"
fi
for cmd in eval sample "train --resume --bytes 0"; do
    # shellcheck disable=SC2086
    expect_error "a 125 KB checkpoint of a 120 GB model: $cmd" \
        "parameter 'emb' is \[256, 32\] but the configuration (d 8192, layers 64) makes it \[256, 8192\]" \
        timeout -s KILL 20 sh -c "$VLIMIT exec \"\$0\" $cmd --out \"\$1\" --threads 1" "$BIN" "$H/wide"
done
echo "a 125 KB file describing a 120 GB model: rejected by its shapes, in little time and memory"

# stop_on_term WHAT PATTERN HOW command...: run the command, send it
# SIGTERM after 2 s, and want it to exit with status 130 and PATTERN in its
# output, long before the work asked for would end (minutes): within 10 s
# of the signal, after which timeout kills it (status 137). The bound is
# loose because the host may be loaded; a program that ignores the signal
# fails it all the same. HOW is "once" (timeout --foreground sends
# one signal, to the command) or "timeout" (as `timeout` is usually run: it
# signals the command and then its process group, so that the command may
# get two at once, which are one request to stop)
stop_on_term() {
    what=$1 pat=$2 how=$3
    shift 3
    fg=--foreground
    [ "$how" = once ] || fg=
    t0=$(now_ms)
    # shellcheck disable=SC2086
    timeout $fg --preserve-status -k 10 -s TERM 2 "$@" > "$DIR/sig.out" 2> "$DIR/sig.err"
    rc=$?
    t=$(($(now_ms) - t0))
    [ "$rc" -eq 130 ] || { cat "$DIR/sig.err"; fail "$what: exit status $rc after SIGTERM (at 2 s, $t ms in), not 130"; }
    grep -q "$pat" "$DIR/sig.err" "$DIR/sig.out" || { cat "$DIR/sig.err"; fail "$what: no message like '$pat'"; }
}
stop_on_term "eval of 65536 windows" "interrupted" once \
    "$BIN" eval --out "$DIR/full" --val-windows 65536 --threads 1
stop_on_term "eval of 65536 windows, under timeout" "interrupted" timeout \
    "$BIN" eval --out "$DIR/full" --val-windows 65536 --threads 1
stop_on_term "sample of 16777216 bytes" "interrupted" once \
    "$BIN" sample --out "$DIR/full" --bytes 16777216 --threads 1
cp -r "$DIR/full" "$DIR/sig-train"
stop_on_term "an evaluation of 65536 windows inside training" "stopped at step $((K + 1))" once \
    "$BIN" train --out "$DIR/sig-train" --resume --steps $((K + 10)) --eval-every 1 \
    --val-windows 65536 --threads "$THREADS" --bytes 0
"$BIN" eval --out "$DIR/sig-train" --threads 1 --val-windows 4 > "$DIR/sig.out" 2>&1 ||
    { cat "$DIR/sig.out"; fail "the checkpoint of the interrupted run does not load"; }
grep -q "at step $((K + 1))," "$DIR/sig.out" || fail "the interrupted run saved no checkpoint at step $((K + 1))"
echo "signals: one SIGTERM stops eval, sampling and an evaluation in training"
else
    echo "(no python3 or timeout: the hostile-checkpoint and signal checks are skipped)"
fi

rm -rf "$DIR"
echo "PASS"
