#!/usr/bin/env python3
"""The newcomer matrix: torchvision models and torch.nn recurrent/transformer modules saved the
way a new user would try them, scripted (torch.jit.script), traced (torch.jit.trace) and, on
PyTorch 2.x, exported (torch.export.export + torch.export.save to NAME.export.pt2, whose
profiling inputs are the program's sample inputs), with random weights and three profiling
inputs each (NAME.FORM.inputs.pt). Prints one line per model and form: saved, or why torch
refused it.

Usage: make_models.py OUT_DIR   (run with the Python of the build under test)
"""
import os
import sys
import warnings

import torch
import torchvision.models as tvm
import torchvision.models.detection as tvd
import torchvision.models.segmentation as tvs

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(1)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)

img = lambda s=64: [(torch.randn(1, 3, s, s),) for _ in range(3)]
seq = lambda: [(torch.randn(2, 5, 16),) for _ in range(3)]
models = {
    "resnet50": (lambda: tvm.resnet50(), img()),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(), img()),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), img()),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), img()),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), img()),
    "densenet121": (lambda: tvm.densenet121(), img()),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, init_weights=True), img()),
    "squeezenet": (lambda: tvm.squeezenet1_0(), img()),
    "alexnet": (lambda: tvm.alexnet(), img(96)),
    "vgg11": (lambda: tvm.vgg11(), img()),
    "swin_t": (lambda: tvm.swin_t(), img()),
    "vit_b_16": (lambda: tvm.vit_b_16(image_size=64), img()),
    "deeplabv3_mobilenet_v3_large": (lambda: tvs.deeplabv3_mobilenet_v3_large(weights_backbone=None), img()),
    "fcos_resnet50_fpn": (lambda: tvd.fcos_resnet50_fpn(weights_backbone=None, min_size=64, max_size=64), [([torch.rand(3, 64, 64)],) for _ in range(3)]),
    "lstm": (lambda: torch.nn.LSTM(16, 32, batch_first=True), seq()),
    "gru": (lambda: torch.nn.GRU(16, 32, batch_first=True), seq()),
    "transformer_encoder": (lambda: torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2), seq()),
}
only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
for name, (make, inputs) in models.items():
    if only and name not in only:
        continue
    m = make().eval()
    forms = ("script", "trace", "export") if hasattr(torch, "export") and hasattr(torch.export, "save") else ("script", "trace")
    for form in forms:
        path = os.path.join(out, "%s.%s.pt" % (name, form))
        try:
            if form == "export":
                torch.export.save(torch.export.export(m, inputs[0]), path + "2")
                print("%-30s %-6s saved" % (name, form), flush=True)
                continue
            if form == "script":
                s = torch.jit.script(m)
            else:
                with torch.no_grad():
                    s = torch.jit.trace(m, inputs[0], check_trace=False, strict=False)
            s.save(path)
            torch.save(inputs, os.path.join(out, "%s.%s.inputs.pt" % (name, form)))
            print("%-30s %-6s saved" % (name, form), flush=True)
        except Exception as e:
            print("%-30s %-6s torch refused: %s" % (name, form, (str(e).strip().splitlines() or [type(e).__name__])[0][:150]), flush=True)
