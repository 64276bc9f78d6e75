#!/usr/bin/python3
"""bench/gpu_report.py GAD.jsonl [TORCH.jsonl]: the table of bench/gpu.sh.

Reads the JSON lines of gad-bench's and torch_ref.py's GPU workloads
(G1-G7, and W6 for G7's GPU/CPU ratio), takes for each figure the median
of its medians over the rounds, and prints gad beside its references
with the ratios:
  G1, G2  GEMM TFLOP/s: gad, cuBLAS called directly, torch; gad over the
          faster of the two, and each over the GPU's peak (PEAK_F32_TFLOPS,
          default 67, the H200's f32 figure; PEAK_TF32_TFLOPS, default 495,
          its dense TF32 tensor-core figure, NVIDIA's datasheet giving 989
          with sparsity)
  G3      GB/s of add and gelu: gad over torch, and each over the
          device-to-device copy its own process measured in the same run
  G4      ns per op of W1's chain on the GPU: gad over torch
  G5      W7's gated scan at B=64 T=4096 D=1024, forward+backward: ms, and
          GB/s (32 bytes per element) over the device-to-device copy of
          one such tensor its own process measured in the same run
  G6      W5's blocks, a stack of L, forward+backward at D=256 L=4 B=64
          T=512 and D=1024 L=12 B=32 T=512: tokens/s, and TFLOP/s (the
          matrix products' flops) over the f32 or TF32 peak
  G7      W6's training step (AdamW) at W6's own size, with the GPU over
          the CPU when the input also has W6's lines, and at G6's sizes:
          tokens/s
Standard library only."""
import json
import os
import statistics
import sys


def load(path):
    """{(workload, metric): [median, ...]} from the lines that carry one."""
    out = {}
    if not path or not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if "metric" in d and "median" in d:
                out.setdefault((d["workload"], d["metric"]), []).append(float(d["median"]))
    return out


def med(table, w, m):
    v = table.get((w, m))
    return statistics.median(v) if v else None


def fmt(x, digits=4):
    return "-" if x is None else "%.*g" % (digits, x)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


# G6's and G7's sizes: D, layers, batch, sequence length (gad-bench's g_helix_cfg)
HELIX_CFG = ((256, 4, 64, 512), (1024, 12, 32, 512))


def helix_rows(gad, torch):
    """The rows of G5 (scan), G6 (block stack) and G7 (training steps)."""
    rows = []
    gcopy, tcopy = med(gad, "G5", "d2d_copy_1G_GBps"), med(torch, "G5", "d2d_copy_1G_GBps")
    base = "scan_B64_T4096_D1024_fwd_bwd_"
    g, t = med(gad, "G5", base + "ms"), med(torch, "G5", base + "ms")
    if g is not None:
        rows.append(("G5", "gated scan B64 T4096 D1024 fwd+bwd ms", fmt(g), "-", fmt(t),
                     fmt(ratio(g, t), 3), "lower is better"))
    g, t = med(gad, "G5", base + "GBps"), med(torch, "G5", base + "GBps")
    if g is not None:
        rows.append(("G5", "gated scan fwd+bwd GB/s (32 B/element)", fmt(g), "-", fmt(t),
                     fmt(ratio(g, t), 3),
                     "of the copy: gad %s, torch %s" % (fmt(ratio(g, gcopy), 3),
                                                        fmt(ratio(t, tcopy), 3))))
    if gcopy is not None:
        rows.append(("G5", "device-to-device copy 1 GiB GB/s", fmt(gcopy), "-", fmt(tcopy),
                     fmt(ratio(gcopy, tcopy), 3), "cudaMemcpyAsync / Tensor.copy_"))
    for sfx, math, peak in (("", "f32", float(os.environ.get("PEAK_F32_TFLOPS", "67"))),
                            ("_tf32", "TF32", float(os.environ.get("PEAK_TF32_TFLOPS", "495")))):
        for D, L, B, T in HELIX_CFG:
            size = "D%d_L%d_B%d_T%d" % (D, L, B, T)
            label = "D=%d L=%d B=%d T=%d %s" % (D, L, B, T, math)
            name = "helix_stack_" + size + "_"
            g, t = med(gad, "G6", name + "tokens_per_s" + sfx), \
                med(torch, "G6", name + "tokens_per_s" + sfx)
            if g is not None:
                rows.append(("G6", "HELIX blocks fwd+bwd %s tokens/s" % label, fmt(g), "-",
                             fmt(t), fmt(ratio(g, t), 3), "higher is better"))
            g, t = med(gad, "G6", name + "tflops" + sfx), med(torch, "G6", name + "tflops" + sfx)
            if g is not None:
                rows.append(("G6", "HELIX blocks fwd+bwd %s TFLOP/s" % label, fmt(g), "-",
                             fmt(t), fmt(ratio(g, t), 3),
                             "of the %g peak: gad %s, torch %s" % (
                                 peak, fmt(ratio(g, peak), 3), fmt(ratio(t, peak), 3))))
    for sfx, math in (("", "f32"), ("_tf32", "TF32")):
        g, t = med(gad, "G7", "helix_lm_tokens_per_s" + sfx), \
            med(torch, "G7", "helix_lm_tokens_per_s" + sfx)
        if g is not None:
            # W6 is the same size on the CPU (strict f32 there)
            gc, tc = med(gad, "W6", "helix_lm_tokens_per_s"), \
                med(torch, "W6", "helix_lm_tokens_per_s")
            note = "no W6 (CPU) figures in the input"
            if gc is not None or tc is not None:
                note = "GPU / CPU (W6): gad %s, torch %s" % (fmt(ratio(g, gc), 3),
                                                              fmt(ratio(t, tc), 3))
            rows.append(("G7", "helix_lm step W6 size (D=256 L=4 B=16 T=128) %s tokens/s"
                         % math, fmt(g), "-", fmt(t), fmt(ratio(g, t), 3), note))
        for D, L, B, T in HELIX_CFG:
            m = "helix_lm_tokens_per_s_D%d_L%d_B%d_T%d%s" % (D, L, B, T, sfx)
            g, t = med(gad, "G7", m), med(torch, "G7", m)
            if g is not None:
                rows.append(("G7", "helix_lm step D=%d L=%d B=%d T=%d %s tokens/s"
                             % (D, L, B, T, math), fmt(g), "-", fmt(t), fmt(ratio(g, t), 3),
                             "higher is better"))
    return rows


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gad = load(argv[1])
    torch = load(argv[2] if len(argv) > 2 else None)
    if not any(w.startswith("G") for w, _ in gad):  # W6's CPU lines alone are not enough
        print("gpu_report: no GPU figures from gad-bench (no CUDA device, or a build "
              "without CUDA: see its messages above)", file=sys.stderr)
        return 1
    peaks = {"G1": float(os.environ.get("PEAK_F32_TFLOPS", "67")),
             "G2": float(os.environ.get("PEAK_TF32_TFLOPS", "495"))}
    rows = []
    for w, math in (("G1", "f32 strict"), ("G2", "TF32")):
        for n in (1024, 2048, 4096, 8192):
            base = "gemm_%dx%dx%d_tflops_" % (n, n, n)
            g, c, t = med(gad, w, base + "gad"), med(gad, w, base + "cublas_direct"), \
                med(torch, w, base + "torch")
            if g is None:
                continue
            refs = [x for x in (c, t) if x is not None]
            faster = max(refs) if refs else None
            p = peaks[w]
            rows.append((w, "GEMM %s N=%d TFLOP/s" % (math, n), fmt(g), fmt(c), fmt(t),
                         fmt(ratio(g, faster), 3),
                         "gad/cuBLAS %s, gad/torch %s; of the %g peak: gad %s, cuBLAS %s, "
                         "torch %s" % (fmt(ratio(g, c), 3), fmt(ratio(g, t), 3), p,
                                       fmt(ratio(g, p), 3), fmt(ratio(c, p), 3),
                                       fmt(ratio(t, p), 3))))
    gcopy, tcopy = med(gad, "G3", "d2d_copy_64M_GBps"), med(torch, "G3", "d2d_copy_64M_GBps")
    for m, name in (("add_alloc_64M_GBps", "add 2^26 f32 GB/s"),
                    ("gelu_tanh_alloc_64M_GBps", "gelu (tanh) 2^26 f32 GB/s")):
        g, t = med(gad, "G3", m), med(torch, "G3", m)
        if g is None:
            continue
        rows.append(("G3", name, fmt(g), "-", fmt(t), fmt(ratio(g, t), 3),
                     "of the copy: gad %s, torch %s" % (fmt(ratio(g, gcopy), 3),
                                                        fmt(ratio(t, tcopy), 3))))
    if gcopy is not None:
        rows.append(("G3", "device-to-device copy GB/s", fmt(gcopy), "-", fmt(tcopy),
                     fmt(ratio(gcopy, tcopy), 3), "cudaMemcpyAsync / Tensor.copy_"))
    for m, name in (("fwd_ns_per_op", "W1 chain forward ns/op"),
                    ("fwd_bwd_ns_per_op", "W1 chain fwd+bwd ns/op"),
                    ("fwd_nograd_ns_per_op", "W1 chain no-grad ns/op")):
        g, t = med(gad, "G4", m), med(torch, "G4", m)
        if g is None:
            continue
        rows.append(("G4", name, fmt(g), "-", fmt(t), fmt(ratio(g, t), 3),
                     "lower is better"))
    rows += helix_rows(gad, torch)
    print("| workload | figure | gad | cuBLAS direct | torch | gad / the faster reference "
          "(G3-G7: gad / torch) | ratios |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if not torch:
        print("\n(no torch figures: torch_ref.py was not run or found no GPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
