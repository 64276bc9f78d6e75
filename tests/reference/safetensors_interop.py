#!/usr/bin/env python3
"""Cross-check gad's safetensors files with an independent reader and writer.

Python standard library only (json, struct): no torch, numpy or safetensors.

    safetensors_interop.py write PATH   write the tensors of TENSORS, with
                                        "__metadata__" {"format": "pt"}
    safetensors_interop.py check PATH   read a file (tests/test_checkpoint.c
                                        has gad write one) and verify that it
                                        holds exactly the tensors of TENSORS:
                                        names, dtypes, shapes and values

`check` exits 1 on the first mismatch (saying what it is), 2 on bad usage.
tests/reference/python_written.safetensors was made with `write`; the C test
loads it without Python. Keep TENSORS in step with test_checkpoint.c.
"""
import json
import struct
import sys

# (name, dtype, shape, values in row-major order). The names exercise JSON
# escapes: json.dumps writes the non-ASCII ones as \\uXXXX (a surrogate pair
# for U+1D703), and the quote and backslash escaped.
TENSORS = [
    ("weight.\u03b8\U0001d703", "F32", [2, 3], [i * 0.5 for i in range(6)]),
    ("scale", "F64", [], [3.25]),
    ('ids "quoted" \\ back', "I64", [4], [-2, 0, 7, 1 << 40]),
    ("empty", "F32", [0, 2], []),
]

STRUCT = {"F32": ("<f", 4), "F64": ("<d", 8), "I64": ("<q", 8)}


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write(path):
    header = {"__metadata__": {"format": "pt"}}
    data = bytearray()
    for name, dtype, shape, values in TENSORS:
        code, size = STRUCT[dtype]
        begin = len(data)
        for v in values:
            data += struct.pack(code, v)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [begin, len(data)]}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)  # pad as the reference does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


def fail(msg):
    print("safetensors_interop.py check: " + msg, file=sys.stderr)
    sys.exit(1)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        fail("duplicate key in %r" % keys)
    return dict(pairs)


def check(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail("file of %d bytes" % len(blob))
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        fail("header length %d past the end of the file" % n)
    if (8 + n) % 8 != 0:
        fail("header length %d is not padded to a multiple of 8" % n)
    text = blob[8:8 + n].decode("utf-8")
    if not text.startswith("{"):
        fail("header does not start with '{'")
    header = json.loads(text, object_pairs_hook=no_duplicates)
    buf = blob[8 + n:]
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        fail("__metadata__ is not an object of strings")
    want = {t[0]: t for t in TENSORS}
    if set(header) != set(want):
        fail("names %r, expected %r" % (sorted(header), sorted(want)))
    spans = []
    for name, info in header.items():
        _, dtype, shape, values = want[name]
        if info.get("dtype") != dtype:
            fail("%r: dtype %r, expected %r" % (name, info.get("dtype"), dtype))
        if info.get("shape") != shape:
            fail("%r: shape %r, expected %r" % (name, info.get("shape"), shape))
        begin, end = info["data_offsets"]
        code, size = STRUCT[dtype]
        if end - begin != numel(shape) * size:
            fail("%r: data_offsets %r do not match the shape" % (name, [begin, end]))
        spans.append((begin, end, name))
        got = [struct.unpack_from(code, buf, begin + i * size)[0]
               for i in range(numel(shape))]
        if got != values:
            fail("%r: values %r, expected %r" % (name, got, values))
    at = 0
    for begin, end, name in sorted(spans):
        if begin != at:
            fail("%r: data starts at %d, expected %d (gap or overlap)" % (name, begin, at))
        at = end
    if at != len(buf):
        fail("tensors cover %d of %d data bytes" % (at, len(buf)))
    print("safetensors_interop.py check: %s ok (%d tensors)" % (path, len(header)))


def main(argv):
    if len(argv) != 3 or argv[1] not in ("write", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    (write if argv[1] == "write" else check)(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
