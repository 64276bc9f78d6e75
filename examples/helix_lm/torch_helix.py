#!/usr/bin/env python3
"""helix_lm's model in PyTorch: load what `helix_lm export` writes and
evaluate the same validation windows as `helix_lm eval`.

    helix_lm train --out RUN ...        # or any run directory
    helix_lm eval --out RUN             # gad's f32 validation loss
    helix_lm export --out RUN           # RUN/export.safetensors
    python3 torch_helix.py RUN/export.safetensors [--data kjv.txt.gz] [--expect LOSS]

The file is read with the standard library (json, struct) and
torch.frombuffer, so the safetensors package is not needed; the model loads
it with load_state_dict(strict=True). The configuration (d_model,
n_layers, norm_eps, seq, val_windows) comes from the file's __metadata__.
The math is docs/helix.md's: embedding, L HELIX blocks, RMS norm times a
gain, the output projection; nn.Linear weights are [out, in].
"""
import argparse
import gzip
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
          "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
          "U8": torch.uint8, "BOOL": torch.bool}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n:]
    sd = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:end]), dtype=DTYPES[e["dtype"]])
        sd[name] = t.reshape(e["shape"]).clone()
    return sd, meta


class HelixBlock(nn.Module):
    """One HELIX block (docs/helix.md, "HELIX block", lines 1-10)."""

    def __init__(self, d, eps):
        super().__init__()
        self.norm1 = nn.RMSNorm(d, eps=eps)            # g1
        self.gate = nn.Linear(d, d)                    # wa[0:D]^T and wa[D]
        self.inp = nn.Linear(d, d, bias=False)         # wb^T
        self.scan_gain = nn.Parameter(torch.ones(d))   # g2
        self.out = nn.Linear(d, d, bias=False)         # wo^T
        self.norm2 = nn.RMSNorm(d, eps=eps)            # g3
        self.ff1 = nn.Linear(d, 2 * d, bias=False)     # wf1^T
        self.ff2 = nn.Linear(2 * d, d, bias=False)     # wf2^T
        self.ff_gain = nn.Parameter(torch.ones(d))     # g4

    def forward(self, x):
        xn = self.norm1(x)
        a = torch.sigmoid(self.gate(xn))
        u = self.inp(xn)
        hs, h = [], torch.zeros_like(u[:, 0])
        for t in range(u.shape[1]):                    # h_t = a_t h_{t-1} + u_t
            h = a[:, t] * h + u[:, t]
            hs.append(h)
        h = torch.stack(hs, dim=1)
        out1 = x + self.out(F.silu(h * self.scan_gain))
        f2 = self.ff2(F.silu(self.ff1(self.norm2(out1))))
        return out1 + f2 * self.ff_gain


class HelixLM(nn.Module):
    def __init__(self, d, layers, vocab=256, eps=1e-5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(HelixBlock(d, eps) for _ in range(layers))
        self.norm = nn.RMSNorm(d, eps=eps)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        h = self.emb(idx)
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def validation_windows(path, nw, T):
    """helix_lm's held-out 5% and its fixed windows (examples/helix_lm/data.c)."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    n = len(raw)
    n_train = n - n // 20
    span = n - n_train - (T + 1)
    for i in range(nw):
        off = int(float(i) * float(span) / float(nw - 1)) if nw > 1 else 0
        s = n_train + off
        yield list(raw[s:s + T]), list(raw[s + 1:s + T + 1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--data", default=None, help="the text (default: data/kjv.txt.gz)")
    ap.add_argument("--expect", type=float, default=None,
                    help="gad's validation loss: exit 1 if they differ by more than 1e-5")
    args = ap.parse_args()
    torch.set_num_threads(2)
    sd, meta = read_safetensors(args.file)
    d, layers = int(meta["d_model"]), int(meta["n_layers"])
    model = HelixLM(d, layers, int(meta.get("vocab", "256")), float(meta["norm_eps"]))
    model.load_state_dict(sd, strict=True)
    model.eval()
    T, nw = int(meta["seq"]), int(meta["val_windows"])
    data = args.data
    if data is None:
        import os
        data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data",
                            "kjv.txt.gz")
    total = 0.0
    with torch.no_grad():
        for x, y in validation_windows(data, nw, T):
            logits = model(torch.tensor([x]))
            total += F.cross_entropy(logits[0].double(), torch.tensor(y)).item()
    loss = total / nw
    print("torch %s: validation loss %.9g nats/byte over %d windows of %d bytes "
          "(D=%d, L=%d, step %s)" % (torch.__version__, loss, nw, T, d, layers,
                                      meta.get("step", "?")))
    if args.expect is not None:
        diff = abs(loss - args.expect)
        print("gad's %.9g: |difference| %.3g (%s 1e-5)" % (args.expect, diff,
                                                          "within" if diff <= 1e-5 else "beyond"))
        raise SystemExit(0 if diff <= 1e-5 else 1)


if __name__ == "__main__":
    main()
