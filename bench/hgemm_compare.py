#!/usr/bin/env python3
"""hgemm_compare.py: square matmul in bf16 and f32, gad against PyTorch,
alternated in one run (issue 29).

    bench/hgemm_compare.py [--build build] [--rounds 3] [--sizes 256,...]
                           [--threads 1,2] [--f16]

For each size and thread count, each round runs gad's bf16, torch's bf16,
gad's f32 and torch's f32 one after the other (gad: build/bench/hgemm-bench,
one process per measurement; torch in this process), each the median of its
reps after a warm-up (two calls; gad: and 0.3 s from its start); the table gives the medians over the rounds in
GFLOP/s (2 N^3 per product), the ratios, and the fraction of the bf16 peak
(threads x the one-core VDPBF16PS rate of `hgemm-bench peak`, register-only
loops timed in CPU time, and the same for f32 FMAs; the peak taken is the
faster of the two ways to run bf16). The host may be loaded: the ratios of
one run are the figures to quote, with the load printed beside them
(--cputime: one-thread rows timed in CPU time on both sides)."""
import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")
import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def reps_for(n):
    return max(2, min(50, int(3e9 / (2 * n ** 3))))


def torch_gflops(n, dt, reps, cpu=False):
    g = torch.Generator().manual_seed(0)
    a = (torch.rand(n, n, generator=g) * 2 - 1).to(dt)
    b = (torch.rand(n, n, generator=g) * 2 - 1).to(dt)
    ts = []
    clock = time.process_time if cpu else time.perf_counter
    for i in range(reps + 2):
        t0 = clock()
        torch.matmul(a, b)
        if i >= 2:
            ts.append(clock() - t0)
    return 2 * n ** 3 / statistics.median(ts) * 1e-9


def gad_gflops(exe, n, threads, dt, reps, cpu=False):
    env = dict(os.environ, HB_CPUTIME="1") if cpu else None
    out = subprocess.run([exe, str(n), str(threads), dt, str(reps)], capture_output=True,
                         text=True, check=True, env=env).stdout.split()
    return float(out[1]), out[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes", default="256,512,1024,2048,4096")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--f16", action="store_true", help="also gad's f16 (torch's f16 matmul too)")
    ap.add_argument("--cputime", action="store_true",
                    help="time the one-thread rows in process CPU time on both sides "
                         "(steadier on a loaded host; two-thread rows stay wall time)")
    a = ap.parse_args()
    exe = os.path.join(a.build, "bench", "hgemm-bench")
    cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                         capture_output=True, text=True).stdout.strip()
    peak = subprocess.run([exe, "peak"], capture_output=True, text=True, check=True,
                          env=dict(os.environ, HB_CPUTIME="1")).stdout.split()
    pf, pb = float(peak[0]), float(peak[1])
    print(f"CPU: {cpu}; torch {torch.__version__}; load {open('/proc/loadavg').read().split()[:3]}")
    print(f"one-core peaks (register loops): f32 FMA {pf:.1f} GFLOP/s, VDPBF16PS {pb:.1f} GFLOP/s")
    kinds = [("bf16", torch.bfloat16), ("f32", torch.float32)]
    if a.f16:
        kinds.append(("f16", torch.float16))
    print(f"{'N':>5} {'thr':>3} " + " ".join(f"{'gad ' + k:>9} {'torch ' + k:>10}" for k, _ in kinds)
          + "  gad/torch bf16  gad bf16/f32  bf16 %peak  path")
    for t in [int(x) for x in a.threads.split(",")]:
        torch.set_num_threads(t)
        for n in [int(x) for x in a.sizes.split(",")]:
            reps = reps_for(n)
            res = {k: ([], []) for k, _ in kinds}
            path = ""
            for _ in range(a.rounds):
                for k, tdt in kinds:
                    cpu = a.cputime and t == 1
                    g, p = gad_gflops(exe, n, t, k, reps, cpu)
                    if k == "bf16":
                        path = p
                    res[k][0].append(g)
                    res[k][1].append(torch_gflops(n, tdt, reps, cpu))
            med = {k: (statistics.median(v[0]), statistics.median(v[1])) for k, v in res.items()}
            gb, tb = med["bf16"]
            gf, _ = med["f32"]
            peak_b = max(pb, pf) * t  # the faster of the two ways to run bf16
            print(f"{n:5d} {t:3d} " + " ".join(f"{med[k][0]:9.1f} {med[k][1]:10.1f}" for k, _ in kinds)
                  + f"  {gb / tb:14.2f}  {gb / gf:12.2f}  {100 * gb / peak_b:9.0f}%  {path}",
                  flush=True)
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
