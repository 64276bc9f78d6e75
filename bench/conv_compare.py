#!/usr/bin/env python3
"""conv_compare.py: gad's convolutions against PyTorch's (oneDNN), alternated
in one run, 2 threads each, one process per measurement (issue 28).

    bench/conv_compare.py [--build build] [--rounds 5] [--reps 10] [CASE ...]

CASEs: conv3x3 depthwise conv1x1 (forward + backward: the input's and the
weight's gradients, seeded with a random tensor; batch 32, 64 -> 64
channels, 56x56, f32, no bias), and fwd-<case> for the forward alone. Prints
per case the medians over the rounds of each side's per-call median, their
ratio (gad / torch) and, for conv3x3, the fraction of the FMA peak given by
--peak-gflops (default: 2 cores x 2.3 GHz x 64 f32 FLOP/cycle, two AVX-512
FMA units). The torch side runs this file with --torch (PYTHON, default
/work/venv/bin/python)."""
import json
import os
import statistics
import subprocess
import sys

CASES = ["conv3x3", "depthwise", "conv1x1"]


def torch_side(case, reps, threads):
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import time
    import torch
    torch.set_num_threads(threads)
    fwd_only = case.startswith("fwd-")
    k = case[4:] if fwd_only else case
    N, C, H, W = 32, 64, 56, 56
    dw, one = k == "depthwise", k == "conv1x1"
    ks = 1 if one else 3
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, C, H, W, generator=g).requires_grad_()
    w = (0.05 * torch.randn(C, 1 if dw else C, ks, ks, generator=g)).requires_grad_()
    seed = torch.randn(N, C, H, W, generator=g)
    pad = 0 if one else 1
    ts, cs = [], []
    for i in range(reps + 2):
        t0, c0 = time.perf_counter(), time.process_time()
        y = torch.nn.functional.conv2d(x, w, None, 1, pad, 1, C if dw else 1)
        if not fwd_only:
            gx, gw = torch.autograd.grad(y, (x, w), seed)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if i >= 2:
            ts.append(dt)
            cs.append(dc)
    ts.sort()
    cs.sort()
    print(json.dumps({"impl": "torch", "case": case, "median_ms": 1e3 * ts[len(ts) // 2],
                      "min_ms": 1e3 * ts[0], "max_ms": 1e3 * ts[-1],
                      "cpu_ms": 1e3 * cs[len(cs) // 2], "threads": threads,
                      "torch": torch.__version__}))


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv):
    if "--torch" in argv:
        a = [x for x in argv if x != "--torch"]
        torch_side(a[0], int(a[1]), int(a[2]))
        return
    build, rounds, reps, threads = "build", 5, 10, 2
    peak = 2 * 2.3 * 64
    cases = []
    i = 0
    while i < len(argv):
        if argv[i] == "--build":
            build = argv[i + 1]; i += 2
        elif argv[i] == "--rounds":
            rounds = int(argv[i + 1]); i += 2
        elif argv[i] == "--reps":
            reps = int(argv[i + 1]); i += 2
        elif argv[i] == "--peak-gflops":
            peak = float(argv[i + 1]); i += 2
        else:
            cases.append(argv[i]); i += 1
    cases = cases or CASES
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")
    py = os.environ.get("PYTHON", "/work/venv/bin/python")
    exe = os.path.join(build, "bench", "gad-conv-bench")
    for case in cases:
        gs, ts, gc, tc = [], [], [], []
        for r in range(rounds):
            gj = run([exe, case, str(reps), str(threads)], env)
            tj = run([py, __file__, "--torch", case, str(reps), str(threads)], env)
            gs.append(gj["median_ms"]), gc.append(gj["cpu_ms"])
            ts.append(tj["median_ms"]), tc.append(tj["cpu_ms"])
        g, t = statistics.median(gs), statistics.median(ts)
        line = f"{case:16s} gad {g:8.2f} ms  torch {t:8.2f} ms  gad/torch {g / t:5.2f}"
        cg, ct = statistics.median(gc), statistics.median(tc)
        line += f"  | CPU time gad {cg:8.2f} ms torch {ct:8.2f} ms ratio {cg / ct:5.2f}"
        if case.endswith("conv3x3"):
            flop = 2 * 32 * 64 * 64 * 9 * 56 * 56 * (1 if case.startswith("fwd-") else 3)
            line += f"  gad {flop / g / 1e6:6.1f} GFLOP/s = {flop / g / 1e6 / peak:5.1%} of peak {peak:.0f}"
            line += f" (torch {flop / t / 1e6 / peak:5.1%})"
            # per CPU-second against one core's peak: the kernels' efficiency
            # while they run, whatever the neighbours take
            line += f"; per CPU-second {flop / cg / 1e6 / (peak / 2):5.1%} of a core's peak"
            line += f" (torch {flop / ct / 1e6 / (peak / 2):5.1%})"
        print(line, flush=True)
        print("   rounds gad", [round(v, 1) for v in gs], "torch", [round(v, 1) for v in ts],
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
