#!/usr/bin/env python3
"""pool_compare.py: the pooling and image shape ops of issue 28, gad
(build/bench/pool-bench, one process per run) against PyTorch (in this
process) alternately, 2 threads each, medians over the rounds.

    /work/venv/bin/python bench/pool_compare.py [--rounds 5] [--bench PATH] [cases]
"""
import argparse, os, subprocess, sys, time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch
import torch.nn.functional as F

torch.set_num_threads(2)

SHAPES = {"maxpool": (32, 64, 112, 112), "avgpool": (32, 64, 112, 112),
          "gap": (32, 512, 7, 7), "padrefl": (32, 64, 56, 56),
          "unfold": (8, 64, 56, 56), "bilinear": (16, 64, 56, 56)}


def torch_case(case, reps):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*SHAPES[case], generator=g, requires_grad=case != "padrefl")
    f = {"maxpool": lambda x: F.max_pool2d(x, 3, 2, 1),
         "avgpool": lambda x: F.avg_pool2d(x, 2),
         "gap": lambda x: F.adaptive_avg_pool2d(x, 1),
         "padrefl": lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect"),
         "unfold": lambda x: F.unfold(x, 3, padding=1),
         "bilinear": lambda x: F.interpolate(x, size=(112, 112), mode="bilinear",
                                             align_corners=False)}[case]
    w = None
    ts = []
    for i in range(reps + 3):
        t0 = time.perf_counter()
        y = f(x)
        if x.requires_grad:
            if w is None:
                w = torch.randn(y.shape, generator=g)
            torch.autograd.grad(y, x, w)
        ts.append((time.perf_counter() - t0) * 1e3)
    ts = sorted(ts[3:])
    return ts[len(ts) // 2]


def gad_case(bench, case, reps):
    out = subprocess.run([bench, case, str(reps)], capture_output=True, text=True,
                         env=dict(os.environ, GAD_NUM_THREADS="2"))
    if out.returncode:
        sys.exit(f"{bench} {case}: {out.stderr.strip()}")
    return float(out.stdout.split()[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--bench", default="build/bench/pool-bench")
    ap.add_argument("cases", nargs="*", default=list(SHAPES))
    a = ap.parse_args()
    res = {c: ([], []) for c in a.cases}
    for _ in range(a.rounds):
        for c in a.cases:
            res[c][0].append(gad_case(a.bench, c, a.reps))
            res[c][1].append(torch_case(c, a.reps))
    print(f"torch {torch.__version__}, 2 threads, medians of {a.rounds} rounds "
          f"(each the median of {a.reps} calls)")
    print(f"{'case':10s} {'gad ms':>9s} {'torch ms':>9s} {'gad/torch':>9s}")
    for c in a.cases:
        gm = sorted(res[c][0])[len(res[c][0]) // 2]
        tm = sorted(res[c][1])[len(res[c][1]) // 2]
        print(f"{c:10s} {gm:9.3f} {tm:9.3f} {gm / tm:9.2f}")


if __name__ == "__main__":
    main()
