#!/usr/bin/python3
"""Build the FlowMuT seed zoo: small TorchScript models exported by tracing.

Usage (Debian's python3 has torch 1.13 / torchvision 0.14; a pyenv `python3`
on PATH may not):

    /usr/bin/python3 examples/seeds/make_zoo.py OUTDIR [--only a,b] [--list]
                                                       [--force] [--node-kinds]
                                                       [-v]

For every seed NAME this writes

    OUTDIR/NAME.pt         the traced module (torch.jit.save)
    OUTDIR/NAME.inputs.pt  torch.save(list of 3 tuples of input tensors);
                           the first tuple is the trace input
    OUTDIR/manifest.json   one entry per seed present in OUTDIR

Every seed is traced with gradients ENABLED (tracing under no_grad would let
nn.MultiheadAttention take its fused fast path and record
aten::_native_multi_head_attention, which has no derivative), in eval mode,
with random weights (no downloads) and torch.manual_seed(0).  After saving,
each file is reloaded with torch.jit.load and checked against the eager model
on all three profiling inputs.

A seed whose NAME.pt and NAME.inputs.pt are both newer than this script is
skipped (use --force to rebuild).  --node-kinds additionally writes
OUTDIR/node_kinds.txt: the node kinds of every seed's graph after
torch._C._freeze_module (no conv-bn folding) and inlining.
"""

import argparse
import collections
import json
import math
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)

# Ops that must never be recorded (no derivative / fused inference-only paths).
FORBIDDEN_KINDS = (
    "aten::_native_multi_head_attention",
    "aten::_transformer_encoder_layer_fwd",
)

IMG = (1, 3, 64, 64)
SEQ = 16


# ---------------------------------------------------------------------------
# Shared building blocks for the hand-written models
# ---------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + self.eps) * self.weight


def attention(q, k, v, scale, bias=None, mask=None):
    """Plain scaled dot-product attention written with matmul/softmax; `mask` (True = may not
    attend) fills with -inf before the softmax."""
    att = torch.matmul(q, k.transpose(-2, -1)) * scale
    if bias is not None:
        att = att + bias
    if mask is not None:
        att = att.masked_fill(mask, float("-inf"))
    att = att.softmax(dim=-1)
    return torch.matmul(att, v)


class MLP(nn.Module):
    def __init__(self, dim, hidden, act=None):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = act if act is not None else nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SelfAttention(nn.Module):
    """ViT-style attention with a fused qkv projection (reshape/permute/unbind)."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        o = attention(q, k, v, self.scale)
        return self.proj(o.transpose(1, 2).reshape(b, n, c))


class CrossAttention(nn.Module):
    """nn.MultiheadAttention-like attention with separate q/k/v projections. Keys and values
    come from `xk` unless `xv` is given (DETR-style layers add position embeddings to the
    queries and keys only); `mask` as in attention()."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, xq, xk, xv=None, mask=None):
        xv = xk if xv is None else xv
        b, nq, c = xq.shape
        nk = xk.shape[1]
        h, hd = self.heads, c // self.heads
        q = self.q(xq).view(b, nq, h, hd).transpose(1, 2)
        k = self.k(xk).view(b, nk, h, hd).transpose(1, 2)
        v = self.v(xv).view(b, nk, h, hd).transpose(1, 2)
        o = attention(q, k, v, self.scale, mask=mask)
        return self.out(o.transpose(1, 2).contiguous().view(b, nq, c))


class ConvBNAct(nn.Module):
    def __init__(self, cin, cout, k=3, s=1, groups=1, act=True, inplace=False):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.SiLU(inplace=inplace) if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


def calibrate_bn(model, batch, gen_seed=1):
    """Make eval-mode BatchNorm meaningful for a randomly initialised model.

    Random-init BN has running mean 0 / var 1, which does not match the actual
    activation statistics; through a deep net the input-dependent signal then
    vanishes next to the BN biases and the output is (nearly) the same for
    every input.  Perturb the affine parameters a little, then re-estimate the
    running statistics on `batch` (a training-mode pass without gradients,
    cumulative averaging), as a BN recalibration would."""
    g = torch.Generator().manual_seed(gen_seed)
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for m in bns:
            n = m.num_features
            if m.affine:
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)
            m.reset_running_stats()
            m.momentum = None
        model.train()
        model(batch)
    model.eval()
    for m in bns:
        m.momentum = 0.1


# ---------------------------------------------------------------------------
# qwen_decoder: Qwen2-style decoder-only LM
# ---------------------------------------------------------------------------


def rotate_half(x):
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


class QwenAttention(nn.Module):
    def __init__(self, d, nh, nkv):
        super().__init__()
        self.nh, self.nkv, self.hd = nh, nkv, d // nh
        self.q_proj = nn.Linear(d, nh * self.hd, bias=True)
        self.k_proj = nn.Linear(d, nkv * self.hd, bias=True)
        self.v_proj = nn.Linear(d, nkv * self.hd, bias=True)
        self.o_proj = nn.Linear(nh * self.hd, d, bias=False)

    def repeat_kv(self, x):
        b, nkv, t, hd = x.shape
        rep = self.nh // self.nkv
        x = x[:, :, None, :, :].expand(b, nkv, rep, t, hd)
        return x.reshape(b, nkv * rep, t, hd)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = self.repeat_kv(k)
        v = self.repeat_kv(v)
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        att = att.masked_fill(mask, float("-inf"))
        att = F.softmax(att.float(), dim=-1).to(q.dtype)
        o = torch.matmul(att, v).transpose(1, 2).reshape(b, t, self.nh * self.hd)
        return self.o_proj(o)


class QwenMLP(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class QwenLayer(nn.Module):
    def __init__(self, d, nh, nkv, hidden):
        super().__init__()
        self.input_layernorm = RMSNorm(d)
        self.self_attn = QwenAttention(d, nh, nkv)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = QwenMLP(d, hidden)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        out = self.mlp(self.post_attention_layernorm(h))
        return out.add_(h)  # in-place residual


class QwenDecoder(nn.Module):
    def __init__(self, vocab=256, d=64, nh=4, nkv=2, hidden=176, layers=2, max_pos=64):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([QwenLayer(d, nh, nkv, hidden) for _ in range(layers)])
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied embeddings (shared storage)
        cos, sin = rope_tables(d // nh, max_pos, 10000.0)
        self.register_buffer("cos_cached", cos)
        self.register_buffer("sin_cached", sin)
        self.register_buffer("causal", torch.ones(max_pos, max_pos, dtype=torch.bool).triu(1))

    def forward(self, ids):
        t = ids.shape[1]
        x = self.embed_tokens(ids)
        cos = self.cos_cached[:t]
        sin = self.sin_cached[:t]
        mask = self.causal[:t, :t]
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def build_qwen_decoder():
    model = QwenDecoder()
    inputs = [(torch.randint(0, 256, (1, SEQ)),) for _ in range(3)]
    return model, inputs


# ---------------------------------------------------------------------------
# bert_encoder: BERT-style encoder
# ---------------------------------------------------------------------------


class BertLayer(nn.Module):
    def __init__(self, d, heads, inter):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.query = nn.Linear(d, d)
        self.key = nn.Linear(d, d)
        self.value = nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, inter)
        self.output = nn.Linear(inter, d)
        self.out_norm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def split_heads(self, x):
        b, t, d = x.shape
        return x.view(b, t, self.heads, d // self.heads).permute(0, 2, 1, 3)

    def forward(self, x, ext_mask):
        b, t, d = x.shape
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + ext_mask
        probs = self.dropout(F.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        a = self.attn_norm(self.dropout(self.attn_out(ctx)) + x)
        h = self.output(F.gelu(self.intermediate(a)))
        return self.out_norm(self.dropout(h) + a)


class BertEncoder(nn.Module):
    def __init__(self, vocab=1000, d=64, heads=4, inter=256, layers=2, max_pos=64):
        super().__init__()
        self.word = nn.Embedding(vocab, d, padding_idx=0)
        self.position = nn.Embedding(max_pos, d)
        self.segment = nn.Embedding(2, d)
        self.emb_norm = nn.LayerNorm(d, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList([BertLayer(d, heads, inter) for _ in range(layers)])
        self.pooler = nn.Linear(d, d)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        # Sentence A for the first half, sentence B for the second half.
        seg = torch.zeros(1, max_pos, dtype=torch.long)
        seg[:, SEQ // 2:] = 1
        self.register_buffer("token_type_ids", seg)

    def forward(self, ids, mask):
        t = ids.shape[1]
        pos = self.position_ids[:, :t]
        seg = self.token_type_ids[:, :t]
        x = self.word(ids) + self.position(pos) + self.segment(seg)
        x = self.dropout(self.emb_norm(x))
        ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, ext)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


def build_bert_encoder():
    return BertEncoder(), [_text_inputs(1, SEQ, (pad,), vocab=1000) for pad in (0, 3, 6)]


# ---------------------------------------------------------------------------
# dit_block: DiT-style latent diffusion transformer
# ---------------------------------------------------------------------------


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class TimestepEmbedder(nn.Module):
    def __init__(self, d, freq_dim=64):
        super().__init__()
        self.freq_dim = freq_dim
        self.mlp = nn.Sequential(nn.Linear(freq_dim, d), nn.SiLU(), nn.Linear(d, d))

    def forward(self, t):
        half = self.freq_dim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(0, half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
        return self.mlp(emb)


class DiTBlock(nn.Module):
    def __init__(self, d, heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.attn = SelfAttention(d, heads)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.mlp = MLP(d, int(d * mlp_ratio), act=nn.GELU(approximate="tanh"))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = \
            self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
        x = x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))
        return x


class DiT(nn.Module):
    def __init__(self, in_ch=4, size=16, patch=2, d=96, heads=4, depth=2):
        super().__init__()
        self.patch, self.out_ch = patch, in_ch
        self.x_embedder = nn.Conv2d(in_ch, d, patch, patch)
        self.t_embedder = TimestepEmbedder(d)
        g = size // patch
        self.register_buffer("pos_embed", sine_pos_2d(g, g, d).unsqueeze(0))
        self.blocks = nn.ModuleList([DiTBlock(d, heads) for _ in range(depth)])
        self.norm_final = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(d, patch * patch * in_ch)
        self.adaLN_final = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        # DiT zero-initialises adaLN (adaLN-Zero) and the output layer, which
        # makes a random-init model return zeros.  Use small random values.
        with torch.no_grad():
            for blk in self.blocks:
                nn.init.normal_(blk.adaLN_modulation[1].weight, std=0.05)
            nn.init.normal_(self.adaLN_final[1].weight, std=0.05)

    def unpatchify(self, x, h, w):
        n, p, c = x.shape[0], self.patch, self.out_ch
        x = x.reshape(n, h, w, p, p, c)
        x = x.permute(0, 5, 1, 3, 2, 4)
        return x.reshape(n, c, h * p, w * p)

    def forward(self, x, t):
        x = self.x_embedder(x)
        h, w = x.shape[2], x.shape[3]
        x = x.flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(t)
        for blk in self.blocks:
            x = blk(x, c)
        shift, scale = self.adaLN_final(c).chunk(2, dim=1)
        x = self.linear(modulate(self.norm_final(x), shift, scale))
        return self.unpatchify(x, h, w)


def build_dit_block():
    model = DiT()
    inputs = [(torch.randn(1, 4, 16, 16), torch.tensor([t], dtype=torch.float32))
              for t in (500.0, 10.0, 999.0)]
    return model, inputs


# ---------------------------------------------------------------------------
# segformer: SegFormer (MiT encoder + all-MLP decoder)
# ---------------------------------------------------------------------------


class OverlapPatchEmbed(nn.Module):
    def __init__(self, cin, d, k, s):
        super().__init__()
        self.proj = nn.Conv2d(cin, d, k, s, k // 2)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        x = self.proj(x)
        h, w = x.shape[2], x.shape[3]
        return self.norm(x.flatten(2).transpose(1, 2)), h, w


class EfficientSelfAttention(nn.Module):
    def __init__(self, d, heads, sr):
        super().__init__()
        self.heads, self.sr_ratio = heads, sr
        self.scale = (d // heads) ** -0.5
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.proj = nn.Linear(d, d)
        if sr > 1:
            self.sr = nn.Conv2d(d, d, sr, sr)
            self.norm = nn.LayerNorm(d)

    def forward(self, x, h, w):
        b, n, c = x.shape
        hd = c // self.heads
        q = self.q(x).reshape(b, n, self.heads, hd).permute(0, 2, 1, 3)
        if self.sr_ratio > 1:
            x_ = x.permute(0, 2, 1).reshape(b, c, h, w)
            x_ = self.sr(x_).reshape(b, c, -1).permute(0, 2, 1)
            x_ = self.norm(x_)
        else:
            x_ = x
        kv = self.kv(x_).reshape(b, -1, 2, self.heads, hd).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        o = attention(q, k, v, self.scale)
        return self.proj(o.transpose(1, 2).reshape(b, n, c))


class MixFFN(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.dwconv = nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x, h, w):
        x = self.fc1(x)
        b, n, c = x.shape
        x = self.dwconv(x.transpose(1, 2).view(b, c, h, w)).flatten(2).transpose(1, 2)
        return self.fc2(F.gelu(x))


class SegFormerBlock(nn.Module):
    def __init__(self, d, heads, sr):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = EfficientSelfAttention(d, heads, sr)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = MixFFN(d, 4 * d)

    def forward(self, x, h, w):
        x = x + self.attn(self.norm1(x), h, w)
        return x + self.ffn(self.norm2(x), h, w)


class SegFormer(nn.Module):
    def __init__(self, dims=(16, 32, 64, 128), heads=(1, 2, 4, 8), srs=(8, 4, 2, 1),
                 depths=(1, 1, 2, 1), embed=64, classes=19):
        super().__init__()
        self.embeds = nn.ModuleList()
        self.stages = nn.ModuleList()
        self.norms = nn.ModuleList()
        cin = 3
        for i, d in enumerate(dims):
            k, s = (7, 4) if i == 0 else (3, 2)
            self.embeds.append(OverlapPatchEmbed(cin, d, k, s))
            self.stages.append(nn.ModuleList(
                [SegFormerBlock(d, heads[i], srs[i]) for _ in range(depths[i])]))
            self.norms.append(nn.LayerNorm(d))
            cin = d
        self.linear_c = nn.ModuleList([nn.Linear(d, embed) for d in dims])
        # mmseg's SegFormerHead fuses with a ConvModule whose norm is
        # configurable; GroupNorm here (the zoo's BN users are elsewhere).
        self.linear_fuse = nn.Sequential(
            nn.Conv2d(4 * embed, embed, 1, bias=False), nn.GroupNorm(8, embed), nn.ReLU(inplace=True))
        self.dropout = nn.Dropout2d(0.1)
        self.linear_pred = nn.Conv2d(embed, classes, 1)

    def forward(self, img):
        b = img.shape[0]
        x = img
        feats = []
        for embed, blocks, norm in zip(self.embeds, self.stages, self.norms):
            x, h, w = embed(x)
            for blk in blocks:
                x = blk(x, h, w)
            x = norm(x).reshape(b, h, w, -1).permute(0, 3, 1, 2).contiguous()
            feats.append(x)
        size = feats[0].shape[2:]
        outs = []
        for i, (f, lin) in enumerate(zip(feats, self.linear_c)):
            fh, fw = f.shape[2], f.shape[3]
            y = lin(f.flatten(2).transpose(1, 2)).permute(0, 2, 1).reshape(b, -1, fh, fw)
            if i > 0:  # stages 2..4 are upsampled to the stage-1 resolution
                y = F.interpolate(y, size=size, mode="bilinear", align_corners=False)
            outs.append(y)
        y = self.linear_fuse(torch.cat(outs[::-1], dim=1))
        y = self.linear_pred(self.dropout(y))
        return F.interpolate(y, size=img.shape[2:], mode="bilinear", align_corners=False)


def build_segformer():
    return SegFormer(), [(torch.randn(*IMG),) for _ in range(3)]


# ---------------------------------------------------------------------------
# swinir: SwinIR-style image restoration (x2 super-resolution)
# ---------------------------------------------------------------------------


def window_partition(x, ws):
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, c)


def window_reverse(windows, ws, h, w):
    b = windows.shape[0] // ((h // ws) * (w // ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, w, -1)


class WindowAttention(nn.Module):
    def __init__(self, d, ws, heads):
        super().__init__()
        self.ws, self.heads = ws, heads
        self.scale = (d // heads) ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij"))
        coords = coords.flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("relative_position_index", rel.sum(-1))
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask=None):
        bw, n, c = x.shape
        qkv = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * self.scale
        att = q @ k.transpose(-2, -1)
        bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
        bias = bias.view(n, n, -1).permute(2, 0, 1).contiguous()
        att = att + bias.unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            att = att.view(bw // nw, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            att = att.view(-1, self.heads, n, n)
        att = att.softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(bw, n, c))


class SwinIRBlock(nn.Module):
    def __init__(self, d, res, heads, ws, shift):
        super().__init__()
        self.ws, self.shift = ws, shift
        self.norm1 = nn.LayerNorm(d)
        self.attn = WindowAttention(d, ws, heads)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = MLP(d, 2 * d)
        if shift > 0:
            self.register_buffer("attn_mask", self._mask(res, ws, shift))
        else:
            self.attn_mask = None

    @staticmethod
    def _mask(res, ws, shift):
        h, w = res
        img = torch.zeros(1, h, w, 1)
        cnt = 0
        for hs in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
            for wsl in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                img[:, hs, wsl, :] = cnt
                cnt += 1
        mw = window_partition(img, ws).view(-1, ws * ws)
        m = mw.unsqueeze(1) - mw.unsqueeze(2)
        return m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)

    def forward(self, x, h, w):
        b, l, c = x.shape
        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        if self.shift > 0:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = window_partition(x, self.ws).view(-1, self.ws * self.ws, c)
        win = self.attn(win, self.attn_mask).view(-1, self.ws, self.ws, c)
        x = window_reverse(win, self.ws, h, w)
        if self.shift > 0:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + x.view(b, h * w, c)
        return x + self.mlp(self.norm2(x))


class RSTB(nn.Module):
    def __init__(self, d, res, heads, ws, depth):
        super().__init__()
        self.blocks = nn.ModuleList(
            [SwinIRBlock(d, res, heads, ws, 0 if i % 2 == 0 else ws // 2) for i in range(depth)])
        self.conv = nn.Conv2d(d, d, 3, 1, 1)

    def forward(self, x, h, w):
        y = x
        for blk in self.blocks:
            y = blk(y, h, w)
        b, l, c = y.shape
        y = self.conv(y.transpose(1, 2).view(b, c, h, w))
        return y.flatten(2).transpose(1, 2) + x


class SwinIR(nn.Module):
    def __init__(self, res=(32, 32), d=32, heads=4, ws=8, depths=(2, 2), scale=2):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1))
        self.img_range = 1.0
        self.conv_first = nn.Conv2d(3, d, 3, 1, 1)
        self.patch_norm = nn.LayerNorm(d)
        self.layers = nn.ModuleList([RSTB(d, res, heads, ws, n) for n in depths])
        self.norm = nn.LayerNorm(d)
        self.conv_after_body = nn.Conv2d(d, d, 3, 1, 1)
        self.conv_before_upsample = nn.Sequential(nn.Conv2d(d, 32, 3, 1, 1), nn.LeakyReLU(inplace=True))
        self.upsample = nn.Sequential(nn.Conv2d(32, 4 * 32, 3, 1, 1), nn.PixelShuffle(scale))
        self.conv_last = nn.Conv2d(32, 3, 3, 1, 1)

    def forward(self, x):
        x = (x - self.mean) * self.img_range
        x = self.conv_first(x)
        b, c, h, w = x.shape
        t = self.patch_norm(x.flatten(2).transpose(1, 2))
        for layer in self.layers:
            t = layer(t, h, w)
        t = self.norm(t)
        body = self.conv_after_body(t.transpose(1, 2).view(b, c, h, w))
        x = body.add_(x)  # in-place long residual
        x = self.conv_last(self.upsample(self.conv_before_upsample(x)))
        return x / self.img_range + self.mean


def build_swinir():
    return SwinIR(), [(torch.rand(1, 3, 32, 32),) for _ in range(3)]


# ---------------------------------------------------------------------------
# efficientad: EfficientAD-style anomaly detector (PDN teacher/student + AE)
# ---------------------------------------------------------------------------


class PDN(nn.Module):
    def __init__(self, out_ch):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 4, padding=3)
        self.conv2 = nn.Conv2d(32, 64, 4, padding=3)
        self.conv3 = nn.Conv2d(64, 64, 3, padding=1)
        self.conv4 = nn.Conv2d(64, out_ch, 4)
        self.pool1 = nn.AvgPool2d(2, 2, padding=1)
        self.pool2 = nn.AvgPool2d(2, 2, padding=1)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1(x), inplace=True))
        x = self.pool2(F.relu(self.conv2(x), inplace=True))
        x = F.relu(self.conv3(x), inplace=True)
        return self.conv4(x)


class AutoEncoder(nn.Module):
    def __init__(self, out_ch, out_size=16):
        super().__init__()
        self.out_size = out_size
        enc = []
        cin = 3
        for cout in (16, 16, 32, 32):
            enc += [nn.Conv2d(cin, cout, 4, 2, 1), nn.ReLU(inplace=True)]
            cin = cout
        enc += [nn.Conv2d(32, 32, 4)]
        self.encoder = nn.Sequential(*enc)
        self.dec = nn.ModuleList([nn.Conv2d(32, 32, 4, 1, 2) for _ in range(3)])
        self.drop = nn.Dropout(0.2)
        self.final = nn.Conv2d(32, out_ch, 3, 1, 1)

    def forward(self, x):
        x = self.encoder(x)
        for conv, size in zip(self.dec, (3, 8, 15)):
            x = F.interpolate(x, size=size, mode="bilinear")
            x = self.drop(F.relu(conv(x)))
        x = F.interpolate(x, size=self.out_size, mode="bilinear")
        return self.final(x)


class EfficientAD(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.ch = ch
        self.teacher = PDN(ch)
        self.student = PDN(2 * ch)
        self.autoencoder = AutoEncoder(ch)
        self.register_buffer("img_mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("img_std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.register_buffer("teacher_mean", torch.zeros(1, ch, 1, 1))
        self.register_buffer("teacher_std", torch.ones(1, ch, 1, 1))
        self.register_buffer("q_st", torch.tensor([0.0, 1.0]))
        self.register_buffer("q_ae", torch.tensor([0.0, 1.0]))

    @torch.no_grad()
    def calibrate(self, imgs):
        """As EfficientAD does on its training/validation images: teacher
        channel normalisation, then the 0.9 / 0.995 quantiles of both maps."""
        x = (imgs - self.img_mean) / self.img_std
        t = self.teacher(x)
        self.teacher_mean.copy_(t.mean(dim=(0, 2, 3), keepdim=True))
        self.teacher_std.copy_(t.std(dim=(0, 2, 3), keepdim=True))
        map_st, map_ae = self.maps(imgs)
        q = torch.tensor([0.9, 0.995])
        self.q_st.copy_(torch.quantile(map_st.flatten(), q))
        self.q_ae.copy_(torch.quantile(map_ae.flatten(), q))

    def maps(self, img):
        x = (img - self.img_mean) / self.img_std
        t = (self.teacher(x) - self.teacher_mean) / self.teacher_std
        s = self.student(x)
        ae = self.autoencoder(x)
        s_st, s_ae = torch.split(s, self.ch, dim=1)
        map_st = torch.mean((t - s_st) ** 2, dim=1, keepdim=True)
        map_ae = torch.mean((ae - s_ae) ** 2, dim=1, keepdim=True)
        return map_st, map_ae

    def forward(self, img):
        map_st, map_ae = self.maps(img)
        map_st = 0.1 * (map_st - self.q_st[0]) / (self.q_st[1] - self.q_st[0])
        map_ae = 0.1 * (map_ae - self.q_ae[0]) / (self.q_ae[1] - self.q_ae[0])
        combined = (torch.stack((map_st, map_ae), dim=0) * 0.5).sum(dim=0)
        score = torch.amax(combined.flatten(1), dim=1)
        combined = F.pad(combined, (4, 4, 4, 4))
        combined = F.interpolate(combined, size=img.shape[2:], mode="bilinear")
        return combined, score


def build_efficientad():
    model = EfficientAD()
    model.calibrate(torch.rand(8, *IMG[1:]))
    return model, [(torch.rand(*IMG),) for _ in range(3)]


# ---------------------------------------------------------------------------
# YOLOv8-style detector (CSP backbone, SPPF, FPN/PAN, decoupled head), the base of yolov10
# ---------------------------------------------------------------------------


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = ConvBNAct(c, c, 3)
        self.cv2 = ConvBNAct(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return y.add_(x) if self.add else y


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = ConvBNAct(c1, 2 * self.c, 1)
        self.cv2 = ConvBNAct((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList([Bottleneck(self.c, shortcut) for _ in range(n)])

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = ConvBNAct(c1, c_, 1)
        self.cv2 = ConvBNAct(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YoloDetector(nn.Module):
    def __init__(self, nc=8, reg_max=8, img=64):
        super().__init__()
        self.nc, self.reg_max = nc, reg_max
        self.no = nc + 4 * reg_max
        self.b0 = nn.Sequential(ConvBNAct(3, 16, 3, 2, inplace=True), ConvBNAct(16, 32, 3, 2, inplace=True),
                                C2f(32, 32, 1, True))
        self.b1 = nn.Sequential(ConvBNAct(32, 64, 3, 2), C2f(64, 64, 2, True))           # P3 /8
        self.b2 = nn.Sequential(ConvBNAct(64, 96, 3, 2), C2f(96, 96, 2, True))           # P4 /16
        self.b3 = nn.Sequential(ConvBNAct(96, 128, 3, 2), C2f(128, 128, 1, True), SPPF(128, 128))  # P5 /32
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.n1 = C2f(128 + 96, 96, 1)
        self.n2 = C2f(96 + 64, 64, 1)
        self.d1 = ConvBNAct(64, 64, 3, 2)
        self.n3 = C2f(64 + 96, 96, 1)
        self.d2 = ConvBNAct(96, 96, 3, 2)
        self.n4 = C2f(96 + 128, 128, 1)
        chs = (64, 96, 128)
        c2, c3 = 32, 32
        self.box = nn.ModuleList(nn.Sequential(ConvBNAct(c, c2, 3), ConvBNAct(c2, c2, 3),
                                               nn.Conv2d(c2, 4 * reg_max, 1)) for c in chs)
        self.cls = nn.ModuleList(nn.Sequential(ConvBNAct(c, c3, 3), ConvBNAct(c3, c3, 3),
                                               nn.Conv2d(c3, nc, 1)) for c in chs)
        self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        with torch.no_grad():
            self.dfl.weight.copy_(torch.arange(reg_max, dtype=torch.float32).view(1, reg_max, 1, 1))

    def forward(self, x):
        p3 = self.b1(self.b0(x))
        p4 = self.b2(p3)
        p5 = self.b3(p4)
        n4 = self.n1(torch.cat([self.up(p5), p4], 1))
        o3 = self.n2(torch.cat([self.up(n4), p3], 1))
        o4 = self.n3(torch.cat([self.d1(o3), n4], 1))
        o5 = self.n4(torch.cat([self.d2(o4), p5], 1))
        b = x.shape[0]
        feats = []
        anchors, strides = [], []
        for i, f in enumerate((o3, o4, o5)):
            y = torch.cat((self.box[i](f), self.cls[i](f)), 1)
            feats.append(y.view(b, self.no, -1))
            # anchor points of this level, from its shape (ultralytics' make_anchors)
            h, w = f.shape[2], f.shape[3]
            sy, sx = torch.meshgrid(torch.arange(h, dtype=x.dtype) + 0.5, torch.arange(w, dtype=x.dtype) + 0.5,
                                    indexing="ij")
            anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), float(8 * 2 ** i), dtype=x.dtype))
        anchors = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
        strides = torch.cat(strides).transpose(0, 1)
        y = torch.cat(feats, 2)
        box, cls = y.split((4 * self.reg_max, self.nc), 1)
        a = box.shape[2]
        dist = self.dfl(box.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)
        lt, rb = dist.chunk(2, 1)
        x1y1 = anchors - lt
        x2y2 = anchors + rb
        dbox = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * strides
        return torch.cat((dbox, cls.sigmoid()), 1)


# ---------------------------------------------------------------------------
# yolov10: YOLOv10-style detector (SCDown, C2fCIB, PSA, NMS-free one-to-one head)
# ---------------------------------------------------------------------------


class SCDown(nn.Module):
    """Spatial-channel decoupled downsampling: pointwise conv, then a depthwise stride-2 conv."""

    def __init__(self, c1, c2):
        super().__init__()
        self.cv1 = ConvBNAct(c1, c2, 1)
        self.cv2 = ConvBNAct(c2, c2, 3, 2, groups=c2, act=False)

    def forward(self, x):
        return self.cv2(self.cv1(x))


class CIB(nn.Module):
    """Compact inverted block: depthwise convolutions around a pointwise expansion."""

    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = nn.Sequential(ConvBNAct(c, c, 3, groups=c), ConvBNAct(c, 2 * c, 1),
                                 ConvBNAct(2 * c, 2 * c, 3, groups=2 * c), ConvBNAct(2 * c, c, 1),
                                 ConvBNAct(c, c, 3, groups=c))
        self.add = shortcut

    def forward(self, x):
        return x + self.cv1(x) if self.add else self.cv1(x)


class C2fCIB(C2f):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__(c1, c2, n, shortcut)
        self.m = nn.ModuleList([CIB(self.c, shortcut) for _ in range(n)])


class PSAAttention(nn.Module):
    def __init__(self, dim, heads, attn_ratio=0.5):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        self.qkv = ConvBNAct(dim, dim + 2 * self.key_dim * heads, 1, act=False)
        self.proj = ConvBNAct(dim, dim, 1, act=False)
        self.pe = ConvBNAct(dim, dim, 3, groups=dim, act=False)

    def forward(self, x):
        b, c, h, w = x.shape
        n = h * w
        q, k, v = self.qkv(x).view(b, self.heads, 2 * self.key_dim + self.head_dim, n).split(
            [self.key_dim, self.key_dim, self.head_dim], dim=2)
        att = ((q.transpose(-2, -1) @ k) * self.scale).softmax(dim=-1)
        y = (v @ att.transpose(-2, -1)).view(b, c, h, w) + self.pe(v.reshape(b, c, h, w))
        return self.proj(y)


class PSA(nn.Module):
    """Partial self-attention: attention and FFN on half of the channels."""

    def __init__(self, c):
        super().__init__()
        self.c = c // 2
        self.cv1 = ConvBNAct(c, 2 * self.c, 1)
        self.cv2 = ConvBNAct(2 * self.c, c, 1)
        self.attn = PSAAttention(self.c, heads=max(self.c // 32, 1))
        self.ffn = nn.Sequential(ConvBNAct(self.c, 2 * self.c, 1), ConvBNAct(2 * self.c, self.c, 1, act=False))

    def forward(self, x):
        a, b = self.cv1(x).split((self.c, self.c), dim=1)
        b = b + self.attn(b)
        b = b + self.ffn(b)
        return self.cv2(torch.cat((a, b), 1))


class YoloV10(YoloDetector):
    def __init__(self, nc=8, reg_max=8, img=64, max_det=20):
        super().__init__(nc, reg_max, img)
        self.max_det = max_det
        self.b2 = nn.Sequential(SCDown(64, 96), C2f(96, 96, 2, True))                       # P4 /16
        self.b3 = nn.Sequential(SCDown(96, 128), C2fCIB(128, 128, 1, True), SPPF(128, 128), PSA(128))
        self.d2 = SCDown(96, 96)
        self.n4 = C2fCIB(96 + 128, 128, 1, True)
        c3 = 32
        # v10's classification branch: depthwise + pointwise pairs.
        self.cls = nn.ModuleList(nn.Sequential(ConvBNAct(c, c, 3, groups=c), ConvBNAct(c, c3, 1),
                                               ConvBNAct(c3, c3, 3, groups=c3), ConvBNAct(c3, c3, 1),
                                               nn.Conv2d(c3, nc, 1)) for c in (64, 96, 128))

    def forward(self, x):
        y = super().forward(x)                      # b x (4 + nc) x anchors: decoded boxes, class scores
        preds = y.transpose(1, 2)
        boxes, scores = preds.split([4, self.nc], dim=-1)
        # NMS-free post-processing of the one-to-one head (YOLOv10's v10postprocess).
        best, index = scores.amax(dim=-1).topk(self.max_det, dim=-1)
        index = index.unsqueeze(-1)
        boxes = boxes.gather(1, index.repeat(1, 1, 4))
        scores = scores.gather(1, index.repeat(1, 1, self.nc))
        top, flat = scores.flatten(1).topk(self.max_det, dim=-1)
        labels = flat % self.nc
        boxes = boxes.gather(1, (flat // self.nc).unsqueeze(-1).repeat(1, 1, 4))
        return torch.cat([boxes, top.unsqueeze(-1), labels.unsqueeze(-1).to(boxes.dtype)], dim=-1)


def build_yolov10():
    model = YoloV10()
    calibrate_bn(model, torch.rand(8, *IMG[1:]))
    return model, [(torch.rand(*IMG),) for _ in range(3)]


# ---------------------------------------------------------------------------
# rtmpose: RTMPose-style top-down pose (CSPNeXt-ish backbone + RTMCC/SimCC head)
# ---------------------------------------------------------------------------


class CSPNeXtBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = ConvBNAct(c, c, 3)
        self.dw = ConvBNAct(c, c, 5, groups=c)
        self.pw = ConvBNAct(c, c, 1)

    def forward(self, x):
        return x + self.pw(self.dw(self.conv1(x)))


class CSPLayer(nn.Module):
    def __init__(self, c, n=1):
        super().__init__()
        self.main = ConvBNAct(c, c // 2, 1)
        self.short = ConvBNAct(c, c // 2, 1)
        self.blocks = nn.Sequential(*[CSPNeXtBlock(c // 2) for _ in range(n)])
        self.attn_fc = nn.Conv2d(c, c, 1)
        self.final = ConvBNAct(c, c, 1)

    def forward(self, x):
        y = torch.cat((self.blocks(self.main(x)), self.short(x)), dim=1)
        w = F.hardsigmoid(self.attn_fc(F.adaptive_avg_pool2d(y, 1)), inplace=True)
        return self.final(y * w)


class ScaleNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.scale = dim ** -0.5
        self.eps = eps
        self.g = nn.Parameter(torch.ones(1))

    def forward(self, x):
        norm = torch.norm(x, dim=-1, keepdim=True) * self.scale
        return x / norm.clamp(min=self.eps) * self.g


class RTMCCBlock(nn.Module):
    """Gated attention unit (GAU) as used by RTMPose's RTMCC head."""

    def __init__(self, dim, s=32, expansion=2):
        super().__init__()
        self.e = int(dim * expansion)
        self.s = s
        self.ln = ScaleNorm(dim)
        self.uv = nn.Linear(dim, 2 * self.e + s, bias=False)
        self.gamma = nn.Parameter(torch.rand(2, s))
        self.beta = nn.Parameter(torch.rand(2, s) * 0.1)
        self.o = nn.Linear(self.e, dim, bias=False)
        self.res_scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = self.ln(x)
        uv = F.silu(self.uv(y))
        u, v, base = torch.split(uv, [self.e, self.e, self.s], dim=2)
        base = base.unsqueeze(2) * self.gamma[None, None, :] + self.beta
        q, k = torch.unbind(base, dim=2)
        qk = torch.bmm(q, k.permute(0, 2, 1))
        kernel = torch.square(F.relu(qk / math.sqrt(self.s)))
        out = self.o(u * torch.bmm(kernel, v))
        return x * self.res_scale + out


class RTMPose(nn.Module):
    def __init__(self, k=17, in_hw=(64, 48), hidden=64, split_ratio=2.0):
        super().__init__()
        self.backbone = nn.Sequential(
            ConvBNAct(3, 16, 3, 2), ConvBNAct(16, 16, 3), ConvBNAct(16, 32, 3),
            ConvBNAct(32, 64, 3, 2), CSPLayer(64),
            ConvBNAct(64, 128, 3, 2), CSPLayer(128))
        fh, fw = in_hw[0] // 8, in_hw[1] // 8
        self.final_layer = nn.Conv2d(128, k, 7, 1, 3)
        self.mlp = nn.Sequential(ScaleNorm(fh * fw), nn.Linear(fh * fw, hidden, bias=False))
        self.gau = RTMCCBlock(hidden)
        self.cls_x = nn.Linear(hidden, int(in_hw[1] * split_ratio), bias=False)
        self.cls_y = nn.Linear(hidden, int(in_hw[0] * split_ratio), bias=False)

    def forward(self, x):
        f = self.final_layer(self.backbone(x))
        f = self.mlp(torch.flatten(f, 2))
        f = self.gau(f)
        return self.cls_x(f), self.cls_y(f)


def build_rtmpose():
    model = RTMPose()
    calibrate_bn(model, torch.rand(8, 3, 64, 48))
    return model, [(torch.rand(1, 3, 64, 48),) for _ in range(3)]


# ---------------------------------------------------------------------------
# parseq: PARSeq-style scene text recogniser (ViT encoder + query decoder)
# ---------------------------------------------------------------------------


class PreNormBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.attn = SelfAttention(d, heads)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = MLP(d, 4 * d)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PARSeqDecoderLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.norm_q = nn.LayerNorm(d)
        self.norm_c = nn.LayerNorm(d)
        self.self_attn = CrossAttention(d, heads)
        self.norm1 = nn.LayerNorm(d)
        self.cross_attn = CrossAttention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.linear1 = nn.Linear(d, 4 * d)
        self.linear2 = nn.Linear(4 * d, d)

    def forward(self, query, content, memory):
        q = query + self.self_attn(self.norm_q(query), self.norm_c(content))
        q = q + self.cross_attn(self.norm1(q), memory)
        return q + self.linear2(F.gelu(self.linear1(self.norm2(q))))


class PARSeq(nn.Module):
    def __init__(self, img=(32, 128), patch=(4, 8), d=64, heads=4, enc_depth=2,
                 max_len=25, classes=37):
        super().__init__()
        self.d = d
        self.num_tokens = classes + 2  # + [B] and [P]
        self.bos_id = classes
        n = (img[0] // patch[0]) * (img[1] // patch[1])
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        self.pos_embed = nn.Parameter(torch.randn(1, n, d) * 0.02)
        self.encoder = nn.Sequential(*[PreNormBlock(d, heads) for _ in range(enc_depth)])
        self.enc_norm = nn.LayerNorm(d, eps=1e-6)
        self.text_embed = nn.Embedding(self.num_tokens, d)
        self.pos_queries = nn.Parameter(torch.randn(1, max_len + 1, d) * 0.02)
        self.decoder = PARSeqDecoderLayer(d, heads)
        self.dec_norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        b = img.shape[0]
        x = self.patch_embed(img).flatten(2).transpose(1, 2) + self.pos_embed
        memory = self.enc_norm(self.encoder(x))
        bos = torch.full((b, 1), self.bos_id, dtype=torch.long)
        content = self.text_embed(bos) * math.sqrt(self.d)
        query = self.pos_queries.expand(b, -1, -1)
        out = self.decoder(query, content, memory)
        return self.head(self.dec_norm(out))


def build_parseq():
    return PARSeq(), [(torch.rand(1, 3, 32, 128),) for _ in range(3)]


# ---------------------------------------------------------------------------
# torchvision seeds (random weights, compact configurations where needed)
# ---------------------------------------------------------------------------


def _img_inputs():
    return [(torch.randn(*IMG),) for _ in range(3)]


def build_swin_v2_t():
    from torchvision.models.swin_transformer import (
        SwinTransformer, SwinTransformerBlockV2, PatchMergingV2)
    # swin_v2_t is embed 96, depths (2,2,6,2), window 8: ~110 MB.  Half width,
    # window 4 so that a 64x64 input still has several (shifted) windows.
    model = SwinTransformer(patch_size=[4, 4], embed_dim=48, depths=[2, 2, 2, 2],
                            num_heads=[3, 6, 12, 24], window_size=[4, 4],
                            stochastic_depth_prob=0.1, block=SwinTransformerBlockV2,
                            downsample_layer=PatchMergingV2)
    return model, _img_inputs()


def build_efficientnet_v2_s():
    from functools import partial
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig
    # efficientnet_v2_s stage layout with fewer layers per stage (full: ~86 MB).
    setting = [
        FusedMBConvConfig(1, 3, 1, 24, 24, 1),
        FusedMBConvConfig(4, 3, 2, 24, 48, 2),
        FusedMBConvConfig(4, 3, 2, 48, 64, 2),
        MBConvConfig(4, 3, 2, 64, 128, 2),
        MBConvConfig(6, 3, 1, 128, 160, 3),
        MBConvConfig(6, 3, 2, 160, 256, 3),
    ]
    model = EfficientNet(setting, dropout=0.2, stochastic_depth_prob=0.2,
                         norm_layer=partial(nn.BatchNorm2d, eps=1e-3), last_channel=1280)
    calibrate_bn(model, torch.randn(8, *IMG[1:]))
    return model, _img_inputs()


def build_mobilenet_v3_small():
    import torchvision
    model = torchvision.models.mobilenet_v3_small(weights=None)
    calibrate_bn(model, torch.randn(8, *IMG[1:]))
    return model, _img_inputs()


def build_resnet18():
    from torchvision.models.resnet import ResNet, BasicBlock

    class HalfWidthResNet(ResNet):
        """ResNet-18 topology at half width (full width is ~45 MB)."""

        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            if planes == 64 and self.inplanes == 64:  # first stage: shrink the stem too
                self.inplanes = 32
                self.conv1 = nn.Conv2d(3, 32, 7, 2, 3, bias=False)
                self.bn1 = self._norm_layer(32)
            return super()._make_layer(block, planes // 2, blocks, stride, dilate)

    model = HalfWidthResNet(BasicBlock, [2, 2, 2, 2])
    model.fc = nn.Linear(256, 1000)
    calibrate_bn(model, torch.randn(8, *IMG[1:]))
    return model, _img_inputs()


def build_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    # attention_dropout > 0 (a no-op in eval mode) keeps nn.MultiheadAttention
    # off its fused inference fast path even under no_grad, which
    # torch.jit.trace's check_trace uses for its re-trace; otherwise the check
    # re-trace records aten::_native_multi_head_attention and fails.
    model = VisionTransformer(image_size=64, patch_size=8, num_layers=4, num_heads=4,
                              hidden_dim=128, mlp_dim=256, attention_dropout=0.1)
    # torchvision zero-initialises the classification head.
    with torch.no_grad():
        model.heads.head.weight.copy_(torch.randn_like(model.heads.head.weight) * 0.02)
    return model, _img_inputs()


# ---------------------------------------------------------------------------
# convnext_v2_tiny: ConvNeXt V2 (GRN, no layer scale)
# ---------------------------------------------------------------------------


class LayerNorm2d(nn.Module):
    """ConvNeXt's channels-first LayerNorm: normalises over C of an NCHW tensor."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.eps = eps

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class GRN(nn.Module):
    """Global Response Normalisation (ConvNeXt V2), channels-last input."""

    def __init__(self, c):
        super().__init__()
        # V2 initialises gamma and beta to zero (GRN starts as identity); small random
        # values make the layer do something in a random-init seed.
        self.gamma = nn.Parameter(torch.randn(1, 1, 1, c) * 0.1)
        self.beta = nn.Parameter(torch.randn(1, 1, 1, c) * 0.1)

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dwconv = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pwconv1 = nn.Linear(c, 4 * c)
        self.act = nn.GELU()
        self.grn = GRN(4 * c)
        self.pwconv2 = nn.Linear(4 * c, c)

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(y)))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtV2(nn.Module):
    def __init__(self, dims=(24, 48, 96, 192), depths=(2, 2, 4, 2), classes=1000):
        super().__init__()
        self.downsample = nn.ModuleList()
        self.downsample.append(nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0])))
        for i in range(3):
            self.downsample.append(nn.Sequential(LayerNorm2d(dims[i]), nn.Conv2d(dims[i], dims[i + 1], 2, 2)))
        self.stages = nn.ModuleList(nn.Sequential(*[ConvNeXtV2Block(d) for _ in range(n)])
                                    for d, n in zip(dims, depths))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        for down, stage in zip(self.downsample, self.stages):
            x = stage(down(x))
        return self.head(self.norm(x.mean([-2, -1])))


def build_convnext_v2_tiny():
    return ConvNeXtV2(), _img_inputs()


# ---------------------------------------------------------------------------
# modernbert: ModernBERT-style encoder
# ---------------------------------------------------------------------------


def rope_tables(hd, max_pos, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2).float() / hd))
    freqs = torch.outer(torch.arange(max_pos).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


class ModernBertLayer(nn.Module):
    """Pre-norm layer without biases: fused Wqkv, rotary embeddings, GeGLU MLP. A local
    layer attends within a sliding window; a global one to every unpadded token."""

    def __init__(self, d, heads, inter, local, first):
        super().__init__()
        self.heads, self.hd, self.local = heads, d // heads, local
        # ModernBERT's first layer has no attention norm (the embeddings are normalised).
        self.attn_norm = nn.Identity() if first else nn.LayerNorm(d, eps=1e-5)
        self.Wqkv = nn.Linear(d, 3 * d, bias=False)
        self.Wo = nn.Linear(d, d, bias=False)
        self.mlp_norm = nn.LayerNorm(d, eps=1e-5)
        self.Wi = nn.Linear(d, 2 * inter, bias=False)
        self.mlp_Wo = nn.Linear(inter, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        qkv = self.Wqkv(self.attn_norm(x)).view(b, t, 3, self.heads, self.hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = torch.matmul(q, k.transpose(-2, -1)) * self.hd ** -0.5
        att = att.masked_fill(mask, torch.finfo(att.dtype).min).softmax(-1)
        o = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.Wo(o)
        inp, gate = self.Wi(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.mlp_Wo(F.gelu(inp) * gate)


class ModernBert(nn.Module):
    def __init__(self, vocab=512, d=64, heads=4, inter=96, layers=3, window=8, max_pos=64,
                 global_every=3):
        super().__init__()
        self.window = window
        self.tok_embeddings = nn.Embedding(vocab, d, padding_idx=0)
        self.emb_norm = nn.LayerNorm(d, eps=1e-5)
        self.layers = nn.ModuleList(
            ModernBertLayer(d, heads, inter, local=(i % global_every) != 0, first=(i == 0))
            for i in range(layers))
        self.final_norm = nn.LayerNorm(d, eps=1e-5)
        self.head_dense = nn.Linear(d, d, bias=False)
        self.head_norm = nn.LayerNorm(d, eps=1e-5)
        self.decoder = nn.Linear(d, vocab)
        self.decoder.weight = self.tok_embeddings.weight  # tied
        hd = d // heads
        gcos, gsin = rope_tables(hd, max_pos, 160000.0)   # global layers' theta
        lcos, lsin = rope_tables(hd, max_pos, 10000.0)    # local layers' theta
        self.register_buffer("global_cos", gcos)
        self.register_buffer("global_sin", gsin)
        self.register_buffer("local_cos", lcos)
        self.register_buffer("local_sin", lsin)
        pos = torch.arange(max_pos)
        self.register_buffer("outside_window", (pos[:, None] - pos[None, :]).abs() > window // 2)

    def forward(self, ids, mask):
        t = ids.shape[1]
        x = self.emb_norm(self.tok_embeddings(ids))
        pad = (mask == 0)[:, None, None, :]                       # b x 1 x 1 x t
        local_mask = pad | self.outside_window[:t, :t]            # b x 1 x t x t
        for layer in self.layers:
            if layer.local:
                x = layer(x, self.local_cos[:t], self.local_sin[:t], local_mask)
            else:
                x = layer(x, self.global_cos[:t], self.global_sin[:t], pad)
        h = self.final_norm(x)
        logits = self.decoder(self.head_norm(F.gelu(self.head_dense(h))))
        return h, logits


def _text_inputs(b, t, pads, vocab=512):
    ids = torch.randint(1, vocab, (b, t))
    mask = torch.ones(b, t, dtype=torch.long)
    for i, pad in enumerate(pads):
        if pad:
            ids[i, t - pad:] = 0
            mask[i, t - pad:] = 0
    return ids, mask


def build_modernbert():
    model = ModernBert()
    return model, [_text_inputs(1, SEQ, (0,)), _text_inputs(1, SEQ, (3,)), _text_inputs(1, SEQ, (6,))]


# ---------------------------------------------------------------------------
# rt_detr: RT-DETRv2-style detector
# ---------------------------------------------------------------------------


def sine_pos_2d(h, w, d, temperature=10000.0):
    """2-d sin-cos position embedding of an h x w grid, (h*w) x d."""
    gy, gx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                            indexing="ij")
    omega = 1.0 / temperature ** (torch.arange(d // 4, dtype=torch.float32) / (d // 4))
    ox = gx.flatten()[:, None] * omega[None]
    oy = gy.flatten()[:, None] * omega[None]
    return torch.cat([ox.sin(), ox.cos(), oy.sin(), oy.cos()], dim=1)


class EncoderLayer(nn.Module):
    """Post-norm transformer encoder layer with the position embedding added to q and k."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.attn = CrossAttention(d, heads)
        self.norm1 = nn.LayerNorm(d)
        self.ffn = MLP(d, ffn)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x, pos):
        qk = x + pos
        x = self.norm1(x + self.attn(qk, qk, x))
        return self.norm2(x + self.ffn(x))


class MSDeformableAttention(nn.Module):
    """Multi-scale deformable attention (Deformable DETR / RT-DETRv2): each query samples
    n_points locations per head and level around its reference box with F.grid_sample."""

    def __init__(self, d, heads, levels, points):
        super().__init__()
        self.d, self.heads, self.levels, self.points = d, heads, levels, points
        self.sampling_offsets = nn.Linear(d, heads * levels * points * 2)
        self.attention_weights = nn.Linear(d, heads * levels * points)
        self.value_proj = nn.Linear(d, d)
        self.output_proj = nn.Linear(d, d)

    def forward(self, query, ref_boxes, value, shapes):
        # query b x q x d; ref_boxes b x q x 4 (cx, cy, w, h in [0, 1]); value b x sum(hw) x d
        b, nq, _ = query.shape
        h, lv, p, hd = self.heads, self.levels, self.points, self.d // self.heads
        v = self.value_proj(value)
        off = self.sampling_offsets(query).view(b, nq, h, lv, p, 2)
        w = self.attention_weights(query).view(b, nq, h, lv * p).softmax(-1).view(b, nq, h, lv, p)
        # RT-DETRv2: offsets scaled by the reference box size / points.
        loc = ref_boxes[:, :, None, None, None, :2] + \
            off / p * ref_boxes[:, :, None, None, None, 2:] * 0.5
        grids = 2 * loc - 1                                           # b x q x h x lv x p x 2
        out = 0
        start = 0
        for i, (hl, wl) in enumerate(shapes):
            vl = v[:, start:start + hl * wl].transpose(1, 2).reshape(b * h, hd, hl, wl)
            start += hl * wl
            gl = grids[:, :, :, i].transpose(1, 2).reshape(b * h, nq, p, 2)
            s = F.grid_sample(vl, gl, mode="bilinear", padding_mode="zeros", align_corners=False)
            # s: (b h) x hd x q x p, weighted over points
            wl_ = w[:, :, :, i].transpose(1, 2).reshape(b * h, 1, nq, p)
            out = out + (s * wl_).sum(-1)
        out = out.view(b, h * hd, nq).transpose(1, 2)
        return self.output_proj(out)


class DetrDecoderLayer(nn.Module):
    def __init__(self, d, heads, levels, points, ffn):
        super().__init__()
        self.self_attn = CrossAttention(d, heads)
        self.norm1 = nn.LayerNorm(d)
        self.cross_attn = MSDeformableAttention(d, heads, levels, points)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = MLP(d, ffn, act=nn.ReLU())
        self.norm3 = nn.LayerNorm(d)

    def forward(self, tgt, query_pos, ref_boxes, memory, shapes):
        q = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, q))
        tgt = self.norm2(tgt + self.cross_attn(tgt + query_pos, ref_boxes, memory, shapes))
        return self.norm3(tgt + self.ffn(tgt))


def inverse_sigmoid(x, eps=1e-5):
    x = x.clamp(min=0, max=1)
    return torch.log(x.clamp(min=eps) / (1 - x).clamp(min=eps))


class BoxMLP(nn.Module):
    def __init__(self, d, out, layers=3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d if i < layers - 1 else out) for i in range(layers))

    def forward(self, x):
        for i, l in enumerate(self.layers):
            x = l(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


class RTDETR(nn.Module):
    def __init__(self, classes=10, d=64, queries=20, heads=4, points=4, dec_layers=2):
        super().__init__()
        self.queries, self.classes = queries, classes
        # Backbone: ResNet-like strides 8 / 16 / 32.
        self.stem = nn.Sequential(ConvBNAct(3, 16, 3, 2), ConvBNAct(16, 32, 3, 2))
        self.s3 = nn.Sequential(ConvBNAct(32, 48, 3, 2), ConvBNAct(48, 48, 3))
        self.s4 = nn.Sequential(ConvBNAct(48, 64, 3, 2), ConvBNAct(64, 64, 3))
        self.s5 = nn.Sequential(ConvBNAct(64, 96, 3, 2), ConvBNAct(96, 96, 3))
        self.input_proj = nn.ModuleList(nn.Sequential(nn.Conv2d(c, d, 1, bias=False), nn.BatchNorm2d(d))
                                        for c in (48, 64, 96))
        # Hybrid encoder: AIFI (attention on the stride-32 level) + CCFM (top-down / bottom-up fusion).
        self.aifi = EncoderLayer(d, heads, 2 * d)
        self.lateral = nn.ModuleList(ConvBNAct(d, d, 1) for _ in range(2))
        self.fpn = nn.ModuleList(ConvBNAct(2 * d, d, 3) for _ in range(2))
        self.down = nn.ModuleList(ConvBNAct(d, d, 3, 2) for _ in range(2))
        self.pan = nn.ModuleList(ConvBNAct(2 * d, d, 3) for _ in range(2))
        # Query selection.
        self.enc_output = nn.Sequential(nn.Linear(d, d), nn.LayerNorm(d))
        self.enc_score_head = nn.Linear(d, classes)
        self.enc_bbox_head = BoxMLP(d, 4)
        self.query_pos_head = BoxMLP(4, d, 2)
        self.decoder = nn.ModuleList(DetrDecoderLayer(d, heads, 3, points, 2 * d) for _ in range(dec_layers))
        self.dec_score_head = nn.ModuleList(nn.Linear(d, classes) for _ in range(dec_layers))
        self.dec_bbox_head = nn.ModuleList(BoxMLP(d, 4) for _ in range(dec_layers))

    @staticmethod
    def anchors(shapes, grid_size=0.05, eps=0.01):
        out = []
        for i, (h, w) in enumerate(shapes):
            gy, gx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                                    indexing="ij")
            xy = torch.stack([(gx + 0.5) / w, (gy + 0.5) / h], -1).reshape(-1, 2)
            wh = torch.ones_like(xy) * grid_size * (2.0 ** i)
            out.append(torch.cat([xy, wh], -1))
        a = torch.cat(out, 0).unsqueeze(0)
        valid = ((a > eps) & (a < 1 - eps)).all(-1, keepdim=True)
        return torch.log(a / (1 - a)), valid

    def forward(self, x):
        c3 = self.s3(self.stem(x))
        c4 = self.s4(c3)
        c5 = self.s5(c4)
        f3, f4, f5 = [p(c) for p, c in zip(self.input_proj, (c3, c4, c5))]
        b, d, h5, w5 = f5.shape
        t5 = self.aifi(f5.flatten(2).transpose(1, 2), sine_pos_2d(h5, w5, d).unsqueeze(0))
        f5 = t5.transpose(1, 2).reshape(b, d, h5, w5)
        # CCFM top-down
        l5 = self.lateral[0](f5)
        p4 = self.fpn[0](torch.cat([F.interpolate(l5, scale_factor=2.0, mode="nearest"), f4], 1))
        l4 = self.lateral[1](p4)
        p3 = self.fpn[1](torch.cat([F.interpolate(l4, scale_factor=2.0, mode="nearest"), f3], 1))
        # bottom-up
        n4 = self.pan[0](torch.cat([self.down[0](p3), l4], 1))
        n5 = self.pan[1](torch.cat([self.down[1](n4), l5], 1))
        feats = (p3, n4, n5)
        shapes = [(f.shape[2], f.shape[3]) for f in feats]
        memory = torch.cat([f.flatten(2).transpose(1, 2) for f in feats], 1)   # b x sum(hw) x d
        anchors, valid = self.anchors(shapes)
        out_memory = self.enc_output(memory * valid.to(memory.dtype))
        enc_logits = self.enc_score_head(out_memory)
        enc_boxes_unact = self.enc_bbox_head(out_memory) + anchors
        # top-k query selection over the best class score of each position
        topk_ind = enc_logits.max(-1).values.topk(self.queries, dim=1).indices       # b x q
        ref_unact = enc_boxes_unact.gather(1, topk_ind.unsqueeze(-1).expand(-1, -1, 4))
        tgt = out_memory.gather(1, topk_ind.unsqueeze(-1).expand(-1, -1, d)).detach()
        ref = ref_unact.sigmoid().detach()
        logits, boxes = None, None
        for i, layer in enumerate(self.decoder):
            tgt = layer(tgt, self.query_pos_head(ref), ref, memory, shapes)
            boxes = (self.dec_bbox_head[i](tgt) + inverse_sigmoid(ref)).sigmoid()
            logits = self.dec_score_head[i](tgt)
            ref = boxes.detach()
        return logits, boxes


def build_rt_detr():
    model = RTDETR()
    calibrate_bn(model, torch.randn(8, *IMG[1:]))
    return model, _img_inputs()


# ---------------------------------------------------------------------------
# mask2former: Mask2Former-style segmentation (Swin backbone, pixel decoder, masked attention)
# ---------------------------------------------------------------------------


class Mask2FormerDecoderLayer(nn.Module):
    """Masked cross-attention (queries attend only where their predicted mask is
    foreground), then self-attention and FFN, post-norm."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.cross_attn = CrossAttention(d, heads)
        self.norm1 = nn.LayerNorm(d)
        self.self_attn = CrossAttention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = MLP(d, ffn, act=nn.ReLU())
        self.norm3 = nn.LayerNorm(d)

    def forward(self, q, query_pos, mem, mem_pos, attn_mask):
        q = self.norm1(q + self.cross_attn(q + query_pos, mem + mem_pos, mem, attn_mask))
        qp = q + query_pos
        q = self.norm2(q + self.self_attn(qp, qp))
        return self.norm3(q + self.ffn(q))


class Mask2Former(nn.Module):
    def __init__(self, classes=20, d=64, queries=10, heads=4, dec_layers=3):
        super().__init__()
        from torchvision.models.swin_transformer import SwinTransformer
        swin = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2, 2, 2], num_heads=[2, 4, 8, 16],
                               window_size=[4, 4], stochastic_depth_prob=0.0)
        # features[0] patch embed (/4), [1] stage 1, [2] merge (/8), [3] stage 2, [4] merge (/16), [5] stage 3
        self.backbone = swin.features[:6]
        self.heads, self.queries = heads, queries
        self.proj = nn.ModuleList(nn.Sequential(nn.Conv2d(c, d, 1), nn.GroupNorm(8, d)) for c in (32, 64, 128))
        self.level_embed = nn.Parameter(torch.randn(3, d) * 0.1)
        # Pixel decoder: a transformer encoder over the two coarse levels, then an FPN step.
        self.pixel_encoder = EncoderLayer(d, heads, 2 * d)
        self.lateral = nn.Sequential(nn.Conv2d(d, d, 1, bias=False), nn.GroupNorm(8, d))
        self.output_conv = nn.Sequential(nn.Conv2d(d, d, 3, padding=1, bias=False), nn.GroupNorm(8, d), nn.ReLU())
        self.mask_features = nn.Conv2d(d, d, 1)
        # Transformer decoder.
        self.query_feat = nn.Parameter(torch.randn(queries, d))
        self.query_embed = nn.Parameter(torch.randn(queries, d))
        self.decoder = nn.ModuleList(Mask2FormerDecoderLayer(d, heads, 2 * d) for _ in range(dec_layers))
        self.decoder_norm = nn.LayerNorm(d)
        self.class_embed = nn.Linear(d, classes + 1)
        self.mask_embed = MLP(d, d, act=nn.ReLU())

    def predict(self, q, mask_features, target_hw):
        q = self.decoder_norm(q)
        logits = self.class_embed(q)
        masks = torch.einsum("bqc,bchw->bqhw", self.mask_embed(q), mask_features)
        am = F.interpolate(masks, size=target_hw, mode="bilinear", align_corners=False)
        # True = not allowed to attend; a query whose mask is empty attends everywhere.
        am = (am.sigmoid().flatten(2).unsqueeze(1).repeat(1, self.heads, 1, 1) < 0.5)
        am = am & ~am.all(-1, keepdim=True)
        return logits, masks, am

    def forward(self, x):
        f = self.backbone[1](self.backbone[0](x))          # b x h/4 x w/4 x 32 (NHWC)
        f4 = f
        f = self.backbone[3](self.backbone[2](f))          # /8
        f8 = f
        f16 = self.backbone[5](self.backbone[4](f))        # /16
        feats = [p(t.permute(0, 3, 1, 2)) for p, t in zip(self.proj, (f4, f8, f16))]
        b, d = feats[0].shape[0], feats[0].shape[1]
        # pixel decoder encoder over the /8 and /16 levels
        coarse = [feats[1], feats[2]]
        shapes = [(t.shape[2], t.shape[3]) for t in coarse]
        pos = [sine_pos_2d(hh, ww, d) for hh, ww in shapes]
        tokens = torch.cat([t.flatten(2).transpose(1, 2) for t in coarse], 1)
        tok_pos = torch.cat([p + self.level_embed[i + 1] for i, p in enumerate(pos)], 0).unsqueeze(0)
        enc = self.pixel_encoder(tokens, tok_pos)
        n8 = shapes[0][0] * shapes[0][1]
        m8 = enc[:, :n8].transpose(1, 2).reshape(b, d, shapes[0][0], shapes[0][1])
        m16 = enc[:, n8:].transpose(1, 2).reshape(b, d, shapes[1][0], shapes[1][1])
        y = self.lateral(feats[0]) + F.interpolate(m8, size=feats[0].shape[-2:], mode="bilinear",
                                                   align_corners=False)
        mask_features = self.mask_features(self.output_conv(y))
        # decoder over memories from coarse to fine (round robin): /16, /8, /4
        mems = [(m16, shapes[1], 2), (m8, shapes[0], 1),
                (feats[0], (feats[0].shape[2], feats[0].shape[3]), 0)]
        q = self.query_feat.unsqueeze(0).repeat(b, 1, 1)
        qpos = self.query_embed.unsqueeze(0).repeat(b, 1, 1)
        logits, masks, am = self.predict(q, mask_features, mems[0][1])
        for i, layer in enumerate(self.decoder):
            mem, hw, lvl = mems[i % 3]
            mem_t = mem.flatten(2).transpose(1, 2)
            mem_pos = (sine_pos_2d(hw[0], hw[1], d) + self.level_embed[lvl]).unsqueeze(0)
            q = layer(q, qpos, mem_t, mem_pos, am.view(b, self.heads, self.queries, -1))
            logits, masks, am = self.predict(q, mask_features, mems[(i + 1) % 3][1])
        return logits, masks


def build_mask2former():
    model = Mask2Former()
    return model, _img_inputs()


# name -> (builder, task, stand-in for)
SEEDS = collections.OrderedDict([
    ("convnext_v2_tiny", (build_convnext_v2_tiny, "image-classification", "ConvNeXt V2-T (GRN blocks, reduced)")),
    ("swin_v2_t", (build_swin_v2_t, "image-classification", "Swin-V2-T (torchvision, reduced)")),
    ("efficientnet_v2_s", (build_efficientnet_v2_s, "image-classification", "EfficientNetV2-S (torchvision, reduced)")),
    ("mobilenet_v3_small", (build_mobilenet_v3_small, "image-classification", "MobileNetV3-Small (torchvision, full)")),
    ("resnet18", (build_resnet18, "image-classification", "ResNet-18 (torchvision, half width)")),
    ("vit", (build_vit, "image-classification", "ViT-B/16 (torchvision VisionTransformer, small)")),
    ("qwen_decoder", (build_qwen_decoder, "causal-lm", "Qwen2/Qwen2.5 decoder LLM")),
    ("modernbert", (build_modernbert, "text-encoder", "ModernBERT-base (RoPE, GeGLU, local/global attention)")),
    ("bert_encoder", (build_bert_encoder, "text-encoder", "BERT-base")),
    ("dit_block", (build_dit_block, "diffusion-denoiser", "DiT (latent diffusion transformer)")),
    ("segformer", (build_segformer, "semantic-segmentation", "SegFormer (MiT-B0)")),
    ("mask2former", (build_mask2former, "panoptic-segmentation", "Mask2Former-Swin-T (masked attention, pixel decoder)")),
    ("swinir", (build_swinir, "super-resolution", "SwinIR (classical SR x2)")),
    ("efficientad", (build_efficientad, "anomaly-detection", "EfficientAD-S")),
    ("yolov10", (build_yolov10, "object-detection", "YOLOv10-S (SCDown, C2fCIB, PSA, NMS-free top-k head)")),
    ("rt_detr", (build_rt_detr, "object-detection", "RT-DETRv2-S (hybrid encoder, top-k queries, deformable attention)")),
    ("rtmpose", (build_rtmpose, "pose-estimation", "RTMPose-t (SimCC/RTMCC head)")),
    ("parseq", (build_parseq, "text-recognition", "PARSeq (NAR decoding)")),
])

# Reduced-precision variants: the base seed's weights and floating inputs cast to the dtype
# after it is built (BatchNorm statistics are calibrated in float32 first). A variant is
# skipped, with the reason, where this torch has no kernel for one of its operators in that
# dtype (LibTorch 1.13 on CPU has almost no float16 kernels; bfloat16 is complete there).
LOW_PRECISION = collections.OrderedDict([
    ("resnet18_bf16", ("resnet18", torch.bfloat16)),
    ("vit_bf16", ("vit", torch.bfloat16)),
    ("qwen_decoder_bf16", ("qwen_decoder", torch.bfloat16)),
    ("resnet18_f16", ("resnet18", torch.float16)),
    ("vit_f16", ("vit", torch.float16)),
    ("qwen_decoder_f16", ("qwen_decoder", torch.float16)),
])


def _low_precision_builder(base, dtype):
    def build():
        model, inputs = SEEDS[base][0]()
        model = model.to(dtype)
        cast = [tuple(t.to(dtype) if t.is_floating_point() else t for t in tup) for tup in inputs]
        return model, cast
    return build


for _name, (_base, _dtype) in LOW_PRECISION.items():
    SEEDS[_name] = (_low_precision_builder(_base, _dtype), SEEDS[_base][1],
                    "%s in %s" % (SEEDS[_base][2], str(_dtype).replace("torch.", "")))



# ---------------------------------------------------------------------------
# Export / verification machinery
# ---------------------------------------------------------------------------


class SeedError(Exception):
    pass


def flatten_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res += flatten_outputs(o)
        return res
    if isinstance(out, dict):
        res = []
        for k in sorted(out):
            res += flatten_outputs(out[k])
        return res
    raise SeedError("unsupported output type %r" % type(out))


def count_params(module):
    seen = set()
    total = 0
    for p in module.parameters():
        key = (p.data_ptr(), p.numel())
        if key not in seen:
            seen.add(key)
            total += p.numel()
    return total


class SeedSkipped(Exception):
    """The seed cannot be built with this torch (a missing kernel for its dtype)."""


def check_inputs_format(name, inputs):
    if not isinstance(inputs, list) or len(inputs) != 3:
        raise SeedError("%s: inputs must be a list of 3 tuples" % name)
    shapes = None
    for tup in inputs:
        if not isinstance(tup, tuple) or not all(isinstance(t, torch.Tensor) for t in tup):
            raise SeedError("%s: every input must be a tuple of tensors" % name)
        if not all(t.is_contiguous() and not t.requires_grad for t in tup):
            raise SeedError("%s: inputs must be plain contiguous tensors" % name)
        s = [(tuple(t.shape), t.dtype) for t in tup]
        if shapes is not None and s != shapes:
            raise SeedError("%s: the builder's profiling inputs must share shapes/dtypes" % name)
        shapes = s


# Shape variants: after tracing on inputs[0], input 1 is replaced by a batch of 2 (inputs 1
# and 2 concatenated) and input 2 by a smaller spatial size or sequence length (3/4 of each
# spatial dimension of a 4-d floating input, 3/4 of the sequence of a 2-d integer input;
# nearest-index subsampling, so the values keep their distribution). A variant is kept only
# where the traced module gives the eager model's outputs on it: a trace that baked a shape
# into a constant (ViT's position embedding, a view to a fixed size) keeps the same-shape
# input, and the manifest says why.


def batch_variant(inputs):
    return tuple(torch.cat([a, b]) if a.dim() > 0 else a for a, b in zip(inputs[1], inputs[2]))


def size_variant(inputs, num=3, den=4):
    out = []
    changed = False
    for t in inputs[2]:
        if t.is_floating_point() and t.dim() == 4 and min(t.shape[2:]) >= 8:
            h, w = t.shape[2], t.shape[3]
            ih = torch.linspace(0, h - 1, h * num // den).round().long()
            iw = torch.linspace(0, w - 1, w * num // den).round().long()
            out.append(t[:, :, ih][:, :, :, iw].contiguous())
            changed = True
        elif not t.is_floating_point() and t.dim() == 2 and t.shape[1] >= 8:
            out.append(t[:, : t.shape[1] * num // den].contiguous())
            changed = True
        else:
            out.append(t)
    return tuple(out) if changed else None


def describe(tup):
    return ", ".join("x".join(str(d) for d in t.shape) + " " + str(t.dtype).replace("torch.", "")
                     for t in tup)


def compare_outputs(name, model, traced, tup, tol, what):
    """Eager against traced on one input; returns (eager outputs, max diff) or raises SeedError."""
    ref = flatten_outputs(model(*tup))
    got = flatten_outputs(traced(*tup))
    if len(ref) != len(got):
        raise SeedError("%s: the traced module returns %d outputs, eager %d on %s" % (name, len(got), len(ref), what))
    max_diff = 0.0
    for r, g in zip(ref, got):
        if r.shape != g.shape or r.dtype != g.dtype:
            raise SeedError("%s: output shape/dtype mismatch on %s: traced %s %s, eager %s %s"
                            % (name, what, tuple(g.shape), g.dtype, tuple(r.shape), r.dtype))
        if not torch.isfinite(r).all():
            raise SeedError("%s: eager output is not finite on %s" % (name, what))
        if not torch.equal(r, g):
            d = (r.double() - g.double()).abs().max().item()
            max_diff = max(max_diff, d)
            if not d <= tol:
                raise SeedError("%s: traced output differs from eager on %s (max abs diff %g > %g)"
                                % (name, what, d, tol))
    return [r.detach() for r in ref], max_diff


def probe_dtype(name, model, inputs):
    """SeedSkipped when this torch has no kernel for the seed's reduced-precision dtype."""
    try:
        with torch.no_grad():
            model(*inputs[0])
    except RuntimeError as e:
        msg = str(e)
        if "not implemented for" in msg:
            raise SeedSkipped("%s: torch %s has no kernel for it on CPU (%s)"
                              % (name, torch.__version__, msg.splitlines()[0]))
        raise


def trace_and_save(name, model, inputs, out_pt, out_inputs, verbose=False, tol=1e-6):
    """Trace `model` on inputs[0], pick the shape variants, save, reload and verify.
    Returns an info dict."""
    check_inputs_format(name, inputs)
    model.eval()
    low = (torch.float16, torch.bfloat16)
    if any(t.dtype in low for t in inputs[0]) or any(p.dtype in low for p in model.parameters()):
        probe_dtype(name, model, inputs)
    with torch.enable_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            traced = torch.jit.trace(model, inputs[0], check_trace=True,
                                     check_inputs=[inputs[1], inputs[2]])
        except torch.jit.TracingCheckError:
            # PyTorch 2.x's check re-traces and compares the graphs as text. For torchvision's
            # ViT the re-trace takes another (equivalent) path through nn.MultiheadAttention and
            # other mangled class names, so the check fails on a correct trace. The trace is
            # kept without it: the saved module is checked against eager on all three inputs
            # below, and the forbidden kinds above still apply.
            traced = torch.jit.trace(model, inputs[0], check_trace=False)
    tracer_warnings = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    if verbose:
        for where, msg in sorted(set(("%s:%d" % (w.filename, w.lineno), str(w.message).split(".")[0])
                                     for w in tracer_warnings)):
            print("    TracerWarning at %s: %s" % (where, msg))

    graph_str = str(traced.inlined_graph)
    for kind in FORBIDDEN_KINDS:
        if kind in graph_str:
            raise SeedError("%s: traced graph contains %s" % (name, kind))

    # Shape variants, kept where the trace is valid for them.
    variants = {}
    inputs = list(inputs)
    # Tried in order; the first the trace is valid for is kept (a size of 3/4 breaks an FPN
    # whose levels must halve exactly, where 1/2 keeps them multiples of the stride).
    tries = ((1, "batch", [batch_variant(inputs)]),
             (2, "size", [size_variant(inputs, 3, 4), size_variant(inputs, 1, 2)]))
    for slot, key, candidates in tries:
        if candidates[0] is None:
            variants[key] = "no spatial or sequence dimension to vary"
            continue
        reasons = []
        for v in candidates:
            what = "the %s variant (%s)" % (key, describe(v))
            try:
                with torch.enable_grad():
                    compare_outputs(name, model, traced, v, tol, what)
                inputs[slot] = v
                variants[key] = describe(v)
                break
            except Exception as e:  # the eager model may refuse the shape too (an assert)
                reason = (str(e).splitlines() or [type(e).__name__])[0]
                if reason.startswith(name + ": "):
                    reason = reason[len(name) + 2:]
                reasons.append("%s: %s" % (describe(v), reason[:200]))
        else:
            variants[key] = "not used: " + "; ".join(reasons)

    tmp_pt = out_pt + ".tmp"
    tmp_inputs = out_inputs + ".tmp"
    torch.jit.save(traced, tmp_pt)
    torch.save(inputs, tmp_inputs)
    try:
        loaded = torch.jit.load(tmp_pt)
        loaded_inputs = torch.load(tmp_inputs)
        max_diff = 0.0
        eager_outs = []
        with torch.enable_grad():
            for i, tup in enumerate(loaded_inputs):
                for a, b in zip(tup, inputs[i]):
                    if not torch.equal(a, b):
                        raise SeedError("%s: inputs did not round-trip through torch.save" % name)
                outs, d = compare_outputs(name, model, loaded, tup, tol, "input %d (%s)" % (i, describe(tup)))
                max_diff = max(max_diff, d)
                eager_outs.append(outs)
        # Degenerate-output guard: every output must vary within a tensor (if it has more than
        # one element) and across the inputs. Outputs of another shape are compared by their
        # first batch element where the leading dimension is the batch.
        for j, r in enumerate(eager_outs[0]):
            if r.numel() > 1 and r.double().std().item() == 0.0:
                raise SeedError("%s: output %d is constant" % (name, j))
            scale = r.abs().max().item()
            changes = []
            for other in eager_outs[1:]:
                o = other[j]
                if o.shape != r.shape and o.dim() == r.dim() and r.dim() > 0 and r.shape[0] == 1 and \
                        o.shape[1:] == r.shape[1:]:
                    o = o[:1]
                if o.shape == r.shape:
                    changes.append((r.double() - o.double()).abs().max().item())
            if not changes:
                raise SeedError("%s: output %d has no comparable output on another input" % (name, j))
            var = max(changes)
            if not var > 1e-3 * scale:
                raise SeedError("%s: output %d (nearly) does not depend on the input "
                                "(max change %g vs max magnitude %g)" % (name, j, var, scale))
    except BaseException:
        for p in (tmp_pt, tmp_inputs):
            if os.path.exists(p):
                os.remove(p)
        raise
    if os.path.exists(out_pt):
        os.remove(out_pt)
    os.replace(tmp_inputs, out_inputs)
    os.replace(tmp_pt, out_pt)
    return {"max_diff": max_diff, "tracer_warnings": len(tracer_warnings),
            "outputs": [list(r.shape) for r in eager_outs[0]], "variants": variants}


def manifest_entry(name, task, stand_in, outdir, variants=None):
    pt = os.path.join(outdir, name + ".pt")
    inp = os.path.join(outdir, name + ".inputs.pt")
    m = torch.jit.load(pt)
    inputs = torch.load(inp)
    return {
        "name": name,
        "task": task,
        "stand_in_for": stand_in,
        "file": name + ".pt",
        "inputs_file": name + ".inputs.pt",
        "num_inputs": len(inputs),
        "input_shapes": [list(t.shape) for t in inputs[0]],
        "input_dtypes": [str(t.dtype).replace("torch.", "") for t in inputs[0]],
        "profiling_shapes": [[list(t.shape) for t in tup] for tup in inputs],
        "shape_variants": variants or {},
        "params": count_params(m),
        "size_bytes": os.path.getsize(pt),
        "nodes": len(list(m.inlined_graph.nodes())),
    }


def frozen_node_kinds(pt_path):
    """Node kinds of the graph after freezing (no conv-bn folding) + inlining,
    including nodes in sub-blocks."""
    m = torch.jit.load(pt_path)
    m.eval()
    frozen = torch.jit._recursive.wrap_cpp_module(torch._C._freeze_module(m._c))
    graph = frozen.graph
    torch._C._jit_pass_inline(graph)
    counts = collections.Counter()

    def walk(block):
        for node in block.nodes():
            counts[node.kind()] += 1
            for sub in node.blocks():
                walk(sub)

    walk(graph)
    return counts


def is_up_to_date(outdir, name, script_mtime):
    paths = [os.path.join(outdir, name + ext) for ext in (".pt", ".inputs.pt")]
    return all(os.path.exists(p) and os.path.getmtime(p) > script_mtime for p in paths)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Build the FlowMuT TorchScript seed zoo.")
    ap.add_argument("outdir", nargs="?", help="output directory")
    ap.add_argument("--only", help="comma-separated seed names to build")
    ap.add_argument("--list", action="store_true", help="list the seeds and exit")
    ap.add_argument("--force", action="store_true", help="rebuild seeds even if up to date")
    ap.add_argument("--node-kinds", action="store_true",
                    help="also write OUTDIR/node_kinds.txt (frozen + inlined graph node kinds)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print tracer warnings")
    args = ap.parse_args(argv)

    if args.list:
        for name, (_, task, stand_in) in SEEDS.items():
            print("%-20s %-24s %s" % (name, task, stand_in))
        return 0
    if not args.outdir:
        ap.error("OUTDIR is required")

    names = list(SEEDS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in SEEDS]
        if unknown:
            ap.error("unknown seed(s): %s (see --list)" % ", ".join(unknown))

    os.makedirs(args.outdir, exist_ok=True)
    script_mtime = os.path.getmtime(os.path.abspath(__file__))
    t_all = time.time()
    failures = []
    skipped = {}
    # Shape-variant notes of seeds not rebuilt this run come from the previous manifest.
    variants = {}
    try:
        with open(os.path.join(args.outdir, "manifest.json")) as f:
            variants = {e["name"]: e.get("shape_variants", {}) for e in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for name in names:
        builder, task, _ = SEEDS[name]
        out_pt = os.path.join(args.outdir, name + ".pt")
        out_inputs = os.path.join(args.outdir, name + ".inputs.pt")
        if not args.force and is_up_to_date(args.outdir, name, script_mtime):
            print("%-20s %8.2f MB  up to date, skipped" % (name, os.path.getsize(out_pt) / 1e6),
                  flush=True)
            continue
        t0 = time.time()
        try:
            torch.manual_seed(0)
            model, inputs = builder()
            info = trace_and_save(name, model, inputs, out_pt, out_inputs, verbose=args.verbose)
            variants[name] = info["variants"]
        except SeedSkipped as e:
            print("%-20s skipped: %s" % (name, str(e)[len(name) + 2:]), flush=True)
            skipped[name] = str(e)
            for ext in (".pt", ".inputs.pt"):  # a stale file from another torch is not this zoo
                if os.path.exists(os.path.join(args.outdir, name + ext)):
                    os.remove(os.path.join(args.outdir, name + ext))
            continue
        except Exception as e:  # report and keep going; exit status says it failed
            msg = str(e) if isinstance(e, SeedError) else "%s: %s: %s" % (name, type(e).__name__, e)
            print("%-20s FAILED: %s" % (name, msg), flush=True)
            failures.append(msg)
            continue
        size = os.path.getsize(out_pt)
        extra = ""
        if info["max_diff"] > 0:
            extra += "  max|diff| %.2g" % info["max_diff"]
        if info["tracer_warnings"]:
            extra += "  (%d tracer warnings)" % info["tracer_warnings"]
        print("%-20s %8.2f MB %6.1f s%s" % (name, size / 1e6, time.time() - t0, extra), flush=True)
        for key, what in info["variants"].items():
            print("%-20s   %-5s %s" % ("", key, what), flush=True)

    # Manifest: every known seed whose files exist in OUTDIR.
    entries = []
    for name, (_, task, stand_in) in SEEDS.items():
        if all(os.path.exists(os.path.join(args.outdir, name + ext)) for ext in (".pt", ".inputs.pt")):
            entries.append(manifest_entry(name, task, stand_in, args.outdir, variants.get(name)))
    with open(os.path.join(args.outdir, "manifest.json"), "w") as f:
        json.dump(entries, f, indent=2)
        f.write("\n")

    if args.node_kinds:
        total = collections.Counter()
        seeds_with = collections.Counter()
        for e in entries:
            kinds = frozen_node_kinds(os.path.join(args.outdir, e["file"]))
            total.update(kinds)
            seeds_with.update(kinds.keys())
        path = os.path.join(args.outdir, "node_kinds.txt")
        with open(path, "w") as f:
            f.write("# node kinds after torch._C._freeze_module + _jit_pass_inline, over %d seeds\n"
                    % len(entries))
            f.write("# count kind seeds_containing_it\n")
            for kind, n in sorted(total.items(), key=lambda kv: (-kv[1], kv[0])):
                f.write("%d %s %d\n" % (n, kind, seeds_with[kind]))
        print("wrote %s (%d kinds)" % (path, len(total)))

    print("total %.1f s, %d seed(s) in manifest, %d skipped" % (time.time() - t_all, len(entries), len(skipped)))
    if failures:
        print("ERROR: %d seed(s) failed:" % len(failures), file=sys.stderr)
        for msg in failures:
            print("  " + msg, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
