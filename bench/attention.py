#!/usr/bin/env python3
"""attention.py: PyTorch's side of the attention benchmark (issue 27;
bench/attention.sh alternates it with attn-bench): F.scaled_dot_product_attention
forward + backward, causal, f32, q, k, v [B, H, T, d], on the CPU. Prints one
JSON line: median, min and max seconds of `reps` timed calls after one warm-up
call, and the extra memory of the first call (after a tiny one) measured as the growth of the
process's peak RSS (ru_maxrss) less the output and the three gradients (torch's
CPU allocator keeps no statistics).

    attention.py T [B H d reps threads]"""
import json
import resource
import sys
import time

import torch
import torch.nn.functional as F


def main():
    a = [int(x) for x in sys.argv[1:]]
    T = a[0] if len(a) > 0 else 512
    B = a[1] if len(a) > 1 else 8
    H = a[2] if len(a) > 2 else 8
    d = a[3] if len(a) > 3 else 64
    reps = a[4] if len(a) > 4 else 5
    threads = a[5] if len(a) > 5 else 2
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(B, H, T, d, generator=g).requires_grad_() for _ in range(3))
    dO = torch.randn(B, H, T, d, generator=g)
    tensor_bytes = B * H * T * d * 4

    def step():
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.autograd.grad(y, (q, k, v), dO)

    # a small call first, so that the code it pages in is not counted
    qs, ks, vs = (torch.randn(1, 1, 16, d).requires_grad_() for _ in range(3))
    torch.autograd.grad(F.scaled_dot_product_attention(qs, ks, vs, is_causal=True), (qs, ks, vs),
                        torch.ones(1, 1, 16, d))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gs = step()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    extra_rss = (rss1 - rss0) * 1024 - 4 * tensor_bytes
    del gs
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        gs = step()
        ts.append(time.perf_counter() - t0)
        del gs
    ts.sort()
    print(json.dumps({"impl": "torch " + torch.__version__, "B": B, "H": H, "T": T, "d": d,
                      "threads": threads, "median_s": round(ts[len(ts) // 2], 4),
                      "min_s": round(ts[0], 4), "max_s": round(ts[-1], 4),
                      "extra_rss_MiB": round(extra_rss / 2**20, 2),
                      "qkvo_MiB": round(tensor_bytes / 2**20, 2)}))


if __name__ == "__main__":
    main()
