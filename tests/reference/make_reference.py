#!/usr/bin/python3
"""Write torch_reference.txt: forward values and gradients of gad's ops as
PyTorch computes them, for tests/test_reference.c (which needs no Python).

Run with Debian's interpreter and torch (apt-get install python3-torch):
    /usr/bin/python3 tests/reference/make_reference.py > tests/reference/torch_reference.txt

Each case: an op with fixed inputs (both f64 and f32), its output y, fixed
weights w, and the gradients of L = sum(w * y) for every float input.

Format (whitespace separated; one case per block):
    case NAME OP DTYPE
    iparams N v...          integer parameters (axes, shapes, ...)
    dparams N v...          real parameters
    inputs N
    DTYPE LEAF RANK dims... values...      (N times; LEAF 1 = differentiable)
    output RANK dims... values...
    weight values...
    grad HAS values...                      (N times; HAS 0 = no gradient)
    end
"""
import math
import sys

import torch

torch.manual_seed(20261129)
out = sys.stdout


def fmt(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def dtname(dt):
    return {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64"}[dt]


def write_tensor(t, with_dtype=True, leaf=None):
    parts = []
    if with_dtype:
        parts.append(dtname(t.dtype))
        parts.append("1" if leaf else "0")
    parts.append(str(t.dim()))
    parts += [str(d) for d in t.shape]
    flat = t.detach().reshape(-1).tolist()
    if t.dtype == torch.int64:
        parts += [str(int(v)) for v in flat]
    else:
        parts += [fmt(v) for v in flat]
    return " ".join(parts)


def case(name, op, dtype, inputs, fn, iparams=(), dparams=(), fixed_w=False):
    """inputs: list of (tensor, differentiable). fn: torch function of them.
    fixed_w: the weights are fixed_weights(y's size), not drawn."""
    ins = []
    for t, diff in inputs:
        t = t.to(dtype) if t.is_floating_point() else t
        t = t.detach().clone()
        if diff:
            t.requires_grad_(True)
        ins.append((t, diff))
    y = fn(*[t for t, _ in ins])
    if fixed_w:
        w = torch.tensor(fixed_weights(y.numel()), dtype=torch.float64).reshape(y.shape)
        w = w.to(y.dtype)
    else:
        w = (torch.rand(y.shape, dtype=torch.float64) + 0.5).to(y.dtype)
    loss = (y * w).sum()
    diff_ins = [t for t, d in ins if d]
    grads = torch.autograd.grad(loss, diff_ins, allow_unused=True) if diff_ins else []
    print("case %s %s %s" % (name, op, dtname(dtype)), file=out)
    print("iparams %d %s" % (len(iparams), " ".join(str(int(v)) for v in iparams)), file=out)
    print("dparams %d %s" % (len(dparams), " ".join(fmt(v) for v in dparams)), file=out)
    print("inputs %d" % len(ins), file=out)
    for t, d in ins:
        print(write_tensor(t, True, d), file=out)
    print("output " + write_tensor(y, False), file=out)
    print("weight " + " ".join(fmt(v) for v in w.reshape(-1).tolist()), file=out)
    gi = iter(grads)
    for t, d in ins:
        if d:
            g = next(gi)
            if g is None:
                g = torch.zeros_like(t)
            print("grad 1 " + " ".join(fmt(v) for v in g.reshape(-1).tolist()), file=out)
        else:
            print("grad 0", file=out)
    print("end", file=out)


def fixed_values(n):
    """n inputs that are not drawn: quarters in [-1.25, 1.25], exact in f32"""
    return [(i * 5 % 11 - 5) / 4 for i in range(n)]


def fixed_weights(n):
    """n weights that are not drawn: eighths in [0.5, 1.375], exact in f32"""
    return [0.5 + (i * 3 % 8) / 8 for i in range(n)]


def F(*shape):
    return torch.tensor(fixed_values(math.prod(shape)), dtype=torch.float64).reshape(shape)


def U(*shape, lo=-2.0, hi=2.0):
    return torch.rand(*shape, dtype=torch.float64) * (hi - lo) + lo


def away(t, d):
    """push values at least d away from 0"""
    return torch.where(t.abs() < d, t.sign() * d + t, t)


for dt in (torch.float64, torch.float32):
    # binary, with broadcasting
    for op, f in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul)]:
        case(op + "_bcast", op, dt, [(U(3, 1), 1), (U(4), 1)], f)
        case(op + "_same", op, dt, [(U(2, 3), 1), (U(2, 3), 1)], f)
    case("div_bcast", "div", dt, [(U(2, 3), 1), (away(U(3), 0.5), 1)], torch.div)
    a, b = U(3, 4), U(3, 4)
    b = torch.where((a - b).abs() < 0.2, b + 0.5, b)
    case("maximum", "maximum", dt, [(a, 1), (b, 1)], torch.maximum)
    case("minimum", "minimum", dt, [(a, 1), (b, 1)], torch.minimum)
    # unary
    x = U(3, 4)
    xa = away(U(3, 4), 0.1)
    xp = U(3, 4, lo=0.3, hi=3.0)
    for op, f, inp in [
        ("neg", torch.neg, x), ("square", torch.square, x), ("relu", torch.relu, xa),
        ("tanh", torch.tanh, x), ("exp", torch.exp, x), ("log", torch.log, xp),
        ("sqrt", torch.sqrt, xp), ("abs", torch.abs, xa), ("sign", torch.sign, xa),
        ("sigmoid", torch.sigmoid, x), ("silu", torch.nn.functional.silu, x),
        ("gelu", lambda t: torch.nn.functional.gelu(t, approximate="tanh"), x),
        ("softplus", torch.nn.functional.softplus, U(3, 4, lo=-25, hi=25)),
    ]:
        case(op, op, dt, [(inp, 1)], f)
    case("mul_scalar", "mul_scalar", dt, [(x, 1)], lambda t: t * -1.5, dparams=[-1.5])
    case("add_scalar", "add_scalar", dt, [(x, 1)], lambda t: t + 0.75, dparams=[0.75])
    case("pow_scalar", "pow_scalar", dt, [(xp, 1)], lambda t: t ** 2.5, dparams=[2.5])
    case("pow_scalar_neg", "pow_scalar", dt, [(xp, 1)], lambda t: t ** -1.0, dparams=[-1.0])
    case("leaky_relu", "leaky_relu", dt, [(xa, 1)],
         lambda t: torch.nn.functional.leaky_relu(t, 0.1), dparams=[0.1])
    xc = torch.where(((x.abs() - 1).abs() < 0.1), x * 1.3, x)
    case("clamp", "clamp", dt, [(xc, 1)], lambda t: torch.clamp(t, -1, 1), dparams=[-1, 1])
    # reductions
    x3 = U(2, 3, 4)
    case("sum_axis", "sum", dt, [(x3, 1)], lambda t: t.sum(dim=(1,)), iparams=[0, 1, 1])
    case("sum_axes_keep", "sum", dt, [(x3, 1)], lambda t: t.sum(dim=(0, 2), keepdim=True),
         iparams=[1, 2, 0, 2])
    case("sum_all", "sum", dt, [(x3, 1)], lambda t: t.sum(), iparams=[0, 3, 0, 1, 2])
    case("mean_axis", "mean", dt, [(x3, 1)], lambda t: t.mean(dim=(-1,)), iparams=[0, 1, -1])
    case("mean_axes_keep", "mean", dt, [(x3, 1)], lambda t: t.mean(dim=(0, 1), keepdim=True),
         iparams=[1, 2, 0, 1])
    case("variance", "variance", dt, [(x3, 1)], lambda t: t.var(dim=(1,), unbiased=False),
         iparams=[0, 1, 1])
    case("stddev_keep", "stddev", dt, [(x3, 1)],
         lambda t: t.std(dim=(0, 2), unbiased=False, keepdim=True), iparams=[1, 2, 0, 2])
    case("amax", "amax", dt, [(x3, 1)], lambda t: t.amax(dim=1), iparams=[1, 0])
    case("amax_keep", "amax", dt, [(x3, 1)], lambda t: t.amax(dim=-1, keepdim=True),
         iparams=[-1, 1])
    case("logsumexp", "logsumexp", dt, [(x3 * 3, 1)], lambda t: t.logsumexp(dim=2),
         iparams=[2, 0])
    for ax in (0, 1, 2, -1):
        case("softmax_%d" % ax, "softmax", dt, [(x3 * 2, 1)],
             lambda t, a=ax: torch.softmax(t, dim=a), iparams=[ax])
        case("log_softmax_%d" % ax, "log_softmax", dt, [(x3 * 2, 1)],
             lambda t, a=ax: torch.log_softmax(t, dim=a), iparams=[ax])
    # matmul, with NumPy's 1-D rules and broadcast batches
    for name, sa, sb in [("mm", (3, 4), (4, 5)), ("dot", (4,), (4,)), ("mv", (3, 4), (4,)),
                         ("vm", (4,), (4, 2)), ("bmm_bcast", (2, 1, 2, 3), (3, 3, 2)),
                         ("vbatch", (3,), (2, 3, 2)), ("batch_mat", (2, 3, 4), (4, 2))]:
        case("matmul_" + name, "matmul", dt, [(U(*sa), 1), (U(*sb), 1)], torch.matmul)
    # indexing
    xg = U(3, 4)
    idx = torch.tensor([[1, 3], [0, 0], [2, 1]])
    case("gather", "gather", dt, [(xg, 1), (idx, 0)], lambda t, i: torch.gather(t, 1, i),
         iparams=[1])
    idx0 = torch.tensor([[2, 0, 1, 1], [0, 0, 2, 1]])
    case("gather_axis0", "gather", dt, [(xg, 1), (idx0, 0)],
         lambda t, i: torch.gather(t, 0, i), iparams=[0])
    sidx = torch.tensor([[1, 1, 3], [0, 2, 2], [3, 0, 1]])
    case("scatter_add", "scatter_add", dt, [(xg, 1), (sidx, 0), (U(3, 3), 1)],
         lambda d, i, s: torch.scatter_add(d, 1, i, s), iparams=[1])
    tidx = torch.tensor([2, 0, 3])
    case("take", "take", dt, [(xg, 1), (tidx, 0)],
         lambda t, i: torch.take_along_dim(t, i.unsqueeze(1), dim=1).squeeze(1), iparams=[1])
    case("cat", "cat", dt, [(U(2, 3), 1), (U(1, 3), 1), (U(3, 3), 1)],
         lambda *ts: torch.cat(ts, dim=0), iparams=[0])
    case("cat_last", "cat", dt, [(U(2, 1), 1), (U(2, 3), 1)],
         lambda *ts: torch.cat(ts, dim=-1), iparams=[-1])
    case("stack", "stack", dt, [(U(2, 3), 1), (U(2, 3), 1)],
         lambda *ts: torch.stack(ts, dim=1), iparams=[1])
    # views
    case("reshape", "reshape", dt, [(U(3, 4), 1)], lambda t: t.reshape(2, 6) * 1.0,
         iparams=[2, 6])
    case("permute", "permute", dt, [(x3, 1)], lambda t: t.permute(2, 0, 1), iparams=[2, 0, 1])
    case("transpose", "transpose", dt, [(U(3, 4), 1)], lambda t: t.transpose(-2, -1))
    case("slice", "slice", dt, [(U(5, 6), 1)], lambda t: t[1:5:2, ::3],
         iparams=[1, 5, 2, 0, 6, 3])
    case("select", "select", dt, [(x3, 1)], lambda t: t.select(1, -1), iparams=[1, -1])
    case("unsqueeze", "unsqueeze", dt, [(U(3, 4), 1)], lambda t: t.unsqueeze(1), iparams=[1])
    case("squeeze", "squeeze", dt, [(U(3, 1, 4), 1)], lambda t: t.squeeze(1), iparams=[1])
    case("broadcast_to", "broadcast_to", dt, [(U(3, 1), 1)], lambda t: t.expand(2, 3, 4),
         iparams=[2, 3, 4])
    case("cast", "cast", dt, [(U(3, 4), 1)],
         lambda t: t.to(torch.float32 if t.dtype == torch.float64 else torch.float64))

# flip and roll. Added when torch was not at hand: their inputs and weights
# are fixed (F, fixed_weights), not drawn, so that the cases below could be
# computed without torch and appended to torch_reference.txt (the values are
# exact: outputs and gradients only reorder the inputs and the weights).
# iparams: flip, the dims; roll, whether dims are given, the shifts, the dims.
for dt in (torch.float64, torch.float32):
    case("flip_0_2", "flip", dt, [(F(2, 3, 4), 1)], lambda t: torch.flip(t, (0, 2)),
         iparams=[0, 2], fixed_w=True)
    case("flip_last", "flip", dt, [(F(3, 4), 1)], lambda t: torch.flip(t, (-1,)),
         iparams=[-1], fixed_w=True)
    case("roll_2d", "roll", dt, [(F(3, 4), 1)], lambda t: torch.roll(t, (1, -5), (0, 1)),
         iparams=[1, 1, -5, 0, 1], fixed_w=True)
    case("roll_flat", "roll", dt, [(F(3, 4), 1)], lambda t: torch.roll(t, 7),
         iparams=[0, 7], fixed_w=True)
    case("roll_repeat", "roll", dt, [(F(2, 3, 4), 1)],
         lambda t: torch.roll(t, (-1, 2), (1, 1)), iparams=[1, -1, 2, 1, 1], fixed_w=True)
    case("roll_big", "roll", dt, [(F(2, 3), 1)], lambda t: torch.roll(t, -8, -1),
         iparams=[1, -8, -1], fixed_w=True)

# ---- math family (issue 27): sin ... pow, the activations, exact gelu.
# Kept after the cases above so that their drawn values stay as they were.
# iparams of gelu_ex: 0 = "none", 1 = "tanh".
FN = torch.nn.functional


def hardsigmoid(t):
    """F.hardsigmoid as its composition: torch 1.13's backward multiplies by
    1/6 rounded to float even in f64 (3e-8 off); the values here are off
    the kinks, where the two agree otherwise"""
    return torch.clamp(t + 3, 0, 6) / 6

for dt in (torch.float64, torch.float32):
    x = U(3, 4, lo=-3, hi=3)
    xa = away(U(3, 4), 0.1)
    xu = U(3, 4, lo=-0.9, hi=0.9)
    xp = U(3, 4, lo=0.3, hi=3.0)
    xh = torch.where(((x.abs() - 3).abs() < 0.1), x * 1.1, x)
    for op, f, inp in [
        ("sin", torch.sin, x * 3), ("cos", torch.cos, x * 3), ("tan", torch.tan, xu),
        ("asin", torch.asin, xu), ("acos", torch.acos, xu), ("atan", torch.atan, x),
        ("erf", torch.erf, x), ("erfc", torch.erfc, x), ("rsqrt", torch.rsqrt, xp),
        ("reciprocal", torch.reciprocal, away(U(3, 4), 0.5)),
        ("log1p", torch.log1p, U(3, 4, lo=-0.9, hi=3)), ("expm1", torch.expm1, x),
        ("log2", torch.log2, xp), ("exp2", torch.exp2, x), ("selu", FN.selu, xa),
        ("mish", FN.mish, x), ("hardsigmoid", hardsigmoid, xh * 1.3),
        ("hardswish", FN.hardswish, xh * 1.3), ("gelu_erf", FN.gelu, x),
    ]:
        case(op, op, dt, [(inp, 1)], f)
    case("elu", "elu", dt, [(xa, 1)], lambda t: FN.elu(t, 1.0), dparams=[1.0])
    case("elu_alpha", "elu", dt, [(xa, 1)], lambda t: FN.elu(t, 0.7), dparams=[0.7])
    xc = torch.where(((x.abs() - 1).abs() < 0.1), x * 1.3, x)
    case("hardtanh", "hardtanh", dt, [(xc, 1)], lambda t: FN.hardtanh(t, -1.0, 1.0),
         dparams=[-1, 1])
    case("hardtanh_wide", "hardtanh", dt, [(xc, 1)], lambda t: FN.hardtanh(t, -0.5, 2.0),
         dparams=[-0.5, 2])
    case("gelu_ex_none", "gelu_ex", dt, [(x, 1)], lambda t: FN.gelu(t), iparams=[0])
    case("gelu_ex_tanh", "gelu_ex", dt, [(x, 1)], lambda t: FN.gelu(t, approximate="tanh"),
         iparams=[1])
    case("atan2_bcast", "atan2", dt, [(U(3, 1), 1), (away(U(4), 0.3), 1)], torch.atan2)
    case("atan2_same", "atan2", dt, [(U(2, 3), 1), (U(2, 3), 1)], torch.atan2)
    case("pow_bcast", "pow", dt, [(xp, 1), (U(4), 1)], torch.pow)
    # x = 0 with e >= 0 and e = 0: PyTorch's zero gradients there
    case("pow_zeros", "pow", dt,
         [(torch.tensor([0.0, 0.0, 2.0, 1.5]), 1), (torch.tensor([2.0, 0.0, 0.0, 3.0]), 1)],
         torch.pow)
