#!/usr/bin/env python3
"""torch.export programs (.pt2) for the pt2 test (tests/cli/pt2_programs.sh), made as a user makes
them: `torch.export.export(model.eval(), args)` then `torch.export.save`, random weights.

  small.pt2     conv, batch norm (eval), relu, flatten, linear
  resnet18.pt2  torchvision's resnet18, 1x3x64x64
  encoder.pt2   a torch.nn.TransformerEncoderLayer (batch_first), 1x8x32
  cond.pt2      torch.cond: data-dependent control flow kept in the program (refused)
  dynamic.pt2   a batch dimension exported as dynamic (refused: symbolic shapes)
  train_bn.pt2  batch norm exported in training mode: the program mutates its running stats (refused)

Each program is saved with its sample inputs (what torch.export.save keeps of the example
arguments), which flowmut profiles on when no inputs file is given.
Usage: make_pt2_seeds.py OUT_DIR
"""
import os
import sys

import torch
import torch.nn as nn


def save(out, name, model, args, **kw):
    ep = torch.export.export(model, args, **kw)
    torch.export.save(ep, os.path.join(out, name + ".pt2"))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    small = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8 * 8 * 8, 10)).eval()
    with torch.no_grad():
        small[1].running_mean.uniform_(-0.5, 0.5)
        small[1].running_var.uniform_(0.5, 2.0)
    save(out, "small", small, (torch.randn(2, 3, 8, 8),))

    import torchvision
    save(out, "resnet18", torchvision.models.resnet18(num_classes=10).eval(), (torch.randn(1, 3, 64, 64),))

    enc = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True).eval()
    save(out, "encoder", enc, (torch.randn(1, 8, 32),))

    class Cond(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))
    save(out, "cond", Cond(), (torch.randn(4),))

    class Lin(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(x).relu()
    batch = torch.export.Dim("batch", min=2, max=64)
    save(out, "dynamic", Lin().eval(), (torch.randn(4, 4),), dynamic_shapes=({0: batch},))

    save(out, "train_bn", nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4)).train(), (torch.randn(2, 3, 4, 4),))
    print("pt2 seeds in", out)


if __name__ == "__main__":
    main()
