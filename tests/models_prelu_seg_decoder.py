"""Three architecture kinds that used to split into several partitions, written out here (our
own code, after the published layer plans) and trained in seconds on scikit-learn's bundled
digits (1,797 8x8 handwritten digits, real data shipped with scikit-learn, no download):

- ``PNet`` / ``RNet`` / ``ONet``: MTCNN's three networks (facenet-pytorch's layer plan: conv +
  per-channel PReLU + ceil-mode max pooling, RNet/ONet flatten after a ``permute(0, 3, 2, 1)``
  into linear + PReLU, a softmax classifier head and linear regression heads; PNet is fully
  convolutional with 1x1 heads), on digits resized to 12, 24 and 48 pixels: the classifier
  learns the digit, the regression heads the ink's bounding box (and, for ONet, five ink
  centroids as "landmarks");
- ``LRASPP``: torchvision's LR-ASPP segmentation head (a 1x1 conv-BN-ReLU branch gated by a
  global-pool-conv-sigmoid branch, bilinear upsampling to the low-level features, the two
  classifiers added, bilinear upsampling to the input) on a small MobileNetV3-style backbone,
  segmenting digits resized to 32 pixels into background and the ten digit classes;
- ``UNetDecoder``: a conv encoder and a ``ConvTranspose2d`` decoder with a concatenated and an
  added skip, denoising digits resized to 16 pixels.

Inputs are resized with bilinear interpolation (``F.interpolate``), so the images stay real
handwriting, only smoother.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

N_TRAIN = 1437  # the rest (360 images) is the test split


@dataclass(frozen=True)
class Digits:
    """Digit images in [-1, 1] at one resolution, with labels, split into train and test."""

    x_train: torch.Tensor  # [N, 1, S, S]
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits(size: int) -> Digits:
    from sklearn.datasets import load_digits as sk_digits

    d = sk_digits()
    x = torch.tensor(d.data, dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    if size != 8:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = x * 2.0 - 1.0
    y = torch.tensor(d.target)
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(x)))
    train, test = order[:N_TRAIN], order[N_TRAIN:]
    return Digits(x[train], y[train], x[test], y[test])


def ink(x: torch.Tensor) -> torch.Tensor:
    """Where the pen wrote: pixels above the background's mid level."""
    return x > 0.0


def ink_box(x: torch.Tensor) -> torch.Tensor:
    """[N, 4]: the ink's bounding box (x0, y0, x1, y1) in [0, 1] image coordinates."""
    m = ink(x[:, 0])
    s = x.shape[-1]
    rows, cols = m.any(2), m.any(1)
    idx = torch.arange(s, dtype=torch.float32)
    big = torch.tensor(float(s))

    def lo(a: torch.Tensor) -> torch.Tensor:
        return torch.where(a, idx, big).amin(1)

    def hi(a: torch.Tensor) -> torch.Tensor:
        return torch.where(a, idx, -1.0).amax(1)

    return torch.stack([lo(cols), lo(rows), hi(cols) + 1, hi(rows) + 1], 1) / s


def ink_landmarks(x: torch.Tensor) -> torch.Tensor:
    """[N, 10]: the ink's centroid in each quadrant and overall, (x, y) in [0, 1]: five points,
    where MTCNN's ONet regresses five facial landmarks."""
    w = ink(x[:, 0]).to(torch.float32) + 1e-3
    s = x.shape[-1]
    h = s // 2
    yy, xx = torch.meshgrid(torch.arange(s, dtype=torch.float32), torch.arange(s, dtype=torch.float32),
                            indexing="ij")
    pts = []
    for rs, cs in ((slice(0, h), slice(0, h)), (slice(0, h), slice(h, s)), (slice(h, s), slice(0, h)),
                   (slice(h, s), slice(h, s)), (slice(0, s), slice(0, s))):
        ww = w[:, rs, cs]
        tot = ww.sum((1, 2))
        pts += [(ww * xx[rs, cs]).sum((1, 2)) / tot / s, (ww * yy[rs, cs]).sum((1, 2)) / tot / s]
    return torch.stack(pts, 1)


# ---------------------------------------------------------------------------------- MTCNN


class PNet(nn.Module):
    """MTCNN's proposal network: fully convolutional, 12x12 in, 1x1 heads out."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, 3)
        self.prelu1 = nn.PReLU(10)
        self.pool1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(10, 16, 3)
        self.prelu2 = nn.PReLU(16)
        self.conv3 = nn.Conv2d(16, 32, 3)
        self.prelu3 = nn.PReLU(32)
        self.conv4_1 = nn.Conv2d(32, classes, 1)
        self.softmax4_1 = nn.Softmax(dim=1)
        self.conv4_2 = nn.Conv2d(32, 4, 1)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.prelu1(self.conv1(x)))
        return self.prelu3(self.conv3(self.prelu2(self.conv2(x))))

    def logits(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        t = self.trunk(x)
        return self.conv4_1(t).flatten(1), self.conv4_2(t).flatten(1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = self.trunk(x)
        return self.conv4_2(t), self.softmax4_1(self.conv4_1(t))


class RNet(nn.Module):
    """MTCNN's refinement network: 24x24 in."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 28, 3)
        self.prelu1 = nn.PReLU(28)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(28, 48, 3)
        self.prelu2 = nn.PReLU(48)
        self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv3 = nn.Conv2d(48, 64, 2)
        self.prelu3 = nn.PReLU(64)
        self.dense4 = nn.Linear(576, 128)
        self.prelu4 = nn.PReLU(128)
        self.dense5_1 = nn.Linear(128, classes)
        self.softmax5_1 = nn.Softmax(dim=1)
        self.dense5_2 = nn.Linear(128, 4)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.pool2(self.prelu2(self.conv2(x)))
        x = self.prelu3(self.conv3(x))
        x = x.permute(0, 3, 2, 1).contiguous()
        return self.prelu4(self.dense4(x.view(x.shape[0], -1)))

    def logits(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        t = self.trunk(x)
        return self.dense5_1(t), self.dense5_2(t)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = self.trunk(x)
        return self.dense5_2(t), self.softmax5_1(self.dense5_1(t))


class ONet(nn.Module):
    """MTCNN's output network: 48x48 in, box and landmark regression."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.prelu1 = nn.PReLU(32)
        self.pool1 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.prelu2 = nn.PReLU(64)
        self.pool2 = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.prelu3 = nn.PReLU(64)
        self.pool3 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.conv4 = nn.Conv2d(64, 128, 2)
        self.prelu4 = nn.PReLU(128)
        self.dense5 = nn.Linear(1152, 256)
        self.dropout = nn.Dropout(0.25)
        self.prelu5 = nn.PReLU(256)
        self.dense6_1 = nn.Linear(256, classes)
        self.softmax6_1 = nn.Softmax(dim=1)
        self.dense6_2 = nn.Linear(256, 4)
        self.dense6_3 = nn.Linear(256, 10)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool1(self.prelu1(self.conv1(x)))
        x = self.pool2(self.prelu2(self.conv2(x)))
        x = self.pool3(self.prelu3(self.conv3(x)))
        x = self.prelu4(self.conv4(x))
        x = x.permute(0, 3, 2, 1).contiguous()
        return self.prelu5(self.dropout(self.dense5(x.view(x.shape[0], -1))))

    def logits(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        t = self.trunk(x)
        return self.dense6_1(t), self.dense6_2(t), self.dense6_3(t)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        t = self.trunk(x)
        return self.dense6_2(t), self.dense6_3(t), self.softmax6_1(self.dense6_1(t))


# --------------------------------------------------------------------------------- LR-ASPP


def _cbn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: type[nn.Module] | None = None
         ) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class LRASPPHead(nn.Module):
    """torchvision's LRASPPHead, written out."""

    def __init__(self, low_ch: int, high_ch: int, classes: int, inter: int) -> None:
        super().__init__()
        self.cbr = nn.Sequential(nn.Conv2d(high_ch, inter, 1, bias=False), nn.BatchNorm2d(inter), nn.ReLU())
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(high_ch, inter, 1, bias=False), nn.Sigmoid())
        self.low_classifier = nn.Conv2d(low_ch, classes, 1)
        self.high_classifier = nn.Conv2d(inter, classes, 1)

    def forward(self, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
        x = self.cbr(high) * self.scale(high)
        x = F.interpolate(x, size=low.shape[-2:], mode="bilinear", align_corners=False)
        return self.low_classifier(low) + self.high_classifier(x)


class LRASPP(nn.Module):
    """A MobileNetV3-style backbone (stride-4 low-level and stride-8 high-level features) with
    LR-ASPP's head, upsampled to the input size (torchvision's ``LRASPP.forward``)."""

    def __init__(self, classes: int = 11) -> None:
        super().__init__()
        self.stem = _cbn(1, 16, 3, 2, act=nn.Hardswish)  # 1/2
        self.low = nn.Sequential(_cbn(16, 16, 3, 2, groups=16, act=nn.ReLU), _cbn(16, 24, 1))  # 1/4
        self.high = nn.Sequential(_cbn(24, 48, 1, act=nn.Hardswish), _cbn(48, 48, 3, 2, groups=48, act=nn.Hardswish),
                                  _cbn(48, 40, 1))  # 1/8
        self.head = LRASPPHead(24, 40, classes, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = self.low(self.stem(x))
        out = self.head(low, self.high(low))
        return F.interpolate(out, size=x.shape[-2:], mode="bilinear", align_corners=False)


def seg_target(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """[N, S, S] class per pixel: 0 background, 1 + digit on ink."""
    return torch.where(ink(x[:, 0]), (y + 1)[:, None, None], 0)


# --------------------------------------------------------------------- transposed-conv decoder


class UNetDecoder(nn.Module):
    """Conv encoder (16 -> 8 -> 4 pixels), ConvTranspose2d decoder back to 16 with a
    concatenated skip at 8 and an added one at 16."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1 = _cbn(1, 8, 3, act=nn.ReLU)
        self.enc2 = _cbn(8, 16, 3, 2, act=nn.ReLU)
        self.enc3 = _cbn(16, 32, 3, 2, act=nn.ReLU)
        self.up2 = nn.Sequential(nn.ConvTranspose2d(32, 16, 3, 2, 1, output_padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.fuse2 = _cbn(32, 16, 3, act=nn.ReLU)
        self.up1 = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, 2, 1), nn.ReLU())
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        d2 = self.fuse2(torch.cat([self.up2(self.enc3(e2)), e2], 1))
        return torch.tanh(self.out(self.up1(d2) + e1))


# ------------------------------------------------------------------------------- training


def noisy(x: torch.Tensor, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (x + 0.35 * torch.randn(x.shape, generator=g)).clamp(-1.0, 1.0)


@dataclass(frozen=True)
class Trained:
    model: nn.Module
    data: Digits
    inputs: Callable[[torch.Tensor, int], torch.Tensor]  # test images -> model inputs


def _fit(m: nn.Module, data: Digits, loss_fn: Callable[[nn.Module, torch.Tensor, torch.Tensor, int], torch.Tensor],
         epochs: int, lr: float, seed: int) -> None:
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    m.train()
    for step in range(epochs * (N_TRAIN // 64)):
        b = torch.randint(0, N_TRAIN, (64,), generator=g)
        loss = loss_fn(m, data.x_train[b], data.y_train[b], step)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()


def _mtcnn_loss(m: nn.Module, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:
    out = m.logits(x)  # type: ignore[operator]
    loss = F.cross_entropy(out[0], y) + 4.0 * F.mse_loss(out[1], ink_box(x))
    if len(out) > 2:
        loss = loss + 4.0 * F.mse_loss(out[2], ink_landmarks(x))
    return loss  # type: ignore[no-any-return]


def _seg_loss(m: nn.Module, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:
    return F.cross_entropy(m(x), seg_target(x, y))


def _denoise_loss(m: nn.Module, x: torch.Tensor, y: torch.Tensor, step: int) -> torch.Tensor:
    return F.mse_loss(m(noisy(x, step)), x)


MTCNN_SIZES = {"pnet": 12, "rnet": 24, "onet": 48}


def train(name: str) -> Trained:
    """One of "pnet", "rnet", "onet", "lraspp", "unet", trained on the digits' training split
    (deterministic: fixed seeds, call with torch's thread count pinned)."""
    torch.manual_seed(0)  # the initial weights
    if name in MTCNN_SIZES:
        data = load_digits(MTCNN_SIZES[name])
        m: nn.Module = {"pnet": PNet, "rnet": RNet, "onet": ONet}[name]()
        _fit(m, data, _mtcnn_loss, epochs={"pnet": 12, "rnet": 4, "onet": 5}[name], lr=3e-3, seed=0)
        return Trained(m, data, lambda x, seed: x)
    if name == "lraspp":
        data = load_digits(32)
        m = LRASPP()
        _fit(m, data, _seg_loss, epochs=10, lr=5e-3, seed=0)
        return Trained(m, data, lambda x, seed: x)
    if name == "unet":
        data = load_digits(16)
        m = UNetDecoder()
        _fit(m, data, _denoise_loss, epochs=4, lr=5e-3, seed=0)
        return Trained(m, data, lambda x, seed: noisy(x, 10_000 + seed))
    raise KeyError(name)
