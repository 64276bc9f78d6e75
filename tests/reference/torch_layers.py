#!/usr/bin/env python3
"""PyTorch's side of tests/test_modules.c (gad.h "Layers with PyTorch's names").

    torch_layers.py              build the model below with seed 0 and write
                                 tests/data/torch_layers.safetensors (its
                                 state_dict, nothing else) and
                                 tests/data/torch_layers_io.safetensors (the
                                 inputs, the logits and the buffers after
                                 training-mode forwards)
    torch_layers.py --check PATH load a state_dict file that gad wrote with
                                 load_state_dict(strict=True) and print the
                                 largest logit difference against PATH.io
                                 (gad's logits; test_modules writes both with
                                 GAD_MODULES_KEEP=PATH) or else the io file

Run with a current PyTorch (/work/venv/bin/python; not needed by CI: the C
test reads the committed files). The safetensors files are read and written
with the standard library (json + struct), not the safetensors package.
Keep Net in step with build_net() in tests/test_modules.c.
"""
import json
import os
import struct
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
MODEL = os.path.join(DATA, "torch_layers.safetensors")
IO = os.path.join(DATA, "torch_layers_io.safetensors")

V, D, H, FF, T = 11, 8, 2, 16, 5


class Text(nn.Module):
    """embedding -> two encoder layers (post-norm GELU with a causal bool
    mask; pre-norm ReLU with a key padding mask) -> layer norm -> RMS norm
    -> linear head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D, padding_idx=0)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu",
                                       batch_first=True),
            nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="relu",
                                       batch_first=True, norm_first=True),
        ])
        self.norm = nn.LayerNorm(D)
        self.rms = nn.RMSNorm(D)
        self.head = nn.Linear(D, V)

    def forward(self, idx):
        t = idx.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        x = self.embed(idx)
        x = self.layers[0](x, src_mask=causal)
        x = self.layers[1](x, src_key_padding_mask=idx == 0)
        return self.head(self.rms(self.norm(x)))


def conv_net():
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=(1, 0), groups=2, bias=False),
        nn.BatchNorm2d(6, momentum=None),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(6, 3),
    )


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.text = Text()
        self.conv = conv_net()


DTYPES = {torch.float32: ("F32", "<f"), torch.float64: ("F64", "<d"),
          torch.int64: ("I64", "<q"), torch.bool: ("BOOL", "<?")}
CODES = {"F32": (torch.float32, "<f", 4), "F64": (torch.float64, "<d", 8),
         "I64": (torch.int64, "<q", 8), "BOOL": (torch.bool, "<?", 1)}


def write(path, tensors):
    header, data = {}, bytearray()
    for name, t in tensors.items():
        tag, code = DTYPES[t.dtype]
        begin = len(data)
        for v in t.detach().contiguous().reshape(-1).tolist():
            data += struct.pack(code, v)
        header[name] = {"dtype": tag, "shape": list(t.shape),
                        "data_offsets": [begin, len(data)]}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, h in header.items():
        dtype, code, size = CODES[h["dtype"]]
        b, e = h["data_offsets"]
        raw = blob[8 + n + b:8 + n + e]
        vals = [struct.unpack_from(code, raw, i)[0] for i in range(0, len(raw), size)]
        out[name] = torch.tensor(vals, dtype=dtype).reshape(h["shape"])
    return out


def inputs():
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(1, V, (2, T), generator=g)
    idx[0, 3] = 0  # the padding index (padding_idx=0; masked as a key in layers.1)
    idx[1, 4] = 0
    img_a = torch.randn(2, 2, 6, 8, generator=g)
    img_b = torch.randn(3, 2, 6, 8, generator=g)
    return idx, img_a, img_b


def run(net, io):
    """The logits and buffers that test_modules.c compares."""
    idx, img_a, img_b = inputs()
    net.eval()
    with torch.no_grad():
        io["text.logits"] = net.text(idx)
        net.conv.train()
        io["conv.logits_train_a"] = net.conv(img_a)
        io["conv.logits_train_b"] = net.conv(img_b)
        for name, b in net.conv.named_buffers():
            io["after." + name] = b.clone()
        net.conv.eval()
        io["conv.logits_eval"] = net.conv(img_a)
    io["text.idx"], io["conv.img_a"], io["conv.img_b"] = idx, img_a, img_b


def want_path(gad_io):
    return gad_io if os.path.exists(gad_io) else IO


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        net = Net()
        net.load_state_dict(read(sys.argv[2]), strict=True)
        gad_io = sys.argv[2] + ".io"
        want = read(gad_io if os.path.exists(gad_io) else IO)
        got = {}
        run(net, got)
        worst = max((got[k] - want[k]).abs().max().item()
                    for k in want if k.endswith("logits") or "logits_" in k)
        print("load_state_dict(strict=True) accepted %s; largest logit difference "
              "against %s: %.3g" % (sys.argv[2], os.path.basename(want_path(gad_io)), worst))
        return
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    torch.manual_seed(0)
    net = Net()
    os.makedirs(DATA, exist_ok=True)
    write(MODEL, net.state_dict())
    io = {}
    run(net, io)
    write(IO, io)
    print("wrote %s (%d tensors) and %s (%d)" % (MODEL, len(net.state_dict()), IO, len(io)))


if __name__ == "__main__":
    main()
