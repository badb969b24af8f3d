#!/usr/bin/env python3
"""Build the third-party seed zoo: models whose code comes from libraries nobody here wrote
(torchvision, timm, transformers), instantiated from their own constructors and configs with
random weights (torch.manual_seed(0); nothing is downloaded), saved as torch.export programs
(.pt2) and, where tracing works, as TorchScript (.pt).

Usage (the project's venv has the pinned torch, torchvision, timm and transformers):

    .venv/bin/python examples/seeds/make_zoo3p.py OUTDIR [--only a,b] [--list] [--force]

For every seed NAME this writes

    OUTDIR/NAME.pt2        torch.export.export(model.eval(), args) + torch.export.save
                           (its sample inputs are the first profiling input)
    OUTDIR/NAME.pt         torch.jit.trace of the same model, where tracing works
    OUTDIR/NAME.inputs.pt  torch.save(list of 3 argument tuples), shared by both files
    OUTDIR/manifest.json   one entry per seed: library, family, task, which formats were written
                           and, for a format that was not, the framework's reason

Each file is reloaded (torch.export.load(...).module(), torch.jit.load) and checked against the
eager model on all three inputs; a file that differs is not written. Sizes are kept small
(64x64 images, short sequences, shrunken configs) so that generation stays under 3 minutes on
2 cores. A seed whose files are newer than this script is skipped (--force rebuilds).
"""

import argparse
import json
import os
import sys
import time
import traceback
import warnings

import torch
import torch.nn as nn

warnings.filterwarnings("ignore", category=FutureWarning)  # torch.jit.* say TorchScript is deprecated

torch.set_num_threads(2)
IMG = (1, 3, 64, 64)


# Three profiling inputs of one shape, batch 2: a torch.export program has static shapes, and the
# .pt and the .pt2 of a seed share NAME.inputs.pt.
def images(shape=IMG):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(2, *shape[1:], generator=g),) for _ in range(3)]


def tokens(vocab, seq=12, mask=False):
    g = torch.Generator().manual_seed(1)
    out = []
    for k in range(3):
        ids = torch.randint(0, vocab, (2, seq), generator=g)
        am = torch.ones(2, seq, dtype=torch.long)
        am[1, seq - 1 - 2 * k:] = 0  # the second sequence is padded, by 1, 3 and 5 tokens
        out.append((ids, am) if mask else (ids,))
    return out


class First(nn.Module):
    """Returns one tensor of a model whose forward returns a dict or a tuple (the tensor a user
    compares: logits, the segmentation map)."""

    def __init__(self, m, key):
        super().__init__()
        self.m, self.key = m, key

    def forward(self, *args):
        out = self.m(*args)
        return out[self.key]


class DetectorNet(nn.Module):
    """A torchvision detector's network, backbone and head: what runs before the post-processing
    (box decoding and torchvision::nms, an extension operator outside ATen)."""

    def __init__(self, det):
        super().__init__()
        self.backbone, self.head = det.backbone, det.head

    def forward(self, x):
        feats = self.backbone(x)
        feats = list(feats.values()) if isinstance(feats, dict) else list(feats)
        out = self.head(feats)
        return out["cls_logits"], out["bbox_regression"]


# ---- the seeds: name -> (builder, library, family, task) ------------------------------------

def tv(name, **kw):
    import torchvision
    return torchvision.models.get_model(name, weights=None, **kw)


def s_tv_resnet18():
    return tv("resnet18", num_classes=10), images()


def s_tv_mobilenet_v3():
    return tv("mobilenet_v3_small", num_classes=10), images()


def s_tv_efficientnet():
    return tv("efficientnet_b0", num_classes=10), images()


def s_tv_convnext():
    import torchvision
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    cfg = [CNBlockConfig(24, 48, 2), CNBlockConfig(48, 96, 2), CNBlockConfig(96, None, 2)]
    return ConvNeXt(cfg, num_classes=10), images()


def s_tv_regnet():
    return tv("regnet_y_400mf", num_classes=10), images()


def s_tv_densenet():
    import torchvision
    return torchvision.models.DenseNet(growth_rate=12, block_config=(2, 3, 2), num_init_features=16,
                                       num_classes=10), images()


def s_tv_squeezenet():
    return tv("squeezenet1_1", num_classes=10), images()


def s_tv_shufflenet():
    return tv("shufflenet_v2_x0_5", num_classes=10), images()


def s_tv_swin():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                           num_classes=10), images()


def s_tv_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                             num_classes=10), images()


def s_tv_ssdlite():
    det = tv("ssdlite320_mobilenet_v3_large", weights_backbone=None, num_classes=5)
    return DetectorNet(det), images(shape=(1, 3, 128, 128))


def s_tv_lraspp():
    return First(tv("lraspp_mobilenet_v3_large", weights_backbone=None, num_classes=5), "out"), images()


def s_tv_deeplab():
    return First(tv("deeplabv3_mobilenet_v3_large", weights_backbone=None, num_classes=5, aux_loss=False), "out"), images()


def timm_model(name, **kw):
    import timm
    return timm.create_model(name, pretrained=False, num_classes=10, **kw)


def s_timm_mobilevit():
    return timm_model("mobilevit_xxs"), images()


def s_timm_convnextv2():
    return timm_model("convnextv2_atto"), images()


def s_timm_deit():
    return timm_model("deit_tiny_patch16_224", img_size=64), images()


def s_timm_efficientvit():
    return timm_model("efficientvit_m0"), images()


def s_timm_levit():
    return timm_model("levit_128s", img_size=64), images()


def hf_config(cls, **kw):
    c = cls(**kw)
    c._attn_implementation = "sdpa"
    return c


class HF(nn.Module):
    """A transformers model called with keyword arguments, returning its first output (logits or
    the last hidden state) as a tensor."""

    def __init__(self, m, names):
        super().__init__()
        self.m, self.names = m, names

    def forward(self, *args):
        out = self.m(**dict(zip(self.names, args)), return_dict=False)
        return out[0]


def s_hf_bert():
    from transformers import BertConfig, BertForSequenceClassification
    cfg = hf_config(BertConfig, vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=64, num_labels=3)
    return HF(BertForSequenceClassification(cfg), ["input_ids", "attention_mask"]), tokens(512, mask=True)


def s_hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = hf_config(GPT2Config, vocab_size=512, n_positions=64, n_embd=64, n_layer=2, n_head=4, use_cache=False,
                    bos_token_id=0, eos_token_id=0)
    return HF(GPT2LMHeadModel(cfg), ["input_ids"]), tokens(512)


def s_hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = hf_config(LlamaConfig, vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    return HF(LlamaForCausalLM(cfg), ["input_ids"]), tokens(512)


def s_hf_t5():
    from transformers import T5Config, T5EncoderModel
    cfg = hf_config(T5Config, vocab_size=512, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    return HF(T5EncoderModel(cfg), ["input_ids"]), tokens(512)


def s_hf_detr():
    from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig
    backbone = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                            layer_type="basic", out_features=["stage4"])
    cfg = DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                    d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                    decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_queries=10,
                    num_labels=5)
    return HF(DetrForObjectDetection(cfg), ["pixel_values"]), images()


SEEDS = {
    "tv_resnet18": (s_tv_resnet18, "torchvision", "ResNet", "classification"),
    "tv_mobilenet_v3": (s_tv_mobilenet_v3, "torchvision", "MobileNetV3", "classification"),
    "tv_efficientnet_b0": (s_tv_efficientnet, "torchvision", "EfficientNet", "classification"),
    "tv_convnext": (s_tv_convnext, "torchvision", "ConvNeXt", "classification"),
    "tv_regnet_y": (s_tv_regnet, "torchvision", "RegNet", "classification"),
    "tv_densenet": (s_tv_densenet, "torchvision", "DenseNet", "classification"),
    "tv_squeezenet": (s_tv_squeezenet, "torchvision", "SqueezeNet", "classification"),
    "tv_shufflenet_v2": (s_tv_shufflenet, "torchvision", "ShuffleNetV2", "classification"),
    "tv_swin": (s_tv_swin, "torchvision", "Swin Transformer", "classification"),
    "tv_vit": (s_tv_vit, "torchvision", "Vision Transformer", "classification"),
    "tv_ssdlite": (s_tv_ssdlite, "torchvision", "SSDLite", "detection"),
    "tv_lraspp": (s_tv_lraspp, "torchvision", "LR-ASPP", "segmentation"),
    "tv_deeplabv3": (s_tv_deeplab, "torchvision", "DeepLabV3", "segmentation"),
    "timm_mobilevit": (s_timm_mobilevit, "timm", "MobileViT", "classification"),
    "timm_convnextv2": (s_timm_convnextv2, "timm", "ConvNeXt V2", "classification"),
    "timm_deit": (s_timm_deit, "timm", "DeiT", "classification"),
    "timm_efficientvit": (s_timm_efficientvit, "timm", "EfficientViT", "classification"),
    "timm_levit": (s_timm_levit, "timm", "LeViT", "classification"),
    "hf_bert": (s_hf_bert, "transformers", "BERT", "text classification"),
    "hf_gpt2": (s_hf_gpt2, "transformers", "GPT-2", "language model"),
    "hf_llama": (s_hf_llama, "transformers", "Llama", "language model"),
    "hf_t5": (s_hf_t5, "transformers", "T5 encoder", "text encoder"),
    "hf_detr": (s_hf_detr, "transformers", "DETR", "detection"),
}


def first_line(e):
    """The framework's reason in one line: TorchScript's interpreter errors begin with "The
    following operation failed" and end with the error itself, which is the line kept."""
    lines = [x.strip() for x in str(e).splitlines() if x.strip()]
    if not lines:
        return type(e).__name__
    line = lines[-1] if lines[0].startswith("The following operation failed") else lines[0]
    return line if line.split(":")[0].endswith("Error") else "%s: %s" % (type(e).__name__, line)


def max_diff(a, b):
    if isinstance(a, (tuple, list)):
        return max(max_diff(x, y) for x, y in zip(a, b))
    return (a.double() - b.double()).abs().max().item()


def build(name, outdir):
    builder, library, family, task = SEEDS[name]
    torch.manual_seed(0)
    model, inputs = builder()
    model.eval()
    with torch.no_grad():
        eager = [model(*a) for a in inputs]
    entry = {"name": name, "library": library, "family": family, "task": task,
             "inputs_file": name + ".inputs.pt", "formats": {},
             "input_shapes": [[list(t.shape) for t in a] for a in inputs],
             "input_dtypes": [str(t.dtype).replace("torch.", "") for t in inputs[0]],
             "params": sum(p.numel() for p in model.parameters())}
    torch.save(inputs, os.path.join(outdir, name + ".inputs.pt"))

    # torch.export: static shapes of the first input; the other inputs of batch 1 run it too.
    pt2 = os.path.join(outdir, name + ".pt2")
    tmp2 = os.path.join(outdir, name + ".tmp.pt2")
    t0 = time.time()
    try:
        ep = torch.export.export(model, inputs[0])
        torch.export.save(ep, tmp2)
        loaded = torch.export.load(tmp2).module()
        diff = max(max_diff(loaded(*a), e) for a, e in zip(inputs, eager))
        if diff > 1e-4:
            raise RuntimeError("the loaded program differs from eager by %g" % diff)
        os.replace(tmp2, pt2)
        entry["formats"]["torch.export"] = {"file": name + ".pt2", "seconds": round(time.time() - t0, 2),
                                            "nodes": sum(1 for n in ep.graph.nodes if n.op == "call_function")}
    except Exception as e:  # noqa: BLE001 - the manifest records the framework's reason
        entry["formats"]["torch.export"] = {"error": first_line(e)}
        for p in (pt2, tmp2):
            if os.path.exists(p):
                os.remove(p)

    # TorchScript by tracing (gradients enabled: under no_grad nn.MultiheadAttention takes its
    # fused fast path, which has no derivative).
    pt = os.path.join(outdir, name + ".pt")
    t0 = time.time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(model, inputs[0], check_trace=False, strict=False)
        torch.jit.save(traced, pt + ".tmp")
        loaded = torch.jit.load(pt + ".tmp")
        with torch.no_grad():
            diff = max(max_diff(loaded(*a), e) for a, e in zip(inputs, eager))
        if diff > 1e-4:
            raise RuntimeError("the traced module differs from eager by %g on the profiling inputs" % diff)
        os.replace(pt + ".tmp", pt)
        entry["formats"]["torchscript"] = {"file": name + ".pt", "seconds": round(time.time() - t0, 2)}
    except Exception as e:  # noqa: BLE001
        entry["formats"]["torchscript"] = {"error": first_line(e)}
        for p in (pt, pt + ".tmp"):
            if os.path.exists(p):
                os.remove(p)
    return entry


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build the third-party seed zoo (torchvision, timm, transformers).")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--only", help="comma-separated seed names")
    ap.add_argument("--list", action="store_true", help="list the seeds and exit")
    ap.add_argument("--force", action="store_true", help="rebuild seeds even if up to date")
    args = ap.parse_args(argv)
    if args.list:
        for name, (_, lib, fam, task) in SEEDS.items():
            print("%-20s %-13s %-20s %s" % (name, lib, fam, task))
        return 0
    if not args.outdir:
        ap.error("OUTDIR is required")
    names = [n.strip() for n in args.only.split(",")] if args.only else list(SEEDS)
    unknown = [n for n in names if n not in SEEDS]
    if unknown:
        ap.error("unknown seed(s): %s (see --list)" % ", ".join(unknown))
    os.makedirs(args.outdir, exist_ok=True)
    mpath = os.path.join(args.outdir, "manifest.json")
    try:
        with open(mpath) as f:
            old = {e["name"]: e for e in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        old = {}
    script_mtime = os.path.getmtime(os.path.abspath(__file__))
    t_all = time.time()
    failed = []
    for name in names:
        inp = os.path.join(args.outdir, name + ".inputs.pt")
        if (not args.force and name in old and os.path.exists(inp) and os.path.getmtime(inp) > script_mtime
                and all(os.path.exists(os.path.join(args.outdir, v["file"])) for v in old[name]["formats"].values()
                        if "file" in v)):
            print("%-20s up to date, skipped" % name, flush=True)
            continue
        t0 = time.time()
        try:
            entry = build(name, args.outdir)
        except Exception as e:  # noqa: BLE001 - the model itself failed to build or run
            traceback.print_exc()
            failed.append(name)
            print("%-20s FAILED: %s" % (name, first_line(e)), flush=True)
            continue
        old[name] = entry
        fm = entry["formats"]
        say = "  ".join("%s %s" % (k, "ok" if "file" in v else "NO (" + v["error"][:90] + ")") for k, v in fm.items())
        print("%-20s %5.1f s  %s" % (name, time.time() - t0, say), flush=True)
    entries = [old[n] for n in SEEDS if n in old]
    with open(mpath, "w") as f:
        json.dump(entries, f, indent=2)
        f.write("\n")
    n_pt2 = sum("file" in e["formats"].get("torch.export", {}) for e in entries)
    n_pt = sum("file" in e["formats"].get("torchscript", {}) for e in entries)
    fams = len({e["family"] for e in entries if any("file" in v for v in e["formats"].values())})
    print("total %.1f s: %d seeds, %d families, %d .pt2, %d .pt" % (time.time() - t_all, len(entries), fams, n_pt2, n_pt))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
