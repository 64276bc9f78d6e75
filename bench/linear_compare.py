#!/usr/bin/env python3
"""linear_compare.py: a linear layer with its bias and activation, forward
and backward, gad (fused: gad_linear_act; composed: matmul, add, act)
against PyTorch eager (F.linear + act) and torch.compile, alternated in one
run (issue 31).

    bench/linear_compare.py [--build build] [--rounds 3] [--reps 20] [--threads 1] [CASE ...]

CASEs: mlp gpt wide (linear-bench's header gives the shapes). gad's side is
build/bench/linear-bench, one process per round and form; torch runs in
this process, compiled once per case before its rounds (the compilation is
not timed). Prints per case the medians over the rounds of each side's
per-call median, and gad fused over the fastest torch."""
import argparse
import os
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "build"))
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("cases", nargs="*", default=["mlp", "gpt", "wide"])
A = ap.parse_args()
os.environ["OMP_NUM_THREADS"] = str(A.threads)
# as bench/compare: torch's OpenMP workers must not spin on the cores that
# gad's process, run next, needs
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CASES = {"mlp": (128, 784, 512, "relu"), "gpt": (4096, 256, 1024, "gelu"),
         "wide": (2048, 1024, 4096, "gelu")}


def layer(x, w, b, act):
    y = F.linear(x, w, b)  # w [out, in]: PyTorch's layout
    return F.relu(y) if act == "relu" else F.gelu(y, approximate="tanh")


def torch_time(fn, c, reps):
    rows, i, o, act = CASES[c]
    g = torch.Generator().manual_seed(0)
    x = torch.randn(rows, i, generator=g).requires_grad_()
    w = (torch.randn(o, i, generator=g) * 0.05).requires_grad_()
    b = torch.randn(o, generator=g).requires_grad_()
    seed = torch.randn(rows, o, generator=g)
    ts, w0, k = [], time.perf_counter(), 0
    while k < 3 or time.perf_counter() - w0 < 0.3:  # warm-up, as linear-bench's
        torch.autograd.grad(fn(x, w, b, act), (x, w, b), seed)
        k += 1
    for k in range(reps):
        t0 = time.perf_counter()
        y = fn(x, w, b, act)
        torch.autograd.grad(y, (x, w, b), seed)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    torch.set_num_threads(A.threads)
    exe = os.path.join(A.build, "bench", "linear-bench")
    cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                         capture_output=True, text=True).stdout.strip()
    print(f"CPU: {cpu}; threads {A.threads}; torch {torch.__version__}; "
          f"load {open('/proc/loadavg').read().split()[:3]}")
    for c in A.cases:
        compiled = torch.compile(layer)
        torch_time(compiled, c, 2)  # compile outside the timing
        res = {"fused": [], "composed": [], "torch": [], "compile": []}
        for _ in range(A.rounds):
            for form in ("fused", "composed"):
                out = subprocess.run([exe, c, form, str(A.threads), str(A.reps)],
                                     capture_output=True, text=True, check=True)
                res[form].append(float(out.stdout.split()[2]))
            res["torch"].append(torch_time(layer, c, A.reps))
            res["compile"].append(torch_time(compiled, c, A.reps))
        m = {k: statistics.median(v) for k, v in res.items()}
        best = min(m["torch"], m["compile"])
        print(f"{c:5s} gad fused {m['fused']:8.3f} ms  composed {m['composed']:8.3f} ms  "
              f"torch {m['torch']:8.3f} ms  torch.compile {m['compile']:8.3f} ms  "
              f"fused/composed {m['fused'] / m['composed']:.3f}  fused/best torch {m['fused'] / best:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
