#!/usr/bin/env python3
"""norm_compare.py: gad's batch, group and instance norm against PyTorch's,
alternated in one run, 2 threads each (issue 28).

    bench/norm_compare.py [--build build] [--rounds 3] [--reps 7] [CASE ...]

CASEs: bn gn in (norm-bench's header says what each times). gad's side is
build/bench/norm-bench, one process per round; torch runs in this process.
Prints per case the medians over the rounds of each side's per-call median
and their ratio (gad / torch)."""
import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torch_case(c, reps):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 64, 56, 56, generator=g).requires_grad_()
    w = torch.randn(32, 64, 56, 56, generator=g)
    weight, bias = torch.ones(64), torch.zeros(64)
    rmean, rvar = torch.zeros(64), torch.ones(64)
    ts = []
    for i in range(reps + 3):
        t0 = time.perf_counter()
        if c == "bn":
            y = F.batch_norm(x, rmean, rvar, weight, bias, True, 0.1, 1e-5)
        elif c == "gn":
            y = F.group_norm(x, 8, weight, bias, 1e-5)
        else:
            y = F.instance_norm(x, None, None, weight, bias, True, 0.1, 1e-5)
        torch.autograd.grad(y, x, w)
        if i >= 3:
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("cases", nargs="*", default=["bn", "gn", "in"])
    a = ap.parse_args()
    torch.set_num_threads(2)
    exe = os.path.join(a.build, "bench", "norm-bench")
    print("CPU:", subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                                 capture_output=True, text=True).stdout.strip(),
          "load:", open("/proc/loadavg").read().split()[:3])
    for c in a.cases:
        gs, ts = [], []
        for _ in range(a.rounds):
            out = subprocess.run([exe, c, str(a.reps)], capture_output=True, text=True, check=True)
            gs.append(float(out.stdout.split()[1]))
            ts.append(torch_case(c, a.reps))
        g, t = statistics.median(gs), statistics.median(ts)
        print(f"{c:3s} gad {g:8.2f} ms  torch {t:8.2f} ms  gad/torch {g / t:.2f}"
              f"   rounds gad {gs} torch {[round(v, 1) for v in ts]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
