#!/usr/bin/env python3
"""select_ref.py: PyTorch's side of select-bench (bench/select.sh): the same
cases, f32, the same sizes, one JSON line per case (median, min, max in us
over 21 calls after 3 warm-up calls). Threads: torch.set_num_threads(2)
unless SELECT_THREADS says otherwise."""
import json
import os
import sys
import time

import torch

torch.set_num_threads(int(os.environ.get("SELECT_THREADS", "2")))
rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
cols = 4096
g = torch.Generator().manual_seed(1)
x = torch.randn(rows, cols, generator=g)
y = torch.randn(rows, cols, generator=g)
row = torch.randn(cols, generator=g)
mask = y > 0
lo = torch.full((rows, cols), -0.5)
hi = torch.full((cols,), 0.5)
sq = torch.randn(2048, 2048, generator=g)
cases = [
    ("lt", lambda: torch.lt(x, y)),
    ("lt_scalar", lambda: torch.lt(x, 0.25)),
    ("eq_bcast_row", lambda: torch.eq(x, row)),
    ("where", lambda: torch.where(mask, x, y)),
    ("masked_fill", lambda: x.masked_fill(mask, -1e9)),
    ("isnan", lambda: torch.isnan(x)),
    ("logical_and", lambda: torch.logical_and(mask, mask)),
    ("any_axis1", lambda: torch.any(mask, dim=1)),
    ("tril_2048", lambda: torch.tril(sq, 0)),
    ("clamp_tensor", lambda: torch.clamp(x, lo, hi)),
]
for name, f in cases:
    for _ in range(3):
        f()
    ts = []
    for _ in range(21):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e6)
    ts.sort()
    print(json.dumps({"impl": "torch", "case": name, "median_us": round(ts[10], 1),
                      "min_us": round(ts[0], 1), "max_us": round(ts[-1], 1)}))
