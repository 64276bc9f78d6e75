#!/usr/bin/env python3
"""torch's side of bench/sort_bench.c (same cases, same sizes, f32, 2
threads): one JSON line per case, the median, min and max per-call ms.
The sampler is the usual PyTorch recipe (temperature, topk mask, sort,
softmax, cumsum, mask, multinomial), written for this comparison."""
import json
import sys
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(7)
REPS = 15
only = sys.argv[1] if len(sys.argv) > 1 else None


def run(name, f):
    if only and only not in name:
        return
    for _ in range(3):
        f()
    t = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    t.sort()
    print(json.dumps({"case": name, "ms": round(t[REPS // 2], 4), "min": round(t[0], 4),
                      "max": round(t[-1], 4)}), flush=True)


def sample(logits, temperature, top_k, top_p):
    x = logits / temperature
    if top_k:
        kth = torch.topk(x, top_k, -1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    if top_p < 1:
        s, i = torch.sort(x, -1, descending=True)
        c = torch.softmax(s, -1).cumsum(-1)
        drop = (c - torch.softmax(s, -1)) >= top_p  # keep up to the one reaching p
        s = s.masked_fill(drop, float("-inf"))
        x = torch.full_like(x, float("-inf")).scatter(-1, i, s)
    return torch.multinomial(torch.softmax(x, -1), 1)


logits = torch.randn(16, 50257) * 3
probs = torch.softmax(logits, -1)
v1m = torch.randn(1 << 20)
a = torch.randn(4096, 1024)
with torch.no_grad():
    run("topk50_16x50257", lambda: torch.topk(logits, 50, -1))
    run("sort_1M", lambda: torch.sort(v1m))
    run("sort_1M_stable", lambda: torch.sort(v1m, stable=True))
    run("sort_16x50257", lambda: torch.sort(logits, -1))
    run("cumsum_16x50257_last", lambda: torch.cumsum(logits, -1))
    run("cumsum_4096x1024_dim0", lambda: torch.cumsum(a, 0))
    run("multinomial_16x50257", lambda: torch.multinomial(probs, 1, True))
    run("sample_topk50_topp0.9_16x50257", lambda: sample(logits, 0.8, 50, 0.9))
    run("sample_topp0.9_16x50257", lambda: sample(logits, 0.8, 0, 0.9))
    # integers (gad's sort is stable: torch's stable sort beside its default)
    ids = (logits * 1e4).long()
    ids1m = (v1m * 3e4).long()
    cnt = (a * 100).long()
    mask = torch.randn(16, 2048) > -1
    run("i64_sort_1M", lambda: torch.sort(ids1m))
    run("i64_sort_1M_stable", lambda: torch.sort(ids1m, stable=True))
    run("i64_argsort_16x50257", lambda: torch.argsort(ids, dim=-1, stable=True))
    run("i64_topk50_16x50257", lambda: torch.topk(ids, 50, -1))
    run("i64_argmax_16x50257", lambda: torch.argmax(ids, -1))
    run("bool_cumsum_16x2048_last", lambda: torch.cumsum(mask, -1))
    run("i64_cumsum_4096x1024_dim0", lambda: torch.cumsum(cnt, 0))
