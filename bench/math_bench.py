#!/usr/bin/env python3
"""torch's side of bench/math_compare: as math_bench.c (same ops, sizes,
input distributions, a new output each call, 2 threads or
$MATH_BENCH_THREADS, cpu_ms the process CPU time per call); one JSON line
per op. Usage: math_bench.py n reps op..."""
import json
import os
import sys
import time

import torch

F = torch.nn.functional
OPS = {
    "sin": torch.sin, "cos": torch.cos, "erf": torch.erf,
    "gelu_erf": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "exp2": torch.exp2, "log1p": torch.log1p, "expm1": torch.expm1,
    "rsqrt": torch.rsqrt, "mish": F.mish,
}


def main():
    n, reps = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(int(os.environ.get("MATH_BENCH_THREADS", "2")))
    torch.manual_seed(1)
    x = torch.randn(n) * 2
    u = torch.rand(n) * 3.99 - 0.99
    for op in sys.argv[3:]:
        f = OPS[op]
        inp = u if op == "log1p" else x
        with torch.no_grad():
            for _ in range(3):
                f(inp)
            t = []
            c0 = time.process_time()
            for _ in range(reps):
                t0 = time.perf_counter()
                y = f(inp)
                t.append((time.perf_counter() - t0) * 1e3)
                del y
        cpu = (time.process_time() - c0) * 1e3 / reps
        t.sort()
        print(json.dumps({"side": "torch", "op": op, "n": n, "median_ms": round(t[reps // 2], 3),
                          "min_ms": round(t[0], 3), "max_ms": round(t[-1], 3), "cpu_ms": round(cpu, 3),
                          "torch": torch.__version__}), flush=True)


main()
