"""Small, faithful re-implementations of the blocks that split transformer-ish and shuffle
architectures (issue 17), written here from the papers' and the common implementations'
layer plans (torchvision's ShuffleNetV2, timm's MobileViT and EfficientViT): the same
operators in the same order, at a size that lowers in seconds.

* ``ShuffleNetTiny``: ShuffleNetV2 units (stride-2 unit with two branches, stride-1 unit
  with a channel split), each ending in the channel shuffle ``view [N, g, C/g, H, W] ->
  transpose(1, 2) -> contiguous -> view [N, C, H, W]``.
* ``MobileViTTiny``: a MobileNetV2 block, then a MobileViT block: local 3x3 + 1x1 convs,
  unfold into 2x2 patches (timm's reshape/transpose chain), transformer blocks (layer
  norm, multi-head self-attention with the rank-5 ``qkv`` head split, ``unbind`` and
  ``F.scaled_dot_product_attention``, MLP with SiLU), layer norm, fold, 1x1 projection and
  the 3x3 fusion conv over ``cat(shortcut, x)``.
* ``LiteMLA`` and ``EfficientViTBTiny``: EfficientViT-B's (MIT's) ReLU linear attention
  (1x1 qkv conv, multi-scale aggregation by a depthwise 5x5 and a grouped 1x1 conv, ``cat``,
  the ``[B, heads, HW, 3d]`` view, ``chunk``, ReLU kernels, ``v`` padded with a column of
  ones, ``k^T @ v`` then ``q @ kv`` with autocast off, the normaliser
  ``out[..., :-1] / (out[..., -1:] + eps)``, 1x1 projection with batch norm) inside
  EfficientViT-B's stages (hardswish DSConv / MBConv blocks, the context + local residual
  block, the 1x1 conv -> pool -> linear -> layer norm -> hardswish -> linear head).
* ``EfficientViTTiny``: EfficientViT-M-style cascaded group attention (per-head chunk,
  1x1 qkv conv, ``split``, depthwise conv on q, ``q^T @ k * scale + attention bias``,
  softmax, ``v @ attn^T``) inside the local-window partition (rank-6 view/transpose), and
  the ``BatchNorm1d -> Linear`` classifier.

``digits_images`` gives real inputs: scikit-learn's bundled 8x8 handwritten digits, scaled
up to the models' input size (for calibration and comparison).
"""

from __future__ import annotations

import itertools

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             act: type[nn.Module] | None = nn.ReLU) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- ShuffleNetV2


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.size()
    x = x.view(b, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(b, -1, h, w)


class ShuffleUnit(nn.Module):
    """ShuffleNetV2's unit: stride 2 runs both branches on the whole input; stride 1 splits
    the channels in two, keeps one half and runs branch 2 on the other."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        half = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(_conv_bn(cin, cin, 3, stride, groups=cin, act=None),
                                         _conv_bn(cin, half, 1))
        else:
            self.branch1 = nn.Sequential()
        b2_in = cin if stride > 1 else half
        self.branch2 = nn.Sequential(_conv_bn(b2_in, half, 1),
                                     _conv_bn(half, half, 3, stride, groups=half, act=None),
                                     _conv_bn(half, half, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetTiny(nn.Module):
    def __init__(self, num_classes: int = 10, width: tuple[int, ...] = (16, 32, 64), last: int = 96) -> None:
        super().__init__()
        self.conv1 = _conv_bn(3, width[0], 3, 2)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers: list[nn.Module] = []
        c = width[0]
        for out in width[1:]:
            layers += [ShuffleUnit(c, out, 2), ShuffleUnit(out, out, 1)]
            c = out
        self.stages = nn.Sequential(*layers)
        self.conv5 = _conv_bn(c, last, 1)
        self.fc = nn.Linear(last, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv5(self.stages(self.maxpool(self.conv1(x))))
        return self.fc(x.mean([2, 3]))


# --------------------------------------------------------------------------- MobileViT


class Attention(nn.Module):
    """timm's ``Attention``: fused qkv projection, rank-5 head split, scaled dot product."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)
        x = x.transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class TransformerBlock(nn.Module):
    """Pre-norm transformer block (timm's ``Block``): attention and an MLP with SiLU."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 2.0) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class MobileViTBlock(nn.Module):
    def __init__(self, cin: int, dim: int, depth: int, heads: int, patch: int = 2) -> None:
        super().__init__()
        self.conv_kxk = _conv_bn(cin, cin, 3, act=nn.SiLU)
        self.conv_1x1 = nn.Conv2d(cin, dim, 1, bias=False)
        self.transformer = nn.Sequential(*(TransformerBlock(dim, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.conv_proj = _conv_bn(dim, cin, 1, act=nn.SiLU)
        self.conv_fusion = _conv_bn(2 * cin, cin, 3, act=nn.SiLU)
        self.patch = patch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = x
        x = self.conv_1x1(self.conv_kxk(x))
        p = self.patch
        b, c, h, w = x.shape
        nh, nw = h // p, w // p
        n = nh * nw
        # unfold: [B, C, H, W] -> [B*C*nh, nw, p, p] -> [B*P, N, C]
        x = x.reshape(b * c * nh, p, nw, p).transpose(1, 2)
        x = x.reshape(b, c, n, p * p).transpose(1, 3).reshape(b * p * p, n, -1)
        x = self.norm(self.transformer(x))
        # fold: [B*P, N, C] -> [B, C, H, W]
        x = x.contiguous().view(b, p * p, n, -1)
        x = x.transpose(1, 3).reshape(b * c * nh, nw, p, p)
        x = x.transpose(1, 2).reshape(b, c, nh * p, nw * p)
        x = self.conv_proj(x)
        return self.conv_fusion(torch.cat((shortcut, x), dim=1))


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.conv = nn.Sequential(_conv_bn(cin, hid, 1, act=nn.SiLU),
                                  _conv_bn(hid, hid, 3, stride, groups=hid, act=nn.SiLU),
                                  _conv_bn(hid, cout, 1, act=None))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return x + y if self.use_res else y


class MobileViTTiny(nn.Module):
    def __init__(self, num_classes: int = 10, dim: int = 32, depth: int = 2, heads: int = 4) -> None:
        super().__init__()
        self.stem = _conv_bn(3, 16, 3, 2, act=nn.SiLU)
        self.mv2 = InvertedResidual(16, 24, 2, 2)
        self.vit = MobileViTBlock(24, dim, depth, heads)
        self.head = _conv_bn(24, 64, 1, act=nn.SiLU)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.head(self.vit(self.mv2(self.stem(x))))
        return self.fc(x.mean([2, 3]))


# --------------------------------------------------------------------------- EfficientViT (B, MIT)


class LiteMLA(nn.Module):
    """EfficientViT-B's multi-scale ReLU linear attention, ``heads = channels // dim``."""

    def __init__(self, channels: int, dim: int = 8, scales: tuple[int, ...] = (5,), eps: float = 1e-5) -> None:
        super().__init__()
        heads = channels // dim
        total = heads * dim
        self.dim, self.eps = dim, eps
        self.qkv = nn.Conv2d(channels, 3 * total, 1, bias=False)
        self.aggreg = nn.ModuleList(
            nn.Sequential(nn.Conv2d(3 * total, 3 * total, k, padding=k // 2, groups=3 * total, bias=False),
                          nn.Conv2d(3 * total, 3 * total, 1, groups=3 * heads, bias=False))
            for k in scales)
        self.kernel_func = nn.ReLU()
        self.proj = _conv_bn(total * (1 + len(scales)), channels, 1, act=None)

    def _attn(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        dtype = v.dtype
        q, k, v = q.float(), k.float(), v.float()
        kv = k.transpose(-1, -2) @ v
        out = q @ kv
        out = out[..., :-1] / (out[..., -1:] + self.eps)
        return out.to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        qkv = self.qkv(x)
        ms = torch.cat([qkv] + [op(qkv) for op in self.aggreg], dim=1)
        ms = ms.reshape(b, -1, 3 * self.dim, h * w).transpose(-1, -2)
        q, k, v = ms.chunk(3, dim=-1)
        q, k = self.kernel_func(q), self.kernel_func(k)
        v = F.pad(v, (0, 1), mode="constant", value=1.0)
        with torch.autocast(device_type=v.device.type, enabled=False):
            out = self._attn(q, k, v)
        return self.proj(out.transpose(-1, -2).reshape(b, -1, h, w))


class MBConv(nn.Module):
    """EfficientViT-B's MBConv: 1x1 expand and 3x3 depthwise with bias and hardswish, no norm;
    1x1 project with batch norm."""

    def __init__(self, cin: int, cout: int, stride: int = 1, expand: int = 4) -> None:
        super().__init__()
        mid = cin * expand
        self.inverted = nn.Sequential(nn.Conv2d(cin, mid, 1), nn.Hardswish())
        self.depth = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid), nn.Hardswish())
        self.point = _conv_bn(mid, cout, 1, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.point(self.depth(self.inverted(x)))


class EfficientVitBlockB(nn.Module):
    """Context (LiteMLA) then local (MBConv) module, each a residual."""

    def __init__(self, channels: int, dim: int = 8) -> None:
        super().__init__()
        self.context = LiteMLA(channels, dim)
        self.local = MBConv(channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.context(x)
        return x + self.local(x)


class EfficientViTBTiny(nn.Module):
    """EfficientViT-B0's layer plan at a third of its widths and 32x32 inputs: stem with a
    DSConv residual, an MBConv stage, then a stride-2 MBConv and two attention blocks, and
    the head."""

    def __init__(self, num_classes: int = 10, widths: tuple[int, int, int] = (8, 16, 32), dim: int = 8) -> None:
        super().__init__()
        w0, w1, w2 = widths
        self.stem = _conv_bn(3, w0, 3, 2, act=nn.Hardswish)
        self.ds = nn.Sequential(_conv_bn(w0, w0, 3, groups=w0, act=nn.Hardswish), _conv_bn(w0, w0, 1, act=None))
        self.stage1 = MBConv(w0, w1, stride=2)
        self.down = MBConv(w1, w2, stride=2)
        self.blocks = nn.Sequential(EfficientVitBlockB(w2, dim), EfficientVitBlockB(w2, dim))
        self.head_conv = _conv_bn(w2, 64, 1, act=nn.Hardswish)
        self.classifier = nn.Sequential(nn.Linear(64, 80, bias=False), nn.LayerNorm(80), nn.Hardswish(),
                                        nn.Linear(80, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = x + self.ds(x)
        x = self.blocks(self.down(self.stage1(x)))
        return self.classifier(self.head_conv(x).mean([2, 3]))


# --------------------------------------------------------------------------- EfficientViT (M)


class CascadedGroupAttention(nn.Module):
    """EfficientViT-M's attention: each head sees one channel group plus the previous
    head's output; relative-position biases indexed by |dy|, |dx| are a constant in eval."""

    def __init__(self, dim: int, key_dim: int, heads: int, attn_ratio: float, resolution: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.d = int(attn_ratio * key_dim)
        self.qkvs = nn.ModuleList(_conv_bn(dim // heads, 2 * key_dim + self.d, 1, act=None) for _ in range(heads))
        self.dws = nn.ModuleList(_conv_bn(key_dim, key_dim, 3, groups=key_dim, act=None) for _ in range(heads))
        self.proj = nn.Sequential(nn.ReLU(), _conv_bn(self.d * heads, dim, 1, act=None))
        points = list(itertools.product(range(resolution), range(resolution)))
        offsets: dict[tuple[int, int], int] = {}
        idxs = []
        for p1 in points:
            for p2 in points:
                off = (abs(p1[0] - p2[0]), abs(p1[1] - p2[1]))
                offsets.setdefault(off, len(offsets))
                idxs.append(offsets[off])
        self.attention_biases = nn.Parameter(torch.zeros(heads, len(offsets)))
        self.register_buffer("attention_bias_idxs", torch.LongTensor(idxs).view(len(points), len(points)),
                             persistent=False)
        self.register_buffer("ab", torch.zeros(heads, len(points), len(points)), persistent=False)

    def refresh_bias(self) -> None:
        """What timm's ``train(False)`` caches: the bias table gathered into [heads, N, N]."""
        with torch.no_grad():
            self.ab.copy_(self.attention_biases[:, self.attention_bias_idxs])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        feats_in = x.chunk(len(self.qkvs), dim=1)
        feats_out = []
        feat = feats_in[0]
        for i, qkv in enumerate(self.qkvs):
            if i > 0:
                feat = feat + feats_in[i]
            feat = qkv(feat)
            q, k, v = feat.view(b, -1, h, w).split([self.key_dim, self.key_dim, self.d], dim=1)
            q = self.dws[i](q)
            q, k, v = q.flatten(2), k.flatten(2), v.flatten(2)
            attn = (q.transpose(-2, -1) @ k) * self.scale + self.ab[i]
            attn = attn.softmax(dim=-1)
            feat = (v @ attn.transpose(-2, -1)).view(b, self.d, h, w)
            feats_out.append(feat)
        return self.proj(torch.cat(feats_out, 1))


class LocalWindowAttention(nn.Module):
    """Window partition (rank-6 view + transpose), attention per window, window reverse."""

    def __init__(self, dim: int, key_dim: int, heads: int, resolution: int, window: int) -> None:
        super().__init__()
        self.resolution = resolution
        self.window = window
        self.attn = CascadedGroupAttention(dim, key_dim, heads, dim / (key_dim * heads), window)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        wr = self.window
        nh, nw = h // wr, w // wr
        x = x.permute(0, 2, 3, 1)
        x = x.view(b, nh, wr, nw, wr, c).transpose(2, 3).reshape(b * nh * nw, wr, wr, c).permute(0, 3, 1, 2)
        x = self.attn(x)
        x = x.permute(0, 2, 3, 1).view(b, nh, nw, wr, wr, c).transpose(2, 3).reshape(b, h, w, c)
        return x.permute(0, 3, 1, 2)


class EfficientViTTiny(nn.Module):
    def __init__(self, num_classes: int = 10, dim: int = 32, key_dim: int = 8, heads: int = 2,
                 resolution: int = 8, window: int = 4) -> None:
        super().__init__()
        self.patch_embed = nn.Sequential(_conv_bn(3, dim // 2, 3, 2), _conv_bn(dim // 2, dim, 3, 2, act=None))
        self.dw0 = _conv_bn(dim, dim, 3, groups=dim, act=None)
        self.ffn0 = nn.Sequential(_conv_bn(dim, 2 * dim, 1), _conv_bn(2 * dim, dim, 1, act=None))
        self.mixer = LocalWindowAttention(dim, key_dim, heads, resolution, window)
        self.ffn1 = nn.Sequential(_conv_bn(dim, 2 * dim, 1), _conv_bn(2 * dim, dim, 1, act=None))
        self.head = nn.Sequential(nn.BatchNorm1d(dim), nn.Linear(dim, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        x = x + self.dw0(x)
        x = x + self.ffn0(x)
        x = x + self.mixer(x)
        x = x + self.ffn1(x)
        return self.head(x.mean([2, 3]))

    def train(self, mode: bool = True) -> EfficientViTTiny:
        super().train(mode)
        if not mode:
            self.mixer.attn.refresh_bias()
        return self


# --------------------------------------------------------------------------- data


def digits_images(size: int = 32, channels: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 1,797 8x8 digits (values 0..16), scaled to 0..1, upsampled bilinearly
    to ``size`` x ``size`` and repeated over ``channels``; with their labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return x.repeat(1, channels, 1, 1).contiguous(), torch.tensor(d.target)


def split(n_test: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Train / test indices of the digits (a fixed permutation)."""
    order = np.random.default_rng(seed).permutation(1797)
    return order[n_test:], order[:n_test]
