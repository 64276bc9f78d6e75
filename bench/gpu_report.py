#!/usr/bin/python3
"""bench/gpu_report.py GAD.jsonl [TORCH.jsonl]: the table of bench/gpu.sh.

Reads the JSON lines of gad-bench's and torch_ref.py's GPU workloads
(G1-G4), takes for each figure the median of its medians over the rounds,
and prints gad beside its references with the ratios:
  G1, G2  GEMM TFLOP/s: gad, cuBLAS called directly, torch; gad over the
          faster of the two, and each over the GPU's peak (PEAK_F32_TFLOPS,
          default 67, the H200's f32 figure; PEAK_TF32_TFLOPS, default 495,
          its dense TF32 tensor-core figure, NVIDIA's datasheet giving 989
          with sparsity)
  G3      GB/s of add and gelu: gad over torch, and each over the
          device-to-device copy its own process measured in the same run
  G4      ns per op of W1's chain on the GPU: gad over torch
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


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    gad = load(argv[1])
    torch = load(argv[2] if len(argv) > 2 else None)
    if not gad:
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
    print("| workload | figure | gad | cuBLAS direct | torch | gad / the faster reference "
          "(G3, G4: gad / torch) | ratios |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if not torch:
        print("\n(no torch figures: torch_ref.py was not run or found no GPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
