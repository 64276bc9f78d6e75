#!/usr/bin/python3
"""Write promotion.txt: the dtype of a binary elementwise op (add, sub, mul,
div, maximum, minimum) on every pair of gad's dtypes, each operand
dimensioned ([3]) or 0-d, as PyTorch's torch.result_type gives it, with
gad's two differences applied:
  - two dimensioned tensors of different dtypes are an error (gad's rule,
    stricter than PyTorch's: "dtype");
  - the ops take floats only: an i64 result is an error too ("dtype").
tests/test_elementwise.c (promotion_follows_pytorch) reads it; no test
needs Python. The dtypes: f32, f64, i64, and (issue 29) f16, bf16, i32, u8,
which Debian's torch 1.13 knows.

Run with Debian's interpreter and torch (apt-get install python3-torch):
    /usr/bin/python3 tests/reference/make_promotion.py > tests/reference/promotion.txt

Format: one line per pair: A_DTYPE A_KIND B_DTYPE B_KIND RESULT, where a
KIND is "dim" ([3]) or "0d" and RESULT is a gad dtype or "dtype" (a dtype
error).
"""
import sys

import torch

DTYPES = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64,
          # issue 29: the half dtypes and the small integers
          "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32, "u8": torch.uint8}
NAMES = {v: k for k, v in DTYPES.items()}


def operand(name, kind):
    t = torch.ones(3, dtype=DTYPES[name])
    return t if kind == "dim" else t[0].clone()  # 0-d: a tensor, not a number


out = sys.stdout
out.write("# written by tests/reference/make_promotion.py (torch %s)\n" % torch.__version__)
for a in DTYPES:
    for ka in ("dim", "0d"):
        for b in DTYPES:
            for kb in ("dim", "0d"):
                x, y = operand(a, ka), operand(b, kb)
                r = NAMES[torch.result_type(x, y)]
                if ka == "dim" and kb == "dim" and a != b:
                    r = "dtype"  # gad: no implicit promotion between dimensioned tensors
                elif r in ("i64", "i32", "u8"):
                    r = "dtype"  # gad: these ops take floats
                # PyTorch computes the op in that dtype too
                assert r == "dtype" or NAMES[(x + y).dtype] == r
                out.write("%s %s %s %s %s\n" % (a, ka, b, kb, r))
