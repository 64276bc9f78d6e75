#!/usr/bin/env python3
"""half_compare.py: gad's ops on bf16 tensors against gad's f32 and
PyTorch's bf16 (and f32), alternated in one run, 2 threads each (issue 29).

    bench/half_compare.py [--build build] [--rounds 3] [--reps 7] [OP ...]

OPs: add gelu softmax sum (half-bench's header says what each times), on
16M elements, a new output each call. gad's side is build/bench/half-bench,
one process per case and round; torch runs in this process. Prints per op
the medians over the rounds of each side's per-call median, and the ratios
gad bf16 / gad f32 (the target: about 0.6 or less on the ops bound by
memory) and gad bf16 / torch bf16."""
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
DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def torch_case(op, dn, reps):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(16384, 1024, generator=g).to(DT[dn])
    y = torch.randn(16384, 1024, generator=g).to(DT[dn])
    ts = []
    for i in range(reps + 3):
        t0 = time.perf_counter()
        if op == "add":
            z = x + y
        elif op == "gelu":
            z = F.gelu(x, approximate="tanh")
        elif op == "softmax":
            z = torch.softmax(x, 1)
        else:
            z = x.sum()
        del z
        if i >= 3:
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("ops", nargs="*", default=["add", "gelu", "softmax", "sum"])
    a = ap.parse_args()
    torch.set_num_threads(2)
    exe = os.path.join(a.build, "bench", "half-bench")
    print("CPU:", subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                                 capture_output=True, text=True).stdout.strip(),
          "load:", open("/proc/loadavg").read().split()[:3], "torch", torch.__version__)
    for op in a.ops:
        res = {}
        for _ in range(a.rounds):
            for dn in ("f32", "bf16"):
                out = subprocess.run([exe, op, dn, str(a.reps)], capture_output=True, text=True,
                                     check=True)
                res.setdefault(("gad", dn), []).append(float(out.stdout.split()[2]))
                res.setdefault(("torch", dn), []).append(torch_case(op, dn, a.reps))
        m = {k: statistics.median(v) for k, v in res.items()}
        print(f"{op:8s} gad f32 {m['gad', 'f32']:7.2f} ms  gad bf16 {m['gad', 'bf16']:7.2f} ms"
              f"  torch f32 {m['torch', 'f32']:7.2f} ms  torch bf16 {m['torch', 'bf16']:7.2f} ms"
              f"   gad bf16/f32 {m['gad', 'bf16'] / m['gad', 'f32']:.2f}"
              f"  gad/torch bf16 {m['gad', 'bf16'] / m['torch', 'bf16']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
