#!/usr/bin/env python3
"""Seeds with a known TorchScript defect (LibTorch 1.13 and 2.15), for the reduction and reproducer tests.

gelu_tanh_conv.pt: a small conv net whose gelu(approximate='tanh') follows a convolution.
torch.jit.optimize_for_inference converts it to an MKLDNN gelu that supports only the exact
gelu and raises (docs/findings.md, F2): the campaign's round 0 finds it in the seed itself.

dropout_p0.pt: a conv net with dropout(x, 0.0, train=True) (as swin_v2_t's attention has it):
under TorchScript autodiff the dropout becomes native_dropout, which draws random numbers even
at p = 0, while eager dropout does not (docs/findings.md, F5): a `state` finding at round 0.

Usage: make_repro_seeds.py OUT_DIR   (run with the Python of the build under test: .venv/bin/python or /usr/bin/python3)
"""
import os
import sys

import torch


class GeluTanhConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.stem(x)))
        z = torch.nn.functional.gelu(self.conv(y), approximate='tanh')
        z = z + y
        return self.head(z.mean((2, 3)))


class DropoutP0(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return torch.nn.functional.dropout(y, 0.0, True).mean((2, 3))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = GeluTanhConv().eval()
    torch.jit.save(torch.jit.script(m), os.path.join(out, "gelu_tanh_conv.pt"))
    g = torch.Generator().manual_seed(1)
    torch.save([(torch.randn(1, 3, 8, 8, generator=g),) for _ in range(2)],
               os.path.join(out, "gelu_tanh_conv.inputs.pt"))
    d = DropoutP0().eval()
    torch.jit.save(torch.jit.script(d), os.path.join(out, "dropout_p0.pt"))
    torch.save([(torch.randn(1, 3, 8, 8, generator=g),) for _ in range(2)],
               os.path.join(out, "dropout_p0.inputs.pt"))


if __name__ == "__main__":
    main()
