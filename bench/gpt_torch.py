#!/usr/bin/env python3
"""The gpt example's model (examples/gpt/gpt_model.c) in PyTorch, against gad.

Both sides start from the same weights and train on the same batches:
build/bench/gpt-bench dump writes gad's initial weights, every step's window
offsets and the validation windows to a safetensors file, read here (no
safetensors package needed). Same model, same AdamW (lr 1e-3, betas 0.9 /
0.99, eps 1e-8, weight decay 0.01 on the matrices and the embedding), same
clipping (global norm 1), 2 threads on both sides.

    /work/venv/bin/python bench/gpt_torch.py [--rounds 3] [--steps 10]
        [--loss-steps 100] [--sizes example,small] [--no-compile] [--no-loss]
        [--gad-env GAD_SPIN_US=0]

For each size (example: D=256, 4 layers, 8 heads, T=128, batch 16; small:
D=128, 4 layers, 4 heads, T=64, batch 16) it times, in alternation, round
after round: gad (gpt-bench time, a process), torch eager with attention
composed of matmul + mask + softmax, torch eager with
F.scaled_dot_product_attention, and torch.compile of the SDPA model. Each
figure is the median step time of --steps steps after 3 warm-up steps
(tokens/s = B*T / median); the table gives the median over the rounds.
Then the validation loss after --loss-steps steps, gad against torch
(composed and SDPA). One JSON line per figure, then a summary.
"""
import argparse
import gzip
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as bench/compare: no spinning workers
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"example": dict(d=256, layers=4, batch=16, seq=128),
         "small": dict(d=128, layers=4, batch=16, seq=64)}
LR, BETAS, EPS, WD, CLIP, NORM_EPS = 1e-3, (0.9, 0.99), 1e-8, 0.01, 1.0, 1e-5


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        dt = {"F32": np.float32, "I64": np.int64, "F64": np.float64}[t["dtype"]]
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dt).reshape(t["shape"])
    return out


def load_text():
    data = np.frombuffer(gzip.open(os.path.join(ROOT, "data", "kjv.txt.gz")).read(),
                         dtype=np.uint8)
    return torch.from_numpy(data.astype(np.int64))


class GPT(torch.nn.Module):
    """gpt_model.c's model: pre-norm blocks of rms_norm * g1 -> qkv -> rope
    (split halves, base 10000) -> causal attention -> wo, rms_norm * g2 ->
    silu MLP of 4D; rms_norm * gain; logits = h emb^T + bout. Weights are
    stored as gad's ([in, out] matrices: x @ w)."""

    def __init__(self, w, d, layers, attn):
        super().__init__()
        self.d, self.layers, self.attn = d, layers, attn
        self.heads = d // 32 if d % 32 == 0 else 1
        self.p = torch.nn.ParameterDict(
            {k.replace(".", "_"): torch.nn.Parameter(torch.tensor(np.array(v)))
             for k, v in w.items() if not k.startswith(("batch.", "val."))})

    @staticmethod
    def rms(x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + NORM_EPS)

    def tables(self, T, hd, device):
        i = torch.arange(hd // 2, dtype=torch.float64)
        inv = 10000.0 ** (-2.0 * i / hd)
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        return ang.cos().float(), ang.sin().float()

    def forward(self, idx):
        B, T = idx.shape
        D, H = self.d, self.heads
        hd = D // H
        cos, sin = self.tables(T, hd, idx.device)
        mask = torch.full((T, T), float("-inf")).triu(1)
        p = self.p
        h = p["emb"][idx]
        for l in range(self.layers):
            a = self.rms(h) * p["b%d_g1" % l]
            qkv = (a @ p["b%d_wqkv" % l]).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            if self.attn == "sdpa":
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd)) + mask
                o = torch.softmax(s, -1) @ v
            o = o.permute(0, 2, 1, 3).reshape(B, T, D)
            h = h + o @ p["b%d_wo" % l]
            f = self.rms(h) * p["b%d_g2" % l]
            h = h + F.silu(f @ p["b%d_w1" % l]) @ p["b%d_w2" % l]
        h = self.rms(h) * p["gain"]
        return h @ p["emb"].t() + p["bout"]

    @staticmethod
    def rope(x, cos, sin):
        h2 = x.shape[-1] // 2
        x1, x2 = x[..., :h2], x[..., h2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def optimizer(model):
    decay, keep = [], []
    for k, v in model.p.items():
        (keep if (k.startswith("b") and k[1].isdigit() and "_g" in k) or k in ("gain", "bout")
         else decay).append(v)
    return torch.optim.AdamW([{"params": decay, "weight_decay": WD},
                              {"params": keep, "weight_decay": 0.0}],
                             lr=LR, betas=BETAS, eps=EPS, foreach=False)


def batch(text, offs, T):
    o = torch.as_tensor(np.array(offs))[:, None] + torch.arange(T + 1)[None, :]
    w = text[o]
    return w[:, :T], w[:, 1:]


def train_step(model, fwd, opt, x, y):
    loss = F.cross_entropy(fwd(x).reshape(-1, 256), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
    opt.step()
    return loss


def val_loss(model, text, vals, T, B):
    tot, n = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(vals), B):
            x, y = batch(text, vals[i:i + B], T)
            tot += F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1),
                                   reduction="sum").item()
            n += y.numel()
    return tot / n


def gad_run(args, mode, sz, steps):
    cmd = [args.gad, mode, "--d", str(sz["d"]), "--layers", str(sz["layers"]), "--batch",
           str(sz["batch"]), "--seq", str(sz["seq"]), "--steps", str(steps), "--threads", "2"]
    env = dict(os.environ)
    for kv in args.gad_env:
        k, _, v = kv.partition("=")
        env[k] = v
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_time(name, model, fwd, text, offs, sz, steps, w0):
    with torch.no_grad():
        for k, v in model.p.items():
            v.copy_(w0[k])
    opt = optimizer(model)
    dts = []
    for s in range(steps + 3):
        x, y = batch(text, offs[s], sz["seq"])
        t0 = time.perf_counter()
        train_step(model, fwd, opt, x, y)
        if s >= 3:
            dts.append(time.perf_counter() - t0)
    med = statistics.median(dts)
    return {"impl": name, "tokens_per_s": round(sz["batch"] * sz["seq"] / med, 1),
            "step_ms": round(1e3 * med, 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--loss-steps", type=int, default=100)
    ap.add_argument("--sizes", default="example,small")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-loss", action="store_true")
    ap.add_argument("--gad", default=os.path.join(ROOT, "build", "bench", "gpt-bench"))
    ap.add_argument("--gad-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment of gad's runs, e.g. GAD_SPIN_US=0 (no spinning "
                         "workers: gad's counterpart of OMP_WAIT_POLICY=PASSIVE)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    text = load_text()
    summary = []
    for size in args.sizes.split(","):
        sz = SIZES[size]
        path = "/tmp/gpt_bench_%s_%d.safetensors" % (size, os.getpid())
        steps_needed = max(args.steps + 3, args.loss_steps)
        subprocess.run([args.gad, "dump", path, "--d", str(sz["d"]), "--layers",
                        str(sz["layers"]), "--batch", str(sz["batch"]), "--seq", str(sz["seq"]),
                        "--steps", str(steps_needed)], check=True)
        st = read_safetensors(path)
        os.remove(path)
        offs, vals = st["batch.offsets"], st["val.offsets"]
        models = {}
        w0 = {}
        for attn in ("composed", "sdpa"):
            models[attn] = GPT(st, sz["d"], sz["layers"], attn)
        w0 = {k: v.detach().clone() for k, v in models["sdpa"].p.items()}
        fwds = {"torch_composed": (models["composed"], models["composed"]),
                "torch_sdpa": (models["sdpa"], models["sdpa"])}
        if not args.no_compile:
            try:
                fwds["torch_compile"] = (models["sdpa"], torch.compile(models["sdpa"]))
            except Exception as e:  # noqa: BLE001 (reported, then skipped)
                print(json.dumps({"torch_compile": "unavailable: %s" % e}), flush=True)
        res = {k: [] for k in ["gad"] + list(fwds)}
        for r in range(args.rounds):
            g = gad_run(args, "time", sz, args.steps)
            g["round"] = r
            print(json.dumps(g), flush=True)
            res["gad"].append(g["tokens_per_s"])
            for name, (model, fwd) in list(fwds.items()):
                try:
                    t = torch_time(name, model, fwd, text, offs, sz, args.steps, w0)
                except Exception as e:  # noqa: BLE001 (torch.compile without a compiler)
                    print(json.dumps({name: "failed: %s" % str(e).splitlines()[0]}), flush=True)
                    del fwds[name]
                    del res[name]
                    continue
                t.update(size=size, round=r)
                print(json.dumps(t), flush=True)
                res[name].append(t["tokens_per_s"])
        med = {k: statistics.median(v) for k, v in res.items() if v}
        eager = max(med.get("torch_composed", 0), med.get("torch_sdpa", 0))
        line = {"size": size, **{k: round(v, 1) for k, v in med.items()},
                "gad_over_best_eager": round(med["gad"] / eager, 3) if eager else None}
        if "torch_compile" in med:
            line["gad_over_compile"] = round(med["gad"] / med["torch_compile"], 3)
        if not args.no_loss:
            g = gad_run(args, "loss", sz, args.loss_steps)
            line["gad_val_loss"] = g["val_loss"]
            for attn in ("composed", "sdpa"):
                model = models[attn]
                with torch.no_grad():
                    for k, v in model.p.items():
                        v.copy_(w0[k])
                opt = optimizer(model)
                for s in range(args.loss_steps):
                    x, y = batch(text, offs[s], sz["seq"])
                    train_step(model, model, opt, x, y)
                line["torch_%s_val_loss" % attn] = round(
                    val_loss(model, text, vals, sz["seq"], sz["batch"]), 6)
            line["loss_steps"] = args.loss_steps
        print(json.dumps(line), flush=True)
        summary.append(line)
    print("summary:")
    for line in summary:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
