#!/usr/bin/python3
"""Write golden_helix.txt: an end-to-end golden test in the llm.c style for
tests/test_golden.c. A two-layer HELIX language model (SPEC 4.5) on a fixed
batch: its initial parameters, the loss, every parameter's gradient, and the
losses of 10 AdamW steps, as PyTorch computes them in f32.

    /usr/bin/python3 tests/reference/make_golden.py > tests/reference/golden_helix.txt

Model: tokens [B, T+1] in [0, V); h = emb[tokens[:, :T]]; two HELIX blocks;
h = rms_norm(h) * gain; logits = h @ wout [D, V]; loss = mean cross-entropy
against tokens[:, 1:]. AdamW(lr 1e-2, betas 0.9/0.999, eps 1e-8, wd 0.01):
torch's update is g's formula (eps outside the square root, decay on the old
parameter).

Format: "param NAME RANK dims... values..." for each initial parameter,
"tokens B T+1 values...", "loss0 v", "grad NAME values..." (same order as the
params), "losses v0 ... v9" (loss before each of the 10 steps).
"""
import math
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(1129)
V, D, L, B, T = 16, 8, 2, 2, 6
EPS = 1e-5


def rms_norm(v):
    return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS)


def block(x, p):
    Bx, Tx, Dx = x.shape
    xn = rms_norm(x) * p["g1"]
    a = torch.sigmoid(torch.cat([xn, xn.new_ones(Bx, Tx, 1)], dim=-1) @ p["wa"])
    u = xn @ p["wb"]
    hs, h = [], torch.zeros_like(u[:, 0])
    for t in range(Tx):
        h = a[:, t] * h + u[:, t]
        hs.append(h)
    h = torch.stack(hs, dim=1)
    s2 = F.silu(h * p["g2"])
    out1 = x + s2 @ p["wo"]
    xn2 = rms_norm(out1) * p["g3"]
    f = F.silu(xn2 @ p["wf1"]) @ p["wf2"]
    return out1 + f * p["g4"]


params = {"emb": torch.randn(V, D) * 0.5}
for l in range(L):
    wa = torch.randn(D + 1, D) / math.sqrt(D)
    wa[D] = 3.0
    blk = {"wa": wa, "wb": torch.randn(D, D) / math.sqrt(D), "wo": torch.randn(D, D) / math.sqrt(D),
           "wf1": torch.randn(D, 2 * D) / math.sqrt(D), "wf2": torch.randn(2 * D, D) / math.sqrt(2 * D),
           "g1": 1 + 0.1 * torch.randn(D), "g2": 1 + 0.1 * torch.randn(D),
           "g3": 1 + 0.1 * torch.randn(D), "g4": 1 + 0.1 * torch.randn(D)}
    for k, v in blk.items():
        params["b%d.%s" % (l, k)] = v
params["gain"] = 1 + 0.1 * torch.randn(D)
params["wout"] = torch.randn(D, V) / math.sqrt(D)
for v in params.values():
    v.requires_grad_(True)
tokens = torch.randint(0, V, (B, T + 1))


def loss_fn():
    h = params["emb"][tokens[:, :T]]
    for l in range(L):
        h = block(h, {k: params["b%d.%s" % (l, k)] for k in
                      ("wa", "wb", "wo", "wf1", "wf2", "g1", "g2", "g3", "g4")})
    h = rms_norm(h) * params["gain"]
    logits = h @ params["wout"]
    return F.cross_entropy(logits.reshape(B * T, V), tokens[:, 1:].reshape(B * T))


out = sys.stdout
for name, v in params.items():
    print("param %s %d %s %s" % (name, v.dim(), " ".join(str(d) for d in v.shape),
                                " ".join(repr(float(x)) for x in v.detach().reshape(-1).tolist())),
          file=out)
print("tokens %d %d %s" % (B, T + 1, " ".join(str(int(t)) for t in tokens.reshape(-1).tolist())),
      file=out)
loss = loss_fn()
grads = torch.autograd.grad(loss, list(params.values()))
print("loss0 %r" % float(loss), file=out)
for name, g in zip(params, grads):
    print("grad %s %s" % (name, " ".join(repr(float(x)) for x in g.reshape(-1).tolist())), file=out)
opt = torch.optim.AdamW(params.values(), lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
losses = []
for step in range(10):
    opt.zero_grad()
    l = loss_fn()
    losses.append(float(l))
    l.backward()
    opt.step()
print("losses %s" % " ".join(repr(v) for v in losses), file=out)
