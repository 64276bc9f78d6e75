#!/usr/bin/env python3
"""Write the tables of tests/test_half.c: PyTorch's conversions between
f32/f64/i64 and the two-byte floats, as tensor conversions (.to) compute
them. Needs PyTorch 2.x and numpy (the tests do not):
    /work/venv/bin/python tests/reference/make_half_tables.py tests/reference/half

Files, little-endian binary records:
  f16_to_f32.bin   65,536 u32: the f32 bits of every f16 bit pattern
  bf16_to_f32.bin  65,536 u32: the same for bf16
  f32_to_half.bin  (u32 input bits, u16 f16, u16 bf16) per input
  f64_to_half.bin  (u64 input bits, u16 f16, u16 bf16) per input
  i64_to_half.bin  (i64 input, u16 f16, u16 bf16) per input
The f32 inputs cover, for each exponent of f16 and bf16, values next to
the representable ones and to the midpoints between them (ties,
subnormals, the overflow boundary), NaNs with several payloads and
signs, infinities, f32 subnormals and random bit patterns.
"""
import os
import sys

import numpy as np
import torch

rng = np.random.default_rng(20261206)
outdir = sys.argv[1] if len(sys.argv) > 1 else "."


def conv(a, dtype):
    # pad to a multiple of 64 so that every element goes through the
    # vectorised conversion (as a tensor's .to does for its body)
    n = len(a)
    pad = (-n) % 64
    t = torch.from_numpy(np.concatenate([a, np.zeros(pad, a.dtype)]))
    return t.to(dtype).view(torch.int16).numpy().view(np.uint16)[:n]


def around(bits32):
    """bits32 and the f32 values one ulp either side."""
    b = np.asarray(bits32, np.int64)
    return np.concatenate([b - 1, b, b + 1])


def half_values(exp_bits, man_bits, sel):
    """f32 bit patterns of half values (exponents e, mantissas in sel) and of
    the midpoints above them, for a format with exp_bits/man_bits."""
    out = []
    bias = (1 << (exp_bits - 1)) - 1
    for e in range(0, (1 << exp_bits) - 1):
        for m in sel:
            for mid in (0, 1):
                if e == 0:
                    v = np.float64(m + 0.5 * mid) * 2.0 ** (1 - bias - man_bits)
                else:
                    v = (1 + (m + 0.5 * mid) / 2.0**man_bits) * 2.0 ** (e - bias)
                if v < 3.5e38:
                    out.append(np.array([v], np.float32).view(np.uint32)[0])
    return np.array(out, np.int64)


f16_sel = sorted(set([0, 1, 2, 3, 511, 512, 513, 1021, 1022, 1023] +
                     list(rng.integers(0, 1024, 12))))
bf16_sel = sorted(set([0, 1, 2, 63, 64, 65, 126, 127] + list(rng.integers(0, 128, 6))))
pos = np.concatenate([
    around(half_values(5, 10, f16_sel)),
    around(half_values(8, 7, bf16_sel)),
    around(np.array([0x477fe000, 0x477ff000, 0x47800000, 0x7f7f0000, 0x7f7f8000,
                     0x7f7fffff, 0x7f800000 - 1, 0x00800000, 0x00000001, 1,
                     0x33000000, 0x33800000, 0x38800000, 0x387fc000])),
]) & 0xffffffff
pos = pos[(pos & 0x7fffffff) <= 0x7f800000]
specials = np.array([0x7f800000, 0x7f800001, 0x7fc00000, 0x7fffffff, 0x7fa00000,
                     0x7f800100, 0x7fbfffff, 0x7fc12345, 0, 0x00400000,
                     0x007fffff], np.int64)
rand = rng.integers(0, 1 << 32, 30000, dtype=np.int64)
f32_in = np.concatenate([pos, pos | 0x80000000, specials, specials | 0x80000000, rand])
f32_in = np.unique(f32_in.astype(np.uint32))
x = f32_in.view(np.float32)
rec = np.zeros(len(x), dtype=[("x", "<u4"), ("h", "<u2"), ("b", "<u2")])
rec["x"], rec["h"], rec["b"] = f32_in, conv(x, torch.float16), conv(x, torch.bfloat16)
rec.tofile(os.path.join(outdir, "f32_to_half.bin"))

# f64: PyTorch rounds to f32 first (double rounding): values just off the
# f32 midpoints of half ties show it, plus random doubles in half's range
xs = rng.choice(x[np.isfinite(x)], 8000, replace=False).astype(np.float64)
f64 = np.concatenate([
    xs, xs * (1 + 2.0**-30), xs * (1 - 2.0**-30),
    rng.standard_normal(5000) * 10.0 ** rng.integers(-9, 6, 5000),
    np.array([np.nan, -np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-324, 65520.0,
              65519.99999999]),
])
f64 = np.unique(f64.view(np.uint64)).view(np.float64)
rec = np.zeros(len(f64), dtype=[("x", "<u8"), ("h", "<u2"), ("b", "<u2")])
rec["x"], rec["h"], rec["b"] = f64.view(np.uint64), conv(f64, torch.float16), \
    conv(f64, torch.bfloat16)
rec.tofile(os.path.join(outdir, "f64_to_half.bin"))

ints = np.concatenate([
    np.arange(-3000, 3000),
    (1 << np.arange(0, 63)) + rng.integers(-3, 4, 63),
    -(1 << np.arange(0, 63)) + rng.integers(-3, 4, 63),
    np.array([2049, 2051, 65504, 65519, 65520, 65535, 65536, 16777217, 16777219,
              (1 << 63) - 1, -(1 << 63), 2**31 - 1, -2**31]),
    rng.integers(-(1 << 62), 1 << 62, 4000),
    rng.integers(-70000, 70000, 4000),
]).astype(np.int64)
ints = np.unique(ints)
rec = np.zeros(len(ints), dtype=[("x", "<i8"), ("h", "<u2"), ("b", "<u2")])
rec["x"], rec["h"], rec["b"] = ints, conv(ints, torch.float16), conv(ints, torch.bfloat16)
rec.tofile(os.path.join(outdir, "i64_to_half.bin"))

allh = torch.arange(65536, dtype=torch.int32).to(torch.int16)
for name, dt in (("f16", torch.float16), ("bf16", torch.bfloat16)):
    f = allh.view(dt).to(torch.float32).view(torch.int32).numpy().astype("<u4")
    f.tofile(os.path.join(outdir, name + "_to_f32.bin"))
print("f32 inputs %d, f64 %d, i64 %d" % (len(f32_in), len(f64), len(ints)))
