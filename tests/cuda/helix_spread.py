#!/usr/bin/env python3
"""helix_spread.py HELIX_LM [--dist] [--ulps K] [--runs N]: how far helix_lm's
figures move when every step's arithmetic is perturbed by roundings, on the
CPU: the calibration of tests/cuda/check.sh's bounds for the GPU against the
CPU (its comment gives the figures this printed).

The run of check.sh's configuration (--dist: that of tests/test_helix_lm_dist.sh)
is trained once as it is, and N times (3) stopped after every step, its
checkpoint's f32 tensors (parameters, AdamW moments) each moved by a random
whole number of ulps in [-K, K] (32; zeros kept), and resumed. Prints, per
figure, the largest relative departure of the perturbed runs from the
unperturbed one over all steps. A few minutes on 2 cores (one process start
per step)."""
import argparse
import csv
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

CHECK = ("--d 64 --layers 2 --batch 8 --seq 64 --steps 100 --warmup 10 --eval-every 50 "
         "--ckpt-every 0 --bytes 0 --threads 2 --plain")
DIST = ("--d 32 --layers 2 --batch 8 --seq 32 --steps 50 --warmup 10 --lr 1e-2 --min-lr 1e-3 "
        "--eval-every 10 --ckpt-every 0 --val-windows 24 --seed 7 --threads 1 --bytes 0 --plain")


def perturb(path, rng, k):
    b = bytearray(open(path, "rb").read())
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    base = 8 + n
    for name, v in head.items():
        if name == "__metadata__" or v["dtype"] != "F32":
            continue
        s, e = v["data_offsets"]
        vals = list(struct.unpack("<%di" % ((e - s) // 4), bytes(b[base + s:base + e])))
        for i, x in enumerate(vals):
            if x & 0x7FFFFFFF:  # the bits as an integer: +-1 is one ulp
                vals[i] = x + rng.randint(-k, k)
        b[base + s:base + e] = struct.pack("<%di" % len(vals), *vals)
    open(path, "wb").write(b)


def train(hx, conf, out, extra):
    cmd = [hx, "train", "--out", out] + conf.split() + extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        sys.exit("helix_spread: %s failed:\n%s" % (" ".join(cmd), r.stdout[-2000:]))


def figures(out):
    return {int(r["step"]): r for r in csv.DictReader(open(os.path.join(out, "metrics.csv")))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("helix_lm")
    ap.add_argument("--dist", action="store_true")
    ap.add_argument("--ulps", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    conf = DIST if a.dist else CHECK
    steps = int(conf.split("--steps ")[1].split()[0])
    tmp = tempfile.mkdtemp(prefix="helix_spread.")
    train(a.helix_lm, conf, os.path.join(tmp, "ref"), [])
    ref = figures(os.path.join(tmp, "ref"))
    cols = ["train_loss", "val_loss", "grad_norm"]
    worst = {c: 0.0 for c in cols}
    for run in range(1, a.runs + 1):
        out = os.path.join(tmp, "p%d" % run)
        rng = random.Random(run)
        for k in range(1, steps + 1):
            extra = ["--resume"] if k > 1 else []
            train(a.helix_lm, conf, out, extra + (["--stop-at", str(k)] if k < steps else []))
            if k < steps:
                perturb(os.path.join(out, "checkpoint.safetensors"), rng, a.ulps)
        got = figures(out)
        for st, r in ref.items():
            for c in cols:
                if r[c] and got[st][c]:
                    x, y = float(r[c]), float(got[st][c])
                    worst[c] = max(worst[c], abs(x - y) / abs(x))
        print("after %d run(s) of %d ulps: largest relative departures: %s" %
              (run, a.ulps, ", ".join("%s %.2g" % (c, worst[c]) for c in cols)), flush=True)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
