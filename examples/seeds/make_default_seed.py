#!/usr/bin/python3
"""Write the tiny default FlowMuT seed: OUTDIR/tiny_mix.pt + OUTDIR/tiny_mix.inputs.pt.

Usage:  /usr/bin/python3 examples/seeds/make_default_seed.py OUTDIR

The committed copy lives in tests/data/ so that the C++ tests need no Python:

    /usr/bin/python3 examples/seeds/make_default_seed.py tests/data

Same formats as make_zoo.py: the module is traced (gradients enabled, eval
mode, torch.manual_seed(0), check_trace on) and saved with torch.jit.save; the
inputs file is torch.save([(x0,), (x1,), (x2,)]) with x* of shape 1x3x8x8
float32, x0 being the trace input.  The saved file is reloaded and checked
against the eager model on all three inputs.

In a handful of nodes the model mixes what the fuzzer has to handle:
conv2d + batch_norm + relu, flatten/transpose to tokens (a non-contiguous
edge), layer_norm, a 2-head attention (linear, chunk into q/k/v views of one
storage, reshape, transpose, matmul, softmax), an in-place add_ and relu_, a
view of the conv features consumed twice (shared storage; the conv feature
edge has several consumers), a cat, and a 2-tensor output tuple.
"""

import os
import sys

import torch
import torch.nn as nn

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_zoo import SeedError, calibrate_bn, trace_and_save  # noqa: E402

torch.set_num_threads(1)


class TinyMix(nn.Module):
    def __init__(self, cin=3, c=8, heads=2, classes=4):
        super().__init__()
        self.heads, self.hd = heads, c // heads
        self.scale = self.hd ** -0.5
        self.conv = nn.Conv2d(cin, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.ln = nn.LayerNorm(c)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)
        self.head = nn.Linear(2 * c, classes)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))          # B,C,H,W  (used 3 times below)
        b, c, h, w = y.shape
        t = y.flatten(2).transpose(1, 2)               # B,HW,C   non-contiguous view of y
        q, k, v = self.qkv(self.ln(t)).chunk(3, dim=-1)   # three views of one storage
        q = q.reshape(b, h * w, self.heads, self.hd).transpose(1, 2)
        k = k.reshape(b, h * w, self.heads, self.hd).transpose(1, 2)
        v = v.reshape(b, h * w, self.heads, self.hd).transpose(1, 2)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * self.scale, dim=-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(b, h * w, c)
        o = self.proj(o)
        o.add_(t)                                      # in-place residual
        s = y.view(b, c, h * w)                        # view of y, two consumers
        pooled = torch.cat([s.mean(dim=-1), s.amax(dim=-1)], dim=1)
        logits = self.head(pooled)
        fmap = o.transpose(1, 2).reshape(b, c, h, w) + y
        return logits, torch.relu_(fmap)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: %s OUTDIR" % argv[0], file=sys.stderr)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    model = TinyMix()
    calibrate_bn(model, torch.randn(8, 3, 8, 8))
    inputs = [(torch.randn(1, 3, 8, 8),) for _ in range(3)]
    out_pt = os.path.join(outdir, "tiny_mix.pt")
    out_inputs = os.path.join(outdir, "tiny_mix.inputs.pt")
    try:
        trace_and_save("tiny_mix", model, inputs, out_pt, out_inputs)
    except SeedError as e:
        print("ERROR: %s" % e, file=sys.stderr)
        return 1
    nodes = len(list(torch.jit.load(out_pt).inlined_graph.nodes()))
    print("tiny_mix: %s (%d bytes, %d nodes), %s (%d bytes)"
          % (out_pt, os.path.getsize(out_pt), nodes, out_inputs, os.path.getsize(out_inputs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
