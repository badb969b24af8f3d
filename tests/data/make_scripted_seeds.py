#!/usr/bin/env python3
"""Scripted (torch.jit.script) models with control flow, from library code nobody here wrote,
for tests/cli/scripted_flow.sh: torchvision's densenet121 (lists grown by append in a loop over
its layers) and googlenet (branches on aux logits, a warning), torch.nn's TransformerEncoder
(MultiheadAttention's fast-path checks: attributes freezing keeps, forward arguments left at
their defaults), LSTM and GRU (overloads forward__0/forward__1), and a hand-made model whose
branch depends on the inputs' values, saved twice: with inputs that agree and with inputs that
take different branches. Each NAME.pt comes with NAME.inputs.pt (two inputs).

Usage: make_scripted_seeds.py OUT_DIR
"""
import os
import sys
import warnings

import torch
import torchvision.models as tvm

warnings.filterwarnings("ignore")
torch.manual_seed(0)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)


class ValueBranch(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool(x.sum() > 0):
            y = torch.relu(x)
        else:
            y = torch.tanh(x)
        for i in range(x.size(0)):
            y = y + x[i]
        return y


img = lambda: [(torch.randn(1, 3, 32, 32),) for _ in range(2)]
seq = lambda: [(torch.randn(2, 5, 16),) for _ in range(2)]
models = {
    "densenet121": (tvm.densenet121(), img()),
    "googlenet": (tvm.googlenet(aux_logits=False, init_weights=True), img()),
    "transformer_encoder": (torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2), seq()),
    "lstm": (torch.nn.LSTM(16, 32, batch_first=True), seq()),
    "gru": (torch.nn.GRU(16, 32, batch_first=True), seq()),
    "value_branch": (ValueBranch(), [(torch.rand(3, 4) + 0.1,), (torch.rand(3, 4) + 0.2,)]),
    "value_branch_disagree": (ValueBranch(), [(torch.rand(3, 4) + 0.1,), (-torch.rand(3, 4) - 0.1,)]),
}
for name, (m, inputs) in models.items():
    torch.jit.script(m.eval()).save(os.path.join(out, name + ".pt"))
    torch.save(inputs, os.path.join(out, name + ".inputs.pt"))
    print(name, "saved")
