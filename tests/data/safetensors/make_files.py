#!/usr/bin/env python3
"""Writes the safetensors files tests/test_safetensors.c reads: an
independent writer (the Python standard library only: struct and json; no
torch, no safetensors package), so that gad's reader is checked against a
file it did not write.

One file per dtype, "<dtype>.safetensors", holding
  x      the values under test, in that dtype
  want   the values gad must read: F64 for the floats (NaN, Inf and
         subnormals included), I64 for the integers and BOOL
  bits   (F16, BF16 only) the raw bit patterns, as I64
and the gad dtype x must load as in __metadata__ {"gad_dtype": ...}.
Then a file with metadata, a file mixing readable and unreadable tensors,
and hostile files (bad_*.safetensors) that gad must refuse with a clear
error. Run from anywhere: python3 make_files.py (writes beside itself).
"""
import json
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def header_bytes(header):
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * (-len(h) % 8)
    return h


def write(name, tensors, meta=None, raw_header=None, cut=0):
    """tensors: list of (name, dtype, shape, bytes), in file order."""
    header, data = {}, b""
    if meta is not None:
        header["__metadata__"] = meta
    for tname, dt, shape, b in tensors:
        header[tname] = {"dtype": dt, "shape": shape,
                         "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = raw_header if raw_header is not None else header_bytes(header)
    blob = struct.pack("<Q", len(h)) + h + data
    if cut:
        blob = blob[:-cut]
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(blob)


def f64s(vals):
    return struct.pack("<%dd" % len(vals), *vals)


def i64s(vals):
    return struct.pack("<%dq" % len(vals), *vals)


# ---- decoders written from the formats' definitions (for "want")

def f16_value(h):
    s, e, m = h >> 15, (h >> 10) & 31, h & 1023
    if e == 31:
        v = math.inf if m == 0 else math.nan
    elif e == 0:
        v = m * 2.0 ** -24
    else:
        v = (1 + m / 1024) * 2.0 ** (e - 15)
    return math.copysign(v, -1.0 if s else 1.0)


def bf16_value(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def e4m3_value(b):
    # OCP OFP8 rev 1.0: E4M3, bias 7, no Inf, S.1111.111 = NaN
    s, e, m = b >> 7, (b >> 3) & 15, b & 7
    if e == 15 and m == 7:
        v = math.nan
    elif e == 0:
        v = (m / 8) * 2.0 ** (1 - 7)
    else:
        v = (1 + m / 8) * 2.0 ** (e - 7)
    return math.copysign(v, -1.0 if s else 1.0)


def e5m2_value(b):
    # OCP OFP8 rev 1.0: E5M2, bias 15, IEEE-like
    s, e, m = b >> 7, (b >> 2) & 31, b & 3
    if e == 31:
        v = math.inf if m == 0 else math.nan
    elif e == 0:
        v = (m / 4) * 2.0 ** (1 - 15)
    else:
        v = (1 + m / 4) * 2.0 ** (e - 15)
    return math.copysign(v, -1.0 if s else 1.0)


def dtype_file(st, gad, fmt, xs, want, want_kind, shape=None, bits=None):
    shape = shape or [len(xs)]
    xb = struct.pack("<%d%s" % (len(xs), fmt), *xs)
    ts = [("x", st, shape, xb),
          ("want", want_kind, shape, f64s(want) if want_kind == "F64" else i64s(want))]
    if bits is not None:
        ts.append(("bits", "I64", shape, i64s(bits)))
    write(st.lower() + ".safetensors", ts, meta={"gad_dtype": gad})


def main():
    inf, nan = math.inf, math.nan
    fl = [0.0, -0.0, 1.0, -2.5, 1e-45, -1.17549435e-38, 3.4028234663852886e38, inf, -inf, nan,
          0.1, 65504.0]
    f32 = [struct.unpack("<f", struct.pack("<f", v))[0] for v in fl]
    dtype_file("F32", "f32", "f", f32, f32, "F64", shape=[3, 4])
    f64 = [0.0, -0.0, 5e-324, -2.2250738585072014e-308, 1.7976931348623157e308, inf, -inf, nan,
           0.1, -1.0 / 3]
    dtype_file("F64", "f64", "d", f64, f64, "F64", shape=[2, 5])
    i64 = [0, 1, -1, 2 ** 63 - 1, -2 ** 63, 123456789012345]
    dtype_file("I64", "i64", "q", i64, i64, "I64", shape=[2, 3])
    bl = [0, 1, 1, 0, 1]
    dtype_file("BOOL", "bool", "B", bl, bl, "I64")
    # F16: zeros, one, max, min normal, subnormals (min, max), Inf, NaNs
    # (quiet and signalling payloads, negative), 1/3
    h16 = [0x0000, 0x8000, 0x3c00, 0xc000, 0x7bff, 0x0400, 0x0001, 0x03ff, 0x8001, 0x7c00,
           0xfc00, 0x7e00, 0x7c01, 0xfe00, 0x3555, 0x5640]
    dtype_file("F16", "f16", "H", h16, [f16_value(h) for h in h16], "F64", shape=[4, 4],
               bits=h16)
    b16 = [0x0000, 0x8000, 0x3f80, 0xc020, 0x7f7f, 0x0080, 0x0001, 0x007f, 0x8001, 0x7f80,
           0xff80, 0x7fc0, 0x7f81, 0xffff, 0x3eab, 0x4049]
    dtype_file("BF16", "bf16", "H", b16, [bf16_value(h) for h in b16], "F64", shape=[2, 8],
               bits=b16)
    i32 = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 1234567]
    dtype_file("I32", "i32", "i", i32, i32, "I64")
    u8 = [0, 1, 127, 128, 254, 255]
    dtype_file("U8", "u8", "B", u8, u8, "I64")
    i8 = [0, 1, -1, 127, -128, 42]
    dtype_file("I8", "i32", "b", i8, i8, "I64")
    i16 = [0, 1, -1, 32767, -32768, 1234]
    dtype_file("I16", "i32", "h", i16, i16, "I64")
    u16 = [0, 1, 32767, 32768, 65535, 4321]
    dtype_file("U16", "i32", "H", u16, u16, "I64")
    u32 = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 7654321]
    dtype_file("U32", "i64", "I", u32, u32, "I64")
    u64 = [0, 1, 2 ** 32, 2 ** 63 - 1, 99]
    dtype_file("U64", "i64", "Q", u64, u64, "I64")
    # every FP8 bit pattern, 16 x 16
    allb = list(range(256))
    dtype_file("F8_E4M3", "f32", "B", allb, [e4m3_value(b) for b in allb], "F64",
               shape=[16, 16])
    dtype_file("F8_E5M2", "f32", "B", allb, [e5m2_value(b) for b in allb], "F64",
               shape=[16, 16])

    # metadata: PyTorch's pair, non-ASCII text, characters JSON escapes
    write("meta.safetensors", [("w", "F32", [2], struct.pack("<2f", 1.5, -2.0))],
          meta={"format": "pt", "model": "helix", "text": "h\u00e9llo \u2713 \U0001F600",
                "quoted": "a\"b\\c\nd\te\u0001", "": "empty key", "empty": ""})
    # readable and unreadable tensors side by side
    write("mixed.safetensors", [
        ("a", "F32", [2], struct.pack("<2f", 1.0, 2.0)),
        ("scale", "F8_E8M0", [2], bytes([127, 128])),
        ("c", "I8", [3], struct.pack("<3b", -5, 0, 5)),
        ("z", "C64", [1], struct.pack("<2f", 1.0, -1.0)),
        ("h", "BF16", [1], struct.pack("<H", 0x3f80)),
    ], meta={"format": "pt"})
    write("u64_big.safetensors", [("x", "U64", [3], struct.pack("<3Q", 1, 2 ** 63, 3))])

    # ---- hostile files
    # a dtype tag whose size does not match shape x size (F16 [4] with 16 bytes)
    write("bad_wrong_size.safetensors", [("w", "F16", [4], bytes(16))])
    # half data cut short: the offsets run past the end of the file
    write("bad_truncated_half.safetensors", [("w", "BF16", [8], bytes(16))], cut=6)
    # offsets out of range, written by hand
    hdr = header_bytes({"w": {"dtype": "F16", "shape": [2], "data_offsets": [4, 8]}})
    write("bad_offsets.safetensors", [], raw_header=hdr)
    with open(os.path.join(HERE, "bad_offsets.safetensors"), "ab") as f:
        f.write(bytes(4))
    # metadata that is not string -> string
    for tag, meta in [("number", {"epochs": 3}), ("null", {"note": None}),
                      ("object", {"cfg": {"d": "64"}}), ("array", {"dims": ["1", "2"]}),
                      ("bool", {"ok": True})]:
        write("bad_meta_%s.safetensors" % tag, [], meta=meta)
    write("bad_meta_not_object.safetensors", [], meta=["format", "pt"])
    # duplicate metadata keys (json.dumps cannot write them)
    hdr = b'{"__metadata__":{"format":"pt","lr":"0.1","format":"np"}}'
    write("bad_meta_duplicate.safetensors", [], raw_header=hdr + b" " * (-len(hdr) % 8))


if __name__ == "__main__":
    main()
