#!/usr/bin/env python3
"""JAX side of gad's benchmark suite: W1 and W3-W10 of docs/workloads.md with
jax.jit, the same sizes and metric names as bench/torch_ref.py (impl "jax"),
one JSON line per figure. W2 (GEMM) is left to the BLAS references. Each
workload's function is compiled once and called for the warm-up before the
timed calls, so compilation is never timed; every timed call waits for its
result (block_until_ready).

Run with the interpreter of bench/setup-references.sh's venv:
    REFBENCH_THREADS=1 build/bench-venv/bin/python bench/jax_ref.py W5
The thread count: REFBENCH_THREADS=1 turns XLA's multi-threaded Eigen off
and asks for one intra-op thread (set before jax loads); for more threads
bench/compare pins the process to that many cores with taskset."""
import json
import math
import os
import resource
import sys
import time

THREADS = int(os.environ.get("REFBENCH_THREADS", "2"))
flags = os.environ.get("XLA_FLAGS", "")
if THREADS == 1:
    flags += " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["XLA_FLAGS"] = flags.strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

IMPL = os.environ.get("REFBENCH_IMPL", "jax")


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
        jax.block_until_ready(fn())
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t0)
    return ts


def maxrss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------ W1
def w1():
    """The chain of 1000 ops (mul, add, tanh in turn) on 16 floats: jit
    fuses it to one kernel, so the per-op figure is the whole call over
    1000."""
    nops = 1000
    x = jnp.asarray(np.random.default_rng(0).standard_normal(16, dtype=np.float32))
    cm, ca, gy = jnp.full((16,), 0.9), jnp.full((16,), 0.1), jnp.ones(16)

    def chain(v):
        for i in range(nops):
            k = i % 3
            v = v * cm if k == 0 else (v + ca if k == 1 else jnp.tanh(v))
        return v

    fwd = jax.jit(chain)

    @jax.jit
    def fwd_bwd(v):
        y, vjp = jax.vjp(chain, v)
        return y, vjp(gy)[0]

    scale = 1e9 / nops
    emit("W1", "fwd_ns_per_op", timed(lambda: fwd(x), 31, 20), scale=scale, unit="ns")
    emit("W1", "fwd_bwd_ns_per_op", timed(lambda: fwd_bwd(x), 31, 20), scale=scale, unit="ns")
    emit("W1", "fwd_nograd_ns_per_op", timed(lambda: fwd(x), 31, 20), scale=scale, unit="ns")


# ------------------------------------------------------------------ W3
def w3():
    n = 16 * 1024 * 1024
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.random(n, dtype=np.float32))
    b = jnp.asarray(rng.random(n, dtype=np.float32))
    add = jax.jit(lambda p, q: p + q)
    gelu = jax.jit(lambda p: jax.nn.gelu(p, approximate=True))
    emit("W3", "add_alloc_16M_GBps", timed(lambda: add(a, b), 20, 3), scale=1e-9,
         per_call=12.0 * n, unit="GB/s")
    emit("W3", "gelu_tanh_alloc_16M_GBps", timed(lambda: gelu(a), 20, 3), scale=1e-9,
         per_call=8.0 * n, unit="GB/s")


# ------------------------------------------------------------------ W4
def linear_init(rng, fan_in, fan_out):
    bound = 1.0 / math.sqrt(fan_in)
    return (jnp.asarray(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32)),
            jnp.asarray(rng.uniform(-bound, bound, fan_out).astype(np.float32)))


def cross_entropy(logits, y):
    lse = jax.nn.logsumexp(logits, axis=-1)
    return jnp.mean(lse - jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0])


def w4():
    """784-512-512-10 MLP, ReLU, cross-entropy, SGD lr 0.01, batch 128: the
    whole step (forward, backward, update) is one jitted call, parameters
    donated so the update is in place."""
    rng = np.random.default_rng(4)
    params = [linear_init(rng, 784, 512), linear_init(rng, 512, 512), linear_init(rng, 512, 10)]
    data = [(jnp.asarray(rng.standard_normal((128, 784), dtype=np.float32)),
             jnp.asarray(rng.integers(0, 10, 128).astype(np.int32))) for _ in range(16)]

    def loss(ps, x, y):
        h = x
        for i, (w, b) in enumerate(ps):
            h = h @ w + b
            if i < 2:
                h = jax.nn.relu(h)
        return cross_entropy(h, y)

    @jax.jit
    def step_(ps, x, y):
        g = jax.grad(loss)(ps, x, y)
        return jax.tree_util.tree_map(lambda p, d: p - 0.01 * d, ps, g)

    step_d = jax.jit(step_, donate_argnums=0)
    state = [params]
    it = [0]

    def step():
        x, y = data[it[0] % 16]
        it[0] += 1
        state[0] = step_d(state[0], x, y)
        return state[0]

    emit("W4", "mlp_train_step_ms", timed(step, 100, 20), scale=1e3)
    emit("W4", "maxrss_MiB", [maxrss_mib()], unit="MiB")


# ------------------------------------------------------------- HELIX
EPS = 1e-5


def rms_norm(v):
    return v * jax.lax.rsqrt(jnp.mean(v * v, axis=-1, keepdims=True) + EPS)


def scan(a, u):
    """h_t = a_t h_{t-1} + u_t (h_{-1} = 0) over axis 1 of [B,T,D], as
    lax.scan over time; its backward is JAX's own (a reverse scan)."""
    def stepf(h, au):
        h = au[0] * h + au[1]
        return h, h
    _, hs = jax.lax.scan(stepf, jnp.zeros_like(u[:, 0]),
                         (jnp.swapaxes(a, 0, 1), jnp.swapaxes(u, 0, 1)))
    return jnp.swapaxes(hs, 0, 1)


def block_params(D, rng):
    s = 1.0 / math.sqrt(D)
    wa = rng.standard_normal((D + 1, D), dtype=np.float32) * s
    wa[D] = 3.0
    f = lambda *shape: jnp.asarray(rng.standard_normal(shape, dtype=np.float32))  # noqa: E731
    return {"wa": jnp.asarray(wa), "wb": f(D, D) * s, "wo": f(D, D) * s,
            "wf1": f(D, 2 * D) * s, "wf2": f(2 * D, D) / math.sqrt(2 * D),
            "g1": jnp.ones(D), "g2": jnp.ones(D), "g3": jnp.ones(D), "g4": jnp.ones(D)}


def block(x, p):
    B, T, D = x.shape
    xn = rms_norm(x) * p["g1"]
    a = jax.nn.sigmoid(jnp.concatenate([xn, jnp.ones((B, T, 1), x.dtype)], axis=-1) @ p["wa"])
    h = scan(a, xn @ p["wb"])
    out1 = x + jax.nn.silu(h * p["g2"]) @ p["wo"]
    f = jax.nn.silu((rms_norm(out1) * p["g3"]) @ p["wf1"]) @ p["wf2"]
    return out1 + f * p["g4"]


def w5():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.standard_normal((8, 256, 256), dtype=np.float32))
    r = jnp.asarray(rng.standard_normal((8, 256, 256), dtype=np.float32))
    p = block_params(256, rng)
    grad = jax.jit(jax.grad(lambda x_, p_: jnp.sum(block(x_, p_) * r), argnums=(0, 1)))
    emit("W5", "helix_block_fwd_bwd_ms", timed(lambda: grad(x, p), 15, 3), scale=1e3)


def load_text():
    src = "/usr/share/common-licenses"
    raw = b""
    if os.path.isdir(src):
        for f in sorted(os.listdir(src)):
            path = os.path.join(src, f)
            if os.path.isfile(path) and not os.path.islink(path):
                raw += open(path, "rb").read()
    if len(raw) < 100000:
        raw = bytes((32 + np.random.default_rng(6).integers(0, 95, 200000)).astype(np.uint8))
    return np.frombuffer(raw, dtype=np.uint8).astype(np.int32)


def w6():
    """helix_lm's training step (embedding, 4 blocks, final norm and gain,
    logits, cross-entropy, AdamW as torch's: decoupled weight decay, bias
    correction), D=256, B=16, T=128, one jitted call, state donated."""
    D, T, B, steps, warm = 256, 128, 16, 20, 5
    rng = np.random.default_rng(7)
    params = {"emb": jnp.asarray(rng.standard_normal((256, D), dtype=np.float32) * 0.02),
              "gain": jnp.ones(D),
              "wout": jnp.asarray(rng.standard_normal((D, 256), dtype=np.float32) / math.sqrt(D)),
              "blocks": [block_params(D, rng) for _ in range(4)]}
    lr, b1, b2, eps, wd = 3e-4, 0.9, 0.999, 1e-8, 0.01
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    data = load_text()
    bg = np.random.default_rng(1)

    def loss(ps, w):
        h = ps["emb"][w[:, :-1]]
        for p in ps["blocks"]:
            h = block(h, p)
        logits = (rms_norm(h) * ps["gain"]) @ ps["wout"]
        return cross_entropy(logits.reshape(-1, 256), w[:, 1:].reshape(-1))

    def step_(state, w):
        ps, m, v, t = state
        g = jax.grad(loss)(ps, w)
        t = t + 1.0
        c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        m = jax.tree_util.tree_map(lambda m_, g_: b1 * m_ + (1 - b1) * g_, m, g)
        v = jax.tree_util.tree_map(lambda v_, g_: b2 * v_ + (1 - b2) * g_ * g_, v, g)
        ps = jax.tree_util.tree_map(
            lambda p_, m_, v_: p_ * (1 - lr * wd) - lr * (m_ / c1) / (jnp.sqrt(v_ / c2) + eps),
            ps, m, v)
        return ps, m, v, t

    step_j = jax.jit(step_, donate_argnums=0)
    state = [(params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(0))]

    def step():
        s = bg.integers(0, data.size - T - 1, B)
        w = jnp.asarray(data[s[:, None] + np.arange(T + 1)[None, :]])
        state[0] = step_j(state[0], w)
        return state[0]

    emit("W6", "helix_lm_tokens_per_s", timed(step, steps, warm), per_call=float(B * T),
         unit="tok/s")
    emit("W6", "maxrss_MiB", [maxrss_mib()], unit="MiB")


# ------------------------------------------------------------------ W7
def w7():
    rng = np.random.default_rng(8)
    shape = (8, 1024, 256)
    a = jax.nn.sigmoid(jnp.asarray(rng.standard_normal(shape, dtype=np.float32)) + 3.0)
    u = jnp.asarray(rng.standard_normal(shape, dtype=np.float32))
    gh = jnp.asarray(rng.standard_normal(shape, dtype=np.float32))

    @jax.jit
    def fwd_bwd(a_, u_):
        h, vjp = jax.vjp(scan, a_, u_)
        return h, vjp(gh)

    emit("W7", "scan_B8_T1024_D256_fwd_bwd_ms", timed(lambda: fwd_bwd(a, u), 15, 3), scale=1e3)


# ------------------------------------------------- W8-W10 (issues 27-29)
def adamw(lr, b1, b2, eps, wd, decay):
    """torch.optim.AdamW's update (decoupled decay on the parameters whose
    decay(path) is true, bias correction) for a pytree: step(ps, m, v, t,
    g) -> (ps, m, v, t)."""
    def step(ps, m, v, t, g):
        t = t + 1.0
        c1, c2 = 1.0 - b1 ** t, 1.0 - b2 ** t
        m = jax.tree_util.tree_map(lambda m_, g_: b1 * m_ + (1 - b1) * g_, m, g)
        v = jax.tree_util.tree_map(lambda v_, g_: b2 * v_ + (1 - b2) * g_ * g_, v, g)
        ps = {k: p * (1 - lr * (wd if decay(k) else 0.0)) - lr * (m[k] / c1) /
              (jnp.sqrt(v[k] / c2) + eps) for k, p in ps.items()}
        return ps, m, v, t
    return step


def train_loop(loss, params, opt, batches, steps, warm, clip=None):
    """The jitted step (gradient, optional clipping to a global norm, the
    optimizer), state donated; the step times of `steps` calls after
    `warm` (which compile)."""
    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)  # noqa: E731

    def step_(state, x, y):
        ps, m, v, t = state
        g = jax.grad(loss)(ps, x, y)
        if clip is not None:
            norm = jnp.sqrt(sum(jnp.sum(q * q) for q in jax.tree_util.tree_leaves(g)))
            g = jax.tree_util.tree_map(lambda q: q * jnp.minimum(1.0, clip / (norm + 1e-6)), g)
        return opt(ps, m, v, t, g)

    step_j = jax.jit(step_, donate_argnums=0)
    state = [(params, zeros(), zeros(), jnp.float32(0))]
    it = [0]

    def step():
        x, y = batches(it[0])
        it[0] += 1
        state[0] = step_j(state[0], x, y)
        return state[0]

    return timed(step, steps, warm)


def w8():
    """The gpt example's training step (bench/gpt_torch.py's model: D=256, 4
    layers, 8 heads of 32, RoPE, causal attention, silu MLP of 4D, tied
    output; T=128, batch 16; AdamW lr 1e-3, betas 0.9/0.99, decay 0.01 on
    the matrices and the embedding; clipping to norm 1)."""
    D, L, B, T, H = 256, 4, 16, 128, 8
    hd = D // H
    rng = np.random.default_rng(8)
    nrm = lambda *sh: jnp.asarray((rng.standard_normal(sh) / math.sqrt(sh[0])).astype(np.float32))  # noqa: E731
    ps = {"emb": jnp.asarray((rng.standard_normal((256, D)) * 0.02).astype(np.float32)),
          "gain": jnp.ones(D), "bout": jnp.zeros(256)}
    for l in range(L):
        ps.update({"b%d_g1" % l: jnp.ones(D), "b%d_wqkv" % l: nrm(D, 3 * D),
                   "b%d_wo" % l: nrm(D, D), "b%d_g2" % l: jnp.ones(D),
                   "b%d_w1" % l: nrm(D, 4 * D), "b%d_w2" % l: nrm(4 * D, D)})
    inv = 10000.0 ** (-2.0 * np.arange(hd // 2) / hd)
    ang = np.arange(T)[:, None] * inv[None, :]
    cos, sin = jnp.asarray(np.cos(ang), jnp.float32), jnp.asarray(np.sin(ang), jnp.float32)
    mask = jnp.asarray(np.triu(np.full((T, T), -np.inf, np.float32), 1))
    rms = lambda x: x * jax.lax.rsqrt(jnp.mean(x * x, -1, keepdims=True) + EPS)  # noqa: E731

    def rope(x):
        x1, x2 = x[..., :hd // 2], x[..., hd // 2:]
        return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def loss(p, x, y):
        h = p["emb"][x]
        for l in range(L):
            a = rms(h) * p["b%d_g1" % l]
            qkv = (a @ p["b%d_wqkv" % l]).reshape(B, T, 3, H, hd).transpose(2, 0, 3, 1, 4)
            q, k, v = rope(qkv[0]), rope(qkv[1]), qkv[2]
            s = q @ jnp.swapaxes(k, -1, -2) * (1.0 / math.sqrt(hd)) + mask
            o = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(B, T, D)
            h = h + o @ p["b%d_wo" % l]
            h = h + jax.nn.silu((rms(h) * p["b%d_g2" % l]) @ p["b%d_w1" % l]) @ p["b%d_w2" % l]
        logits = (rms(h) * p["gain"]) @ p["emb"].T + p["bout"]
        return cross_entropy(logits.reshape(-1, 256), y.reshape(-1))

    decay = lambda k: k == "emb" or k.endswith(("wqkv", "wo", "w1", "w2"))  # noqa: E731
    data, bg = load_text(), np.random.default_rng(1)

    def batches(_):
        o = bg.integers(0, len(data) - T - 1, B)[:, None] + np.arange(T + 1)[None, :]
        w = data[o]
        return jnp.asarray(w[:, :T]), jnp.asarray(w[:, 1:])

    ts = train_loop(loss, ps, adamw(1e-3, 0.9, 0.99, 1e-8, 0.01, decay), batches, 10, 3, clip=1.0)
    emit("W8", "gpt_train_tokens_per_s", ts, per_call=float(B * T), unit="tok/s")


def w9():
    """The cnn example's training step (bench/cnn_torch.py's network: conv3x3
    3->16, BN, ReLU; a residual block 16->16; max pool 2x2; a block 16->32
    with a 1x1 conv + BN skip; global average pool; linear 32->10), batch 32
    of 3x32x32, batch statistics in BN, AdamW (torch's defaults, lr 1e-3).
    The peak RSS above the RSS before the model, as the other sides."""
    rng = np.random.default_rng(9)
    x_all = jnp.asarray(rng.standard_normal((512, 3, 32, 32), dtype=np.float32))
    y_all = jnp.asarray(rng.integers(0, 10, 512).astype(np.int32))
    with open("/proc/self/statm") as f:
        base = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    conv_w = lambda o, i, k: jnp.asarray(  # noqa: E731
        (rng.standard_normal((o, i, k, k)) / math.sqrt(i * k * k)).astype(np.float32))
    ps = {"stem": conv_w(16, 3, 3), "b1c1": conv_w(16, 16, 3), "b1c2": conv_w(16, 16, 3),
          "b2c1": conv_w(32, 16, 3), "b2c2": conv_w(32, 32, 3), "skip": conv_w(32, 16, 1),
          "head_w": jnp.asarray((rng.standard_normal((32, 10)) / math.sqrt(32)).astype(np.float32)),
          "head_b": jnp.zeros(10)}
    for n, c in (("stem", 16), ("b1n1", 16), ("b1n2", 16), ("b2n1", 32), ("b2n2", 32),
                 ("skip", 32)):
        ps[n + "_g"], ps[n + "_b"] = jnp.ones(c), jnp.zeros(c)

    def conv(x, w):
        k = w.shape[-1]
        return jax.lax.conv_general_dilated(x, w, (1, 1), [(k // 2, k // 2)] * 2,
                                            dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def bn(x, p, n):
        mu = jnp.mean(x, (0, 2, 3), keepdims=True)
        var = jnp.mean((x - mu) ** 2, (0, 2, 3), keepdims=True)
        return ((x - mu) * jax.lax.rsqrt(var + 1e-5) * p[n + "_g"][None, :, None, None]
                + p[n + "_b"][None, :, None, None])

    def loss(p, x, y):
        relu = jax.nn.relu
        h = relu(bn(conv(x, p["stem"]), p, "stem"))
        r = relu(bn(conv(h, p["b1c1"]), p, "b1n1"))
        h = relu(bn(conv(r, p["b1c2"]), p, "b1n2") + h)
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        r = relu(bn(conv(h, p["b2c1"]), p, "b2n1"))
        h = relu(bn(conv(r, p["b2c2"]), p, "b2n2") + bn(conv(h, p["skip"]), p, "skip"))
        return cross_entropy(jnp.mean(h, (2, 3)) @ p["head_w"] + p["head_b"], y)

    def batches(s):
        i = (s * 32) % 512
        return x_all[i:i + 32], y_all[i:i + 32]

    ts = train_loop(loss, ps, adamw(1e-3, 0.9, 0.999, 1e-8, 0.01, lambda k: True), batches, 30, 3)
    emit("W9", "cnn_train_step_ms", ts, scale=1e3)
    emit("W9", "peak_rss_above_start_MiB", [maxrss_mib() - base], unit="MiB")


def w10():
    """Half precision: square bf16 products at 256 and 1024, the tanh GELU
    and add on 16M bf16 elements, a new output each call."""
    rng = np.random.default_rng(10)
    u = lambda *sh: jnp.asarray(rng.uniform(-1, 1, sh).astype(np.float32)).astype(jnp.bfloat16)  # noqa: E731
    mm = jax.jit(lambda p, q: p @ q)
    for n, reps in ((256, 41), (1024, 15)):
        a, b = u(n, n), u(n, n)
        emit("W10", "bf16_gemm_%d_gflops" % n, timed(lambda: mm(a, b), reps, 3), scale=1e-9,
             per_call=2.0 * n ** 3, unit="GFLOP/s")
    n = 16 * 1024 * 1024
    a, b = u(n), u(n)
    gelu = jax.jit(lambda p: jax.nn.gelu(p, approximate=True))
    add = jax.jit(lambda p, q: p + q)
    emit("W10", "bf16_gelu_tanh_16M_GBps", timed(lambda: gelu(a), 15, 3), scale=1e-9,
         per_call=4.0 * n, unit="GB/s")
    emit("W10", "bf16_add_16M_GBps", timed(lambda: add(a, b), 15, 3), scale=1e-9,
         per_call=6.0 * n, unit="GB/s")


WORKLOADS = {"W1": w1, "W3": w3, "W4": w4, "W5": w5, "W6": w6, "W7": w7, "W8": w8, "W9": w9,
             "W10": w10}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(WORKLOADS):
        if name in WORKLOADS:
            WORKLOADS[name]()
        else:
            print("jax_ref.py: %s skipped (no JAX version)" % name, file=sys.stderr)
