"""A small CNN trained on scikit-learn's bundled digits, and the files a build with validation
data takes: what docs/report.md's example report (and its screenshot) and the report.html
browser test are made from.

    python -m devkit.report_example OUT_DIR    writes OUT_DIR/digits.pt2, cal.npz and val.npz (with labels)

The net has what a report page should show: a batch norm the quantizer folds, a residual add,
depthwise and pointwise convolutions, and an operator ESP-NN does not run (flip) between two
ESP-NN partitions.  Training is seeded and single-threaded: the same weights on every run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

N_TRAIN = 1400  # the rest of the 1,797 images are held out: the validation data


class DigitsNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = nn.Conv2d(16, 16, 1)
        self.fc1 = nn.Linear(256, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.relu(self.bn(self.c1(x)))
        b = torch.relu(self.pw(self.dw(a))) + a
        h = torch.relu(self.fc1(nn.functional.max_pool2d(b, 2).flatten(1)))
        return self.fc2(torch.flip(h, [1]))  # flip: no ESP-NN lowering, runs on the CPU


def digits() -> tuple[torch.Tensor, np.ndarray]:
    """The 1,797 images as (n, 1, 8, 8) floats in [0, 1] and their labels, in a fixed shuffle."""
    from sklearn.datasets import load_digits

    d = load_digits()
    order = np.random.default_rng(0).permutation(len(d.target))
    x = torch.tensor(d.data[order], dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return x, d.target[order].astype(np.int64)


def trained(steps: int = 400) -> DigitsNet:
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        x, y = digits()
        torch.manual_seed(0)
        m = DigitsNet()
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        g = torch.Generator().manual_seed(0)
        labels = torch.from_numpy(y)
        for _ in range(steps):
            b = torch.randint(0, N_TRAIN, (64,), generator=g)
            loss = nn.functional.cross_entropy(m(x[b]), labels[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(old)
    return m.eval()


def write_build_inputs(out: Path, n_val: int = 200, n_cal: int = 64) -> Path:
    """OUT/digits.pt2 (the trained net, exported for one 1x1x8x8 image), cal.npz (training
    images) and val.npz (held-out images with labels); returns OUT."""
    out.mkdir(parents=True, exist_ok=True)
    x, y = digits()
    torch.export.save(torch.export.export(trained(), (x[:1],)), out / "digits.pt2")
    np.savez(out / "cal.npz", input0=x[:n_cal].unsqueeze(1).numpy())
    np.savez(out / "val.npz", input0=x[N_TRAIN:N_TRAIN + n_val].unsqueeze(1).numpy(),
             labels=y[N_TRAIN:N_TRAIN + n_val])
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m devkit.report_example OUT_DIR")
    print(write_build_inputs(Path(sys.argv[1])))
