"""Deterministic model zoo shared by tests, benchmarks and examples.

Every model is built from a fixed seed (without touching the global RNG), needs no
download and no torchvision, and comes with deterministic example inputs and calibration
batches.  Batch-norm statistics are measured on deterministic data, so activations have the
ranges of a trained network rather than exploding or vanishing through random layers.

    from devkit.zoo import ZOO
    entry = ZOO["mobilenet_v2_0.35_96"]
    m, ex, calib = entry.model(), entry.example_inputs(), entry.calibration_data(8)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .digits import RowSequence

# ---------------------------------------------------------------------------------------------
# building blocks


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True,
             relu6: bool = True) -> nn.Sequential:
    pad = k // 2
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if act:
        layers.append(nn.ReLU6() if relu6 else nn.ReLU())
    return nn.Sequential(*layers)


def _make_divisible(v: float, divisor: int = 8) -> int:
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(_conv_bn(cin, hidden, 1))
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=False)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return x + y if self.use_res else y


class MobileNetV2(nn.Module):
    """MobileNetV2 with a width multiplier (the torchvision layer plan, written out here)."""

    def __init__(self, width: float = 1.0, num_classes: int = 1000, in_ch: int = 3) -> None:
        super().__init__()
        plan = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
        c = _make_divisible(32 * width)
        last = _make_divisible(1280 * max(1.0, width))
        layers: list[nn.Module] = [_conv_bn(in_ch, c, 3, 2)]
        for t, co, n, s in plan:
            out = _make_divisible(co * width)
            for i in range(n):
                layers.append(InvertedResidual(c, out, s if i == 0 else 1, t))
                c = out
        layers.append(_conv_bn(c, last, 1))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


class MobileNetV1(nn.Module):
    """MobileNetV1 with a width multiplier (person-detection shape: grayscale, 2 classes)."""

    def __init__(self, width: float = 0.25, num_classes: int = 2, in_ch: int = 1) -> None:
        super().__init__()
        plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]
        c = int(32 * width)
        layers: list[nn.Module] = [_conv_bn(in_ch, c, 3, 2, relu6=False)]
        for co, s in plan:
            out = int(co * width)
            layers += [_conv_bn(c, c, 3, s, groups=c, relu6=False), _conv_bn(c, out, 1, relu6=False)]
            c = out
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class DSCNN(nn.Module):
    """Keyword spotting DS-CNN (MLPerf Tiny KWS shape): 49x10 MFCC in, 12 classes out."""

    def __init__(self, channels: int = 64, num_classes: int = 12) -> None:
        super().__init__()
        # 10x4 stride-2 stem: 49x10 -> 25x5
        layers: list[nn.Module] = [
            nn.Sequential(nn.Conv2d(1, channels, (10, 4), 2, (5, 1), bias=False),
                          nn.BatchNorm2d(channels), nn.ReLU())
        ]
        for _ in range(4):
            layers += [_conv_bn(channels, channels, 3, 1, groups=channels, relu6=False),
                       _conv_bn(channels, channels, 1, relu6=False)]
        self.features = nn.Sequential(*layers)
        self.dropout = nn.Dropout(0.4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.dropout(self.features(x)))
        return self.fc(torch.flatten(x, 1))


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.a = _conv_bn(cin, cout, 3, stride, relu6=False)
        self.b = _conv_bn(cout, cout, 3, 1, act=False)
        self.short = (nn.Identity() if stride == 1 and cin == cout
                      else nn.Conv2d(cin, cout, 1, stride))
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.b(self.a(x)) + self.short(x))


class ResNet8(nn.Module):
    """MLPerf Tiny image classification ResNet-8 (32x32x3, 10 classes)."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = _conv_bn(3, 16, 3, relu6=False)
        self.stack = nn.Sequential(_ResBlock(16, 16, 1), _ResBlock(16, 32, 2), _ResBlock(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.stack(self.stem(x))), 1))


class DenseAutoencoder(nn.Module):
    """MLPerf Tiny anomaly-detection shape: 640 -> 128x4 -> 8 -> 128x4 -> 640."""

    def __init__(self, inputs: int = 640, hidden: int = 128, code: int = 8) -> None:
        super().__init__()
        dims = [inputs, hidden, hidden, hidden, hidden, code, hidden, hidden, hidden, hidden]
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(dims):
            layers += [nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU()]
        layers.append(nn.Linear(hidden, inputs))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class TinyViT(nn.Module):
    """A small ViT: patch embedding (conv), a transformer encoder (layer norm, attention
    matmuls, GELU MLP), the token mean of [N, T, C] over T and a classifier, all delegated
    (the token mean since issue 25)."""

    def __init__(self, dim: int = 32, heads: int = 2, depth: int = 1, num_classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.pos = nn.Parameter(torch.randn(1, 64, dim) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, dim * 2, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x).mean(dim=1))


class CumsumNet(nn.Module):
    """A sequence model whose running sum (cumsum) has no delegate kernel: CPU fallback
    between a delegated input projection and a delegated output layer."""

    def __init__(self, features: int = 16, hidden: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(features, hidden)
        self.relu = nn.ReLU()
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.relu(self.proj(x))
        h = torch.cumsum(h, dim=1) / h.shape[1]
        return self.out(h)


class IslandNet(nn.Module):
    """Two delegated convolution stacks with a CPU-only operator (abs) between them: the
    lowering must produce two partitions around a CPU island."""

    def __init__(self) -> None:
        super().__init__()
        self.front = nn.Sequential(_conv_bn(3, 16, 3, 2, relu6=False), _conv_bn(16, 16, 3))
        self.back = nn.Sequential(_conv_bn(16, 32, 3, 2), _conv_bn(32, 32, 1))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.abs(self.front(x) - 0.5)
        return self.fc(torch.flatten(self.pool(self.back(x)), 1))


# ---------------------------------------------------------------------------------------------
# the registry


def _randn(shape: Sequence[int], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


@dataclass(frozen=True)
class ZooModel:
    name: str
    factory: Callable[[], nn.Module]
    input_shapes: tuple[tuple[int, ...], ...]
    seed: int
    cpu_fallback: bool = False  # some operators are expected to stay on the CPU
    large: bool = False  # slow to lower: tests mark it slow

    def model(self) -> nn.Module:
        """The model in eval mode, identical on every call."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            m = self.factory()
            _settle_batch_norm(m, self._batches(4, self.seed + 7, batch=8))
        return m.eval()

    def _batches(self, n: int, seed: int, batch: int = 1) -> list[tuple[torch.Tensor, ...]]:
        return [
            tuple(_randn((batch, *s[1:]), seed * 1000 + 17 * i + k) for k, s in enumerate(self.input_shapes))
            for i in range(n)
        ]

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        return self._batches(1, self.seed + 1)[0]

    def calibration_data(self, n: int = 8) -> list[tuple[torch.Tensor, ...]]:
        """``n`` deterministic batches shaped like ``example_inputs()``, distinct from it."""
        return self._batches(n, self.seed + 2)

    def test_inputs(self, n: int = 4) -> list[tuple[torch.Tensor, ...]]:
        """Held-out inputs (neither the example nor calibration) for accuracy checks."""
        return self._batches(n, self.seed + 3)


def _settle_batch_norm(m: nn.Module, batches: list[tuple[torch.Tensor, ...]]) -> None:
    """Give batch norms the statistics of deterministic data and a random affine part."""
    bns = [b for b in m.modules() if isinstance(b, nn.BatchNorm1d | nn.BatchNorm2d)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the batches below
    m.train()
    with torch.no_grad():
        for b in batches:
            m(*b)
        for bn in bns:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)


def mobilenet_v2(width: float, size: int, seed: int = 100, num_classes: int = 1000) -> ZooModel:
    """A MobileNetV2 entry for any width multiplier and (square) input size."""
    return ZooModel(f"mobilenet_v2_{width}_{size}", lambda: MobileNetV2(width, num_classes),
                    ((1, 3, size, size),), seed, large=width * size > 100)


ZOO: dict[str, ZooModel] = {
    z.name: z
    for z in (
        mobilenet_v2(0.35, 96, 101),
        mobilenet_v2(1.0, 224, 102),
        ZooModel("mobilenet_v1_0.25_96_gray", lambda: MobileNetV1(0.25, 2, 1), ((1, 1, 96, 96),), 103),
        ZooModel("ds_cnn_kws", DSCNN, ((1, 1, 49, 10),), 104),
        ZooModel("resnet8", ResNet8, ((1, 3, 32, 32),), 105),
        ZooModel("dense_autoencoder", DenseAutoencoder, ((1, 640),), 106),
        ZooModel("tiny_vit", TinyViT, ((1, 3, 32, 32),), 107),
        ZooModel("cumsum_net", CumsumNet, ((1, 20, 16),), 108, cpu_fallback=True),
        ZooModel("island_net", IslandNet, ((1, 3, 32, 32),), 109, cpu_fallback=True),
        # recurrent classifiers over 8 steps of 8 features (an image's rows, devkit.digits): the
        # unrolled steps are ~1,000 nodes, minutes in to_edge, hence "large"
        ZooModel("gru_rows", lambda: RowSequence("gru"), ((1, 1, 8, 8),), 110, large=True),
        ZooModel("lstm_rows", lambda: RowSequence("lstm"), ((1, 1, 8, 8),), 111, large=True),
    )
}
