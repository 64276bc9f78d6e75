#!/usr/bin/env python3
"""cnn_torch.py: the cnn example's training step (examples/cnn/cnn.c) against
the same network in PyTorch, eager and torch.compile, alternated in one run.

The network: conv3x3 3->16 (no bias), BN, ReLU; a residual block of two
conv3x3 16->16 with BN; max pool 2x2; a block 16->32 with a 1x1 conv + BN
skip; global average pool; linear 32->10. Batch 32 of 3x32x32 images, AdamW,
cross-entropy, 2 threads.

Each measurement is a fresh process (a worker): it times STEPS training steps
after 3 warm-up steps (torch.compile: after its compilation) and prints the
median step time and the peak RSS above the process's RSS just before the
model was made (both processes measured the same way: ru_maxrss minus
/proc/self/statm's resident set). Rounds alternate gad, eager and compile.

Usage: /work/venv/bin/python bench/cnn_torch.py [--gad build/examples/cnn]
           [--rounds 3] [--steps 30] [--no-compile]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_net():
    """The cnn example's network (cnn.c's model_new) as a torch module."""
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            c = lambda i, o, k: nn.Conv2d(i, o, k, padding=k // 2, bias=False)
            self.stem, self.stem_bn = c(3, 16, 3), nn.BatchNorm2d(16)
            self.b1c1, self.b1n1 = c(16, 16, 3), nn.BatchNorm2d(16)
            self.b1c2, self.b1n2 = c(16, 16, 3), nn.BatchNorm2d(16)
            self.b2c1, self.b2n1 = c(16, 32, 3), nn.BatchNorm2d(32)
            self.b2c2, self.b2n2 = c(32, 32, 3), nn.BatchNorm2d(32)
            self.skip, self.skip_bn = c(16, 32, 1), nn.BatchNorm2d(32)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            h = F.relu(self.stem_bn(self.stem(x)))
            r = F.relu(self.b1n1(self.b1c1(h)))
            h = F.relu(self.b1n2(self.b1c2(r)) + h)
            h = F.max_pool2d(h, 2)
            r = F.relu(self.b2n1(self.b2c1(h)))
            h = F.relu(self.b2n2(self.b2c2(r)) + self.skip_bn(self.skip(h)))
            h = F.adaptive_avg_pool2d(h, 1).flatten(1)
            return self.head(h)

    return Net()


def step_times(compiled, steps):
    """The step times (ms) of `steps` training steps after 3 warm-up steps
    (under torch.compile, after its compilation), and the peak RSS above
    the RSS just before the model was made (MB). bench/torch_ref.py's W9
    calls it too."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    x_all = torch.randn(512, 3, 32, 32)
    y_all = torch.randint(0, 10, (512,))
    base = rss_mb()
    net = make_net()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = torch.compile(step) if compiled else step
    times = []
    for s in range(steps + 3):
        i = (s * 32) % 512
        x, y = x_all[i:i + 32], y_all[i:i + 32]
        t0 = time.perf_counter()
        fn(x, y)
        if s >= 3:
            times.append(1e3 * (time.perf_counter() - t0))
    return times, peak_mb() - base


def worker(mode, steps):
    import torch

    torch.set_num_threads(2)
    times, mb = step_times(mode == "compile", steps)
    print("bench %.3f %.1f" % (statistics.median(times), mb))


def run(cmd, timeout):
    # as bench/compare: OpenMP workers that sleep when idle, on both sides
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="2")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    for line in out.stdout.splitlines():
        if line.startswith("bench "):
            ms, mb = line.split()[1:3]
            return float(ms), float(mb)
    raise RuntimeError("%s: %s" % (" ".join(cmd), out.stderr[-2000:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gad", default="build/examples/cnn")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--worker", choices=["eager", "compile"])
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.steps)
        return
    modes = ["gad", "eager"] + ([] if a.no_compile else ["compile"])
    res = {m: [] for m in modes}
    for r in range(a.rounds):
        for m in modes:
            if m == "gad":
                cmd = [a.gad, "--bench", str(a.steps), "--threads", "2"]
            else:
                cmd = [sys.executable, __file__, "--worker", m, "--steps", str(a.steps)]
            try:
                res[m].append(run(cmd, 900))
            except Exception as e:  # torch.compile may be unavailable
                print("round %d %s: failed: %s" % (r, m, e), file=sys.stderr)
            if res[m]:
                print("round %d %-8s %8.2f ms/step  peak RSS +%.1f MB" % ((r, m) + res[m][-1]),
                      flush=True)
    med = {m: (statistics.median(v[0] for v in res[m]), statistics.median(v[1] for v in res[m]))
           for m in modes if res[m]}
    print("\nmedians over %d rounds of %d steps (batch 32, 3x32x32, 2 threads):" % (a.rounds, a.steps))
    for m, (ms, mb) in med.items():
        print("  %-8s %8.2f ms/step  peak RSS above baseline %7.1f MB" % (m, ms, mb))
    torch_modes = [m for m in med if m != "gad"]
    if "gad" in med and torch_modes:
        best = min(torch_modes, key=lambda m: med[m][0])
        print("gad / faster torch (%s): time %.2fx, memory %.2fx (vs %s's)" %
              (best, med["gad"][0] / med[best][0], med["gad"][1] / med[best][1], best))
        for m in torch_modes:
            print("  vs %s: time %.2fx, memory %.2fx" % (m, med["gad"][0] / med[m][0],
                                                          med["gad"][1] / med[m][1]))


if __name__ == "__main__":
    main()
