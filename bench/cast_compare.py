#!/usr/bin/env python3
"""cast_compare.py: gad's f32 <-> bf16/f16 casts against PyTorch's .to(),
alternated in one run, 2 threads each (issue 29).

    bench/cast_compare.py [--build build] [--rounds 5] [--reps 11] [CASE ...]

CASEs: f32-bf16 bf16-f32 f32-f16 f16-f32 (16M elements, a new output each
call; cast-bench's header). gad's side is build/bench/cast-bench, one
process per round (and one with the portable AVX-512F path forced); torch
runs in this process, both as .to() (a new output) and as copy_() into
one kept output (no allocation: gad's caching allocator hands its casts a
reused buffer, torch's .to maps fresh pages). Prints the medians over the
rounds of each side's per-call median, their ratios and gad's GB/s."""
import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def torch_case(c, reps, into=False):
    """x.to(dtype), a new output each call; into: y.copy_(x) into one
    preallocated y (no allocation or first-touch page faults)."""
    a, b = c.split("-")
    x = torch.randn(1 << 24, generator=torch.Generator().manual_seed(0)).to(DT[a])
    y0 = torch.empty(1 << 24, dtype=DT[b])
    ts = []
    for i in range(reps + 3):
        t0 = time.perf_counter()
        if into:
            y0.copy_(x)
        else:
            y = x.to(DT[b])
            del y
        if i >= 3:
            ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("cases", nargs="*", default=["f32-bf16", "bf16-f32", "f32-f16", "f16-f32"])
    a = ap.parse_args()
    torch.set_num_threads(2)
    exe = os.path.join(a.build, "bench", "cast-bench")
    print("CPU:", subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                                 capture_output=True, text=True).stdout.strip(),
          "load:", open("/proc/loadavg").read().split()[:3], "torch", torch.__version__)
    for c in a.cases:
        gs, gp, ts, ti, path = [], [], [], [], ""
        for _ in range(a.rounds):
            out = subprocess.run([exe, c, str(a.reps)], capture_output=True, text=True,
                                 check=True).stdout.split()
            gs.append(float(out[1]))
            path = out[3]
            ts.append(torch_case(c, a.reps))
            ti.append(torch_case(c, a.reps, into=True))
            out = subprocess.run([exe, c, str(a.reps), "portable"], capture_output=True,
                                 text=True, check=True).stdout.split()
            gp.append(float(out[1]))
        g, t, p = statistics.median(gs), statistics.median(ts), statistics.median(gp)
        ci = statistics.median(ti)
        gb = (1 << 24) * 6 / (g * 1e-3) / 1e9
        print(f"{c:8s} gad {g:7.2f} ms ({path}, {gb:5.1f} GB/s)  torch .to {t:7.2f} ms  "
              f"gad/torch {g / t:.2f}  torch copy_ into a kept output {ci:7.2f} ms "
              f"(gad/that {g / ci:.2f})  gad portable path {p:7.2f} ms ({p / t:.2f})"
              f"   rounds gad {gs} torch {[round(v, 2) for v in ts]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
