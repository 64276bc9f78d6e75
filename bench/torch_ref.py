#!/usr/bin/python3
"""PyTorch side of gad's benchmark suite: the workloads W1-W10 of
docs/workloads.md, the same sizes as bench/gad_bench.c (W8: bench/gpt_bench.c,
W9: examples/cnn), one JSON line
per figure with the same metric names (impl "torch"). bench/compare runs it
beside gad-bench. G1-G7 (or "gpu" for all seven) are the GPU workloads,
never run by default; bench/gpu.sh runs them beside gad-bench's.

Run with Debian's interpreter and torch (apt-get install python3-torch):
    REFBENCH_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/torch_ref.py W5
The thread count is set before torch loads OpenBLAS (OPENBLAS_NUM_THREADS is
read once, at load time).

The same script runs the modern references for bench/compare with the venv
of bench/setup-references.sh (torch 2.x): REFBENCH_IMPL names the figures
(default "torch"), REFBENCH_COMPILE=1 wraps each workload's forward (to the
loss) in torch.compile (mode default; backward through AOTAutograd, the
optimizer step eager). The first calls, which compile, are the warm-up and
are not timed. Under torch.compile the hand-written scan stays eager (a
graph break: dynamo would unroll its loop over T), so W7 and W2 (one matrix
product: nothing to compile) are skipped there, and so are W10's products.
W8 and W9 take their models from bench/gpt_torch.py and bench/cnn_torch.py,
and compile as those scripts do (the model's forward; the whole step)."""
import json
import math
import os
import resource
import sys
import time

THREADS = int(os.environ.get("REFBENCH_THREADS", "2"))
os.environ["OPENBLAS_NUM_THREADS"] = str(THREADS)
os.environ["OMP_NUM_THREADS"] = str(THREADS)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.set_num_threads(THREADS)
IMPL = os.environ.get("REFBENCH_IMPL", "torch")
COMPILE = os.environ.get("REFBENCH_COMPILE") == "1"


def comp(fn):
    """fn under torch.compile (mode default) when REFBENCH_COMPILE=1."""
    return torch.compile(fn) if COMPILE else fn


def emit(w, metric, ts, scale=1.0, per_call=0.0, unit="ms", **extra):
    ts = sorted(ts)
    med, lo, hi = ts[len(ts) // 2], ts[0], ts[-1]
    if per_call:
        vals = (per_call / med * scale, per_call / hi * scale, per_call / lo * scale)
    else:
        vals = (med * scale, lo * scale, hi * scale)
    d = {"workload": w, "metric": metric, "median": round(vals[0], 6), "min": round(vals[1], 6),
         "max": round(vals[2], 6), "unit": unit, "reps": len(ts), "threads": THREADS,
         "impl": IMPL}
    d.update(extra)
    print(json.dumps(d), flush=True)


def timed(fn, reps, warm):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def maxrss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------ W1
def w1_chain(nops):
    """Forward, forward+backward and no-grad forward of the chain of nops ops."""
    torch.manual_seed(0)
    x = torch.randn(16, requires_grad=True)
    cm, ca, gy = torch.full((16,), 0.9), torch.full((16,), 0.1), torch.ones(16)

    def chain_():
        v = x
        for i in range(nops):
            k = i % 3
            v = v * cm if k == 0 else (v + ca if k == 1 else torch.tanh(v))
        return v

    chain = comp(chain_)

    def fwd_bwd():
        x.grad = None
        chain().backward(gy)

    def nograd():
        with torch.no_grad():
            chain()

    return chain, fwd_bwd, nograd


def w1():
    chain, fwd_bwd, nograd = w1_chain(1000)
    scale = 1e9 / 1000
    emit("W1", "fwd_ns_per_op", timed(chain, 31, 20), scale=scale, unit="ns")
    emit("W1", "fwd_bwd_ns_per_op", timed(fwd_bwd, 31, 20), scale=scale, unit="ns")
    emit("W1", "fwd_nograd_ns_per_op", timed(nograd, 31, 20), scale=scale, unit="ns")


def w1_scaling():
    """The chains of 10^3, 10^4, 10^5 and 10^6 ops in alternation, as
    gad-bench's sweep: five blocks of eleven, five, two and one calls."""
    lens, sfx, calls, warm = (1000, 10000, 100000, 1000000), ("", "_1e4", "_1e5", "_1e6"), \
        (11, 5, 2, 1), (5, 2, 1, 1)
    chains = [w1_chain(n) for n in lens]
    t = [[[] for _ in lens] for _ in (0, 1)]  # [forward, forward+backward][length]
    for b in range(5):
        for k in (0, 1):
            for i, ch in enumerate(chains):
                t[k][i] += timed(ch[k], calls[i], warm[i] if b == 0 else 0)
    for k, name in ((0, "fwd_ns_per_op"), (1, "fwd_bwd_ns_per_op")):
        for i, n in enumerate(lens):
            emit("W1", name + sfx[i], t[k][i], scale=1e9 / n, unit="ns")


# ------------------------------------------------------------------ W2
def w2():
    if COMPILE:
        return
    g = torch.Generator().manual_seed(2)
    for m, k, n in [(64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512),
                    (1024, 1024, 1024), (2048, 2048, 2048), (4096, 256, 256), (256, 4096, 256)]:
        a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
        flops = 2.0 * m * n * k
        emit("W2", "gemm_%dx%dx%d_gflops_torch" % (m, k, n),
             timed(lambda: a @ b, 7 if flops > 4e9 else 21, 3), scale=1e-9, per_call=flops,
             unit="GFLOP/s")


# ------------------------------------------------------------------ W3
def w3():
    n = 16 * 1024 * 1024
    torch.manual_seed(3)
    a, b = torch.rand(n), torch.rand(n)
    add, gelu = comp(lambda p, q: p + q), comp(lambda p: F.gelu(p, approximate="tanh"))
    emit("W3", "add_alloc_16M_GBps", timed(lambda: add(a, b), 20, 3), scale=1e-9, per_call=12.0 * n,
         unit="GB/s")
    emit("W3", "gelu_tanh_alloc_16M_GBps", timed(lambda: gelu(a), 20, 3),
         scale=1e-9, per_call=8.0 * n, unit="GB/s")


# ------------------------------------------------------------------ W4
def w4():
    torch.manual_seed(4)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(128, 784), torch.randint(0, 10, (128,))) for _ in range(16)]
    it = [0]
    loss = comp(lambda x, y: F.cross_entropy(model(x), y))

    def step():
        x, y = data[it[0] % 16]
        it[0] += 1
        opt.zero_grad()
        loss(x, y).backward()
        opt.step()

    emit("W4", "mlp_train_step_ms", timed(step, 100, 20), scale=1e3)
    emit("W4", "maxrss_MiB", [maxrss_mib()], unit="MiB")


# ------------------------------------------------------------- HELIX
EPS = 1e-5


def rms_norm(v):
    return v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS)


class Scan(torch.autograd.Function):
    """h_t = a_t h_{t-1} + u_t with a hand-written loop over time in [T,B,D]
    layout (contiguous steps); backward G_t = gh_t + a_{t+1} G_{t+1}."""

    @staticmethod
    def forward(ctx, a, u):
        at = a.transpose(0, 1).contiguous()
        h = u.transpose(0, 1).contiguous()
        for t in range(1, h.shape[0]):
            h[t].addcmul_(at[t], h[t - 1])
        ctx.save_for_backward(at, h)
        return h.transpose(0, 1)

    @staticmethod
    def backward(ctx, gh):
        at, h = ctx.saved_tensors
        G = gh.transpose(0, 1).contiguous()
        for t in range(G.shape[0] - 2, -1, -1):
            G[t].addcmul_(at[t + 1], G[t + 1])
        ga = torch.zeros_like(at)
        torch.mul(G[1:], h[:-1], out=ga[1:])
        return ga.transpose(0, 1), G.transpose(0, 1)


def scan_apply(a, u):
    return Scan.apply(a, u)


if COMPILE:
    scan_apply = torch.compiler.disable(scan_apply)


def block_params(D, g):
    wa = torch.randn(D + 1, D, generator=g) / math.sqrt(D)
    wa[D] = 3.0
    p = {"wa": wa, "wb": torch.randn(D, D, generator=g) / math.sqrt(D),
         "wo": torch.randn(D, D, generator=g) / math.sqrt(D),
         "wf1": torch.randn(D, 2 * D, generator=g) / math.sqrt(D),
         "wf2": torch.randn(2 * D, D, generator=g) / math.sqrt(2 * D),
         "g1": torch.ones(D), "g2": torch.ones(D), "g3": torch.ones(D), "g4": torch.ones(D)}
    for t in p.values():
        t.requires_grad_(True)
    return p


def block(x, p):
    B, T, D = x.shape
    xn = rms_norm(x) * p["g1"]
    a = torch.sigmoid(torch.cat([xn, xn.new_ones(B, T, 1)], dim=-1) @ p["wa"])
    h = scan_apply(a, xn @ p["wb"])
    out1 = x + F.silu(h * p["g2"]) @ p["wo"]
    f = F.silu((rms_norm(out1) * p["g3"]) @ p["wf1"]) @ p["wf2"]
    return out1 + f * p["g4"]


def w5():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(8, 256, 256, generator=g, requires_grad=True)
    r = torch.randn(8, 256, 256, generator=g)
    p = block_params(256, g)
    loss = comp(lambda: (block(x, p) * r).sum())

    def step():
        x.grad = None
        for t in p.values():
            t.grad = None
        loss().backward()

    emit("W5", "helix_block_fwd_bwd_ms", timed(step, 15, 3), scale=1e3)


def load_text():
    src = "/usr/share/common-licenses"
    raw = b""
    if os.path.isdir(src):
        for f in sorted(os.listdir(src)):
            path = os.path.join(src, f)
            if os.path.isfile(path) and not os.path.islink(path):
                raw += open(path, "rb").read()
    if len(raw) < 100000:
        g = torch.Generator().manual_seed(6)
        raw = bytes((32 + torch.randint(0, 95, (200000,), generator=g)).tolist())
    return torch.tensor(list(raw), dtype=torch.long)


def w6_config(D, T, steps, warm, metric, rss):
    g = torch.Generator().manual_seed(7)
    emb = (torch.randn(256, D, generator=g) * 0.02).requires_grad_()
    gain = torch.ones(D, requires_grad=True)
    wout = (torch.randn(D, 256, generator=g) / math.sqrt(D)).requires_grad_()
    blocks = [block_params(D, g) for _ in range(4)]
    params = [emb, gain, wout] + [t for p in blocks for t in p.values()]
    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.999), weight_decay=0.01)
    data = load_text()
    bg = torch.Generator().manual_seed(1)
    B = 16

    def loss_(w):
        h = F.embedding(w[:, :-1], emb)
        for p in blocks:
            h = block(h, p)
        logits = (rms_norm(h) * gain) @ wout
        return F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))

    loss = comp(loss_)

    def step():
        s = torch.randint(0, data.numel() - T - 1, (B,), generator=bg)
        w = data[s[:, None] + torch.arange(T + 1)[None, :]]
        opt.zero_grad()
        loss(w).backward()
        opt.step()

    emit("W6", metric, timed(step, steps, warm), per_call=float(B * T), unit="tok/s")
    if rss:
        emit("W6", "maxrss_MiB", [maxrss_mib()], unit="MiB")


def w6():
    w6_config(256, 128, 20, 5, "helix_lm_tokens_per_s", True)


# ------------------------------------------------------------------ W7
def w7():
    if COMPILE:
        return
    g = torch.Generator().manual_seed(8)
    a = torch.sigmoid(torch.randn(8, 1024, 256, generator=g) + 3.0).requires_grad_()
    u = torch.randn(8, 1024, 256, generator=g).requires_grad_()
    gh = torch.randn(8, 1024, 256, generator=g)

    def step():
        a.grad = None
        u.grad = None
        Scan.apply(a, u).backward(gh)

    emit("W7", "scan_B8_T1024_D256_fwd_bwd_ms", timed(step, 15, 3), scale=1e3)


# ------------------------------------------------------------- GPU: G1-G4
# The GPU workloads, as gad-bench's G1-G4 (bench/gpu.sh runs both): on
# cuda:0 (CUDA_VISIBLE_DEVICES picks the GPU); each timed call queues its
# work and waits for the device (torch.cuda.synchronize). Without a CUDA
# device each says so on stderr and is skipped. REFBENCH_DEVICE=cpu runs
# them on the CPU instead, to try the script on a machine without a GPU
# (the figures then mean nothing).
GPU = os.environ.get("REFBENCH_DEVICE", "cuda")


def gpu_ready(w):
    if GPU == "cuda" and not torch.cuda.is_available():
        print("torch_ref.py: %s skipped: no CUDA device (torch %s, CUDA %s)"
              % (w, torch.__version__, torch.version.cuda), file=sys.stderr)
        return False
    return True


def gpu_sync():
    if GPU == "cuda":
        torch.cuda.synchronize()


def gemm(w, tf32):
    """G1 (strict f32) and G2 (TF32): square f32 matmul, N = 1024..8192,
    a fresh output each call; as many products per timed call as gad-bench
    (at least 2^38 flops), three blocks after a warm-up call each."""
    if not gpu_ready(w):
        return
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
    g = torch.Generator(device=GPU).manual_seed(21)
    for n in (1024, 2048, 4096, 8192):
        a = torch.randn(n, n, device=GPU, generator=g)
        b = torch.randn(n, n, device=GPU, generator=g)
        flops = 2.0 * n * n * n
        inner = 1
        while inner * flops < 2.0 ** 38:
            inner *= 2

        def call():
            for _ in range(inner):
                a @ b
            gpu_sync()

        per = -(-(6 if n >= 8192 else 9) // 3)
        ts = []
        for _ in range(3):
            ts += timed(call, per, 1)
        emit(w, "gemm_%dx%dx%d_tflops_torch" % (n, n, n), ts, scale=1e-12,
             per_call=flops * inner, unit="TFLOP/s", math="tf32" if tf32 else "f32")
        del a, b
    torch.backends.cuda.matmul.allow_tf32 = old


def g1():
    gemm("G1", 0)


def g2():
    gemm("G2", 1)


def g3():
    """Elementwise add and gelu (tanh) on 2^26 floats with a fresh output,
    ten per timed call, and a device-to-device copy of the same floats
    (Tensor.copy_) before and after them; bytes as gad-bench counts them
    (add 12 per element, gelu and the copy 8)."""
    if not gpu_ready("G3"):
        return
    n = 1 << 26
    g = torch.Generator(device=GPU).manual_seed(23)
    a = torch.rand(n, device=GPU, generator=g)
    b = torch.rand(n, device=GPU, generator=g)
    out = torch.empty_like(a)
    inner = 10

    def rep(fn):
        def call():
            for _ in range(inner):
                fn()
            gpu_sync()
        return call

    copy = rep(lambda: out.copy_(a))
    tc = timed(copy, 20, 3)
    emit("G3", "add_alloc_64M_GBps", timed(rep(lambda: a + b), 20, 3), scale=1e-9,
         per_call=12.0 * n * inner, unit="GB/s")
    emit("G3", "gelu_tanh_alloc_64M_GBps", timed(rep(lambda: F.gelu(a, approximate="tanh")), 20, 3),
         scale=1e-9, per_call=8.0 * n * inner, unit="GB/s")
    tc += timed(copy, 20, 3)
    emit("G3", "d2d_copy_64M_GBps", tc, scale=1e-9, per_call=8.0 * n * inner, unit="GB/s",
         note="Tensor.copy_ device to device, before and after the ops")


def g4():
    """W1's chain (1000 ops on 16 elements) in eager mode on the GPU,
    waiting for the device at the end of each call."""
    if not gpu_ready("G4"):
        return
    torch.manual_seed(0)
    x = torch.randn(16).to(GPU).requires_grad_()
    cm = torch.full((16,), 0.9, device=GPU)
    ca = torch.full((16,), 0.1, device=GPU)
    gy = torch.ones(16, device=GPU)

    def chain():
        v = x
        for i in range(1000):
            k = i % 3
            v = v * cm if k == 0 else (v + ca if k == 1 else torch.tanh(v))
        return v

    def fwd():
        chain()
        gpu_sync()

    def fwd_bwd():
        x.grad = None
        chain().backward(gy)
        gpu_sync()

    def nograd():
        with torch.no_grad():
            chain()
        gpu_sync()

    scale = 1e9 / 1000
    emit("G4", "fwd_ns_per_op", timed(fwd, 31, 20), scale=scale, unit="ns")
    emit("G4", "fwd_bwd_ns_per_op", timed(fwd_bwd, 31, 20), scale=scale, unit="ns")
    emit("G4", "fwd_nograd_ns_per_op", timed(nograd, 31, 20), scale=scale, unit="ns")


# ------------------------------------------------ GPU: G5-G7 (HELIX)
# W7, W5 and W6 on the GPU at larger sizes, as gad-bench's G5-G7: the
# scan is torch_ref.py's Scan (the only scan this script has, a loop over
# time in eager mode; no torch.compile version), the blocks are block().
# GAD_BENCH_TF32=1 (read by gad-bench too) runs G6 and G7 with
# allow_tf32: their metrics then end in "_tf32".
HELIX_CFG = ((256, 4, 64, 512), (1024, 12, 32, 512))  # D, layers, batch, sequence length


def tf32_asked():
    return os.environ.get("GAD_BENCH_TF32") == "1"


def helix_block_flops_per_token(D):
    """Multiply-add flops of one block per token, forward and backward, as
    gad-bench counts them: the five matrix products, 2 (D+1) D + 12 D^2
    forward, and twice that backward; elementwise work not counted."""
    return 3.0 * (14.0 * D * D + 2.0 * D)


def gpu_block_params(D, g):
    """block_params drawn on the CPU (as gad-bench's weights), moved to the
    GPU as leaves."""
    return {k: v.detach().to(GPU).requires_grad_() for k, v in block_params(D, g).items()}


def g5():
    """W7's scan at B=64 T=4096 D=1024 (f32), forward and backward, beside
    a device-to-device copy of one such tensor (Tensor.copy_) before and
    after it; bytes as gad-bench counts them (the scan 32 per element:
    a, u, h forward, a, h, gh, ga, gu backward; the copy 8)."""
    if not gpu_ready("G5"):
        return
    shape = (64, 4096, 1024)
    n = 64.0 * 4096 * 1024
    g = torch.Generator(device=GPU).manual_seed(25)
    a = torch.sigmoid(torch.randn(*shape, device=GPU, generator=g) + 3.0).requires_grad_()
    u = torch.randn(*shape, device=GPU, generator=g).requires_grad_()
    gh = torch.randn(*shape, device=GPU, generator=g)
    out = torch.empty_like(gh)

    def step():
        a.grad = None
        u.grad = None
        Scan.apply(a, u).backward(gh)
        gpu_sync()

    def copy():
        out.copy_(u)
        gpu_sync()

    tc = timed(copy, 15, 3)
    ts = timed(step, 15, 3)
    tc += timed(copy, 15, 0)
    emit("G5", "scan_B64_T4096_D1024_fwd_bwd_ms", ts, scale=1e3)
    emit("G5", "scan_B64_T4096_D1024_fwd_bwd_GBps", ts, scale=1e-9, per_call=32.0 * n,
         unit="GB/s", note="32 bytes per element: a, u, h forward; a, h, gh, ga, gu backward")
    emit("G5", "d2d_copy_1G_GBps", tc, scale=1e-9, per_call=8.0 * n, unit="GB/s",
         note="Tensor.copy_ device to device of one 2^28-float tensor, before and after the scan")


def g6():
    """W5 on the GPU: a stack of L blocks forward and backward, loss
    sum(y * r), gradients of the input and every weight, at HELIX_CFG's
    sizes: tokens/s and TFLOP/s (helix_block_flops_per_token times L)."""
    if not gpu_ready("G6"):
        return
    tf32 = tf32_asked()
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    sfx, math_ = ("_tf32", "tf32") if tf32 else ("", "f32")
    for k, (D, L, B, T) in enumerate(HELIX_CFG):
        g = torch.Generator().manual_seed(26)
        x = torch.randn(B, T, D, generator=g).to(GPU).requires_grad_()
        r = torch.randn(B, T, D, generator=g).to(GPU)
        blocks = [gpu_block_params(D, g) for _ in range(L)]

        def step():
            x.grad = None
            for p in blocks:
                for t in p.values():
                    t.grad = None
            h = x
            for p in blocks:
                h = block(h, p)
            (h * r).sum().backward()
            gpu_sync()

        ts = timed(step, 11 if k == 0 else 7, 2)
        tok, fpt = float(B * T), L * helix_block_flops_per_token(D)
        name = "helix_stack_D%d_L%d_B%d_T%d_" % (D, L, B, T)
        emit("G6", name + "tokens_per_s" + sfx, ts, per_call=tok, unit="tok/s", math=math_,
             flop_per_token=fpt)
        emit("G6", name + "tflops" + sfx, ts, scale=1e-12, per_call=tok * fpt, unit="TFLOP/s",
             math=math_, flop_per_token=fpt)
        del x, r, blocks
        if GPU == "cuda":
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = old


def g7_config(D, L, B, T, steps, warm, tf32):
    g = torch.Generator().manual_seed(7)
    emb = (torch.randn(256, D, generator=g) * 0.02).to(GPU).requires_grad_()
    gain = torch.ones(D, device=GPU, requires_grad=True)
    wout = (torch.randn(D, 256, generator=g) / math.sqrt(D)).to(GPU).requires_grad_()
    blocks = [gpu_block_params(D, g) for _ in range(L)]
    params = [emb, gain, wout] + [t for p in blocks for t in p.values()]
    opt = torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.999), weight_decay=0.01)
    data = load_text()
    bg = torch.Generator().manual_seed(1)
    last = [0.0]

    def step():
        s = torch.randint(0, data.numel() - T - 1, (B,), generator=bg)
        w = data[s[:, None] + torch.arange(T + 1)[None, :]].to(GPU)
        opt.zero_grad()
        h = F.embedding(w[:, :-1], emb)
        for p in blocks:
            h = block(h, p)
        logits = (rms_norm(h) * gain) @ wout
        loss = F.cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        last[0] = loss.item()  # the loss read back, as gad-bench's G7
        gpu_sync()

    ts = timed(step, steps, warm)
    sfx = "_tf32" if tf32 else ""
    if (D, L, B, T) == (256, 4, 16, 128):
        metric = "helix_lm_tokens_per_s" + sfx
    else:
        metric = "helix_lm_tokens_per_s_D%d_L%d_B%d_T%d%s" % (D, L, B, T, sfx)
    emit("G7", metric, ts, per_call=float(B * T), unit="tok/s", math="tf32" if tf32 else "f32",
         loss_last=round(last[0], 4))


def g7():
    """W6 on the GPU: helix_lm's training step (embedding, L blocks, final
    norm and gain, logits, cross-entropy, backward, AdamW), at W6's own
    size (metric W6's, for the GPU/CPU ratio) and HELIX_CFG's: tokens/s."""
    if not gpu_ready("G7"):
        return
    tf32 = tf32_asked()
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    g7_config(256, 4, 16, 128, 20, 5, tf32)
    for k, (D, L, B, T) in enumerate(HELIX_CFG):
        g7_config(D, L, B, T, 11 if k == 0 else 7, 2, tf32)
        if GPU == "cuda":
            torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = old


def gpu():
    g1()
    g2()
    g3()
    g4()
    g5()
    g6()
    g7()


# ------------------------------------------------- W8-W10 (issues 27-29)
HERE = os.path.dirname(os.path.abspath(__file__))


def w8():
    """The gpt example's training step (bench/gpt_torch.py's model: D=256, 4
    layers, 8 heads, T=128, batch 16, AdamW, clipping), random weights of
    gad's scales; F.scaled_dot_product_attention where torch has it."""
    sys.path.insert(0, HERE)
    import gpt_torch as gt
    import numpy as np

    D, L, B, T = 256, 4, 16, 128
    rng = np.random.default_rng(8)
    nrm = lambda *sh: (rng.standard_normal(sh) / math.sqrt(sh[0])).astype(np.float32)
    w = {"emb": (rng.standard_normal((256, D)) * 0.02).astype(np.float32),
         "gain": np.ones(D, np.float32), "bout": np.zeros(256, np.float32)}
    for l in range(L):
        w.update({"b%d.g1" % l: np.ones(D, np.float32), "b%d.wqkv" % l: nrm(D, 3 * D),
                  "b%d.wo" % l: nrm(D, D), "b%d.g2" % l: np.ones(D, np.float32),
                  "b%d.w1" % l: nrm(D, 4 * D), "b%d.w2" % l: nrm(4 * D, D)})
    attn = "sdpa" if hasattr(F, "scaled_dot_product_attention") else "composed"
    model = gt.GPT(w, D, L, attn)
    fwd = comp(model)
    opt = gt.optimizer(model)
    text = gt.load_text()
    g = torch.Generator().manual_seed(1)

    def step():
        offs = torch.randint(0, text.numel() - T - 1, (B,), generator=g)
        x, y = gt.batch(text, offs, T)
        gt.train_step(model, fwd, opt, x, y)

    emit("W8", "gpt_train_tokens_per_s", timed(step, 10, 3), per_call=float(B * T),
         unit="tok/s", attention=attn)


def w9():
    """The cnn example's training step (bench/cnn_torch.py: batch 32 of
    3x32x32, conv/BN/ReLU blocks, AdamW); the peak RSS above the RSS before
    the model, as the example measures its own."""
    sys.path.insert(0, HERE)
    import cnn_torch

    ts, mb = cnn_torch.step_times(COMPILE, 30)
    emit("W9", "cnn_train_step_ms", [t / 1e3 for t in ts], scale=1e3)
    emit("W9", "peak_rss_above_start_MiB", [mb], unit="MiB")


def w10():
    """Half precision: square bf16 products at 256 and 1024 (not under
    torch.compile: one op), the tanh GELU and add on 16M bf16 elements, a
    new output each call."""
    g = torch.Generator().manual_seed(10)
    u = lambda *sh: (torch.rand(*sh, generator=g) * 2 - 1).to(torch.bfloat16)
    if not COMPILE:
        for n, reps in ((256, 41), (1024, 15)):
            a, b = u(n, n), u(n, n)
            emit("W10", "bf16_gemm_%d_gflops" % n, timed(lambda: torch.matmul(a, b), reps, 3),
                 scale=1e-9, per_call=2.0 * n ** 3, unit="GFLOP/s")
    n = 16 * 1024 * 1024
    a, b = u(n), u(n)
    gelu = comp(lambda p: F.gelu(p, approximate="tanh"))
    add = comp(lambda p, q: p + q)
    emit("W10", "bf16_gelu_tanh_16M_GBps", timed(lambda: gelu(a), 15, 3), scale=1e-9,
         per_call=4.0 * n, unit="GB/s")
    emit("W10", "bf16_add_16M_GBps", timed(lambda: add(a, b), 15, 3), scale=1e-9,
         per_call=6.0 * n, unit="GB/s")


def w6_scaling():
    for D in (128, 256, 512):
        for T in (128, 512, 2048):
            w6_config(D, T, 5, 2, "helix_lm_tokens_per_s_D%d_T%d" % (D, T), False)


def sweep():
    w6_scaling()
    w1_scaling()


WORKLOADS = {"W1": w1, "W2": w2, "W3": w3, "W4": w4, "W5": w5, "W6": w6, "W7": w7,
             "W8": w8, "W9": w9, "W10": w10,
             "sweep": sweep, "sweep-W1": w1_scaling, "sweep-W6": w6_scaling,
             "G1": g1, "G2": g2, "G3": g3, "G4": g4, "G5": g5, "G6": g6, "G7": g7,
             "gpu": gpu}

if __name__ == "__main__":
    names = sys.argv[1:] or ["W1", "W2", "W3", "W4", "W5", "W6", "W7"]
    for name in names:
        WORKLOADS[name]()
