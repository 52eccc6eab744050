"""Small models trained in seconds on scikit-learn's bundled digits (1,797 real 8x8 handwritten
digits shipped with scikit-learn, no download): the data split, the architectures and the
deterministic training that tests/test_trained_digits.py and benchmarks/rounding.py share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Digits:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits_split() -> Digits:
    """scikit-learn's digits as [N, 1, 8, 8] in [0, 1]: 1,437 for training, 360 held out."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32)[:, None] / 16.0  # [1797, 1, 8, 8] in [0, 1]
    y = torch.tensor(d.target)
    order = torch.from_numpy(np.random.default_rng(0).permutation(len(x)))
    train, test = order[:1437], order[1437:]
    return Digits(x[train], y[train], x[test], y[test])


def _separable(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, padding=1, groups=cin), nn.BatchNorm2d(cin), nn.ReLU(),
        nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU(),
    )


def ds_cnn() -> nn.Module:
    """Depthwise-separable CNN with 2x2 average pooling: 8x8 -> 4x4 -> 2x2 -> global mean."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AvgPool2d(2),
        _separable(16, 32), nn.AvgPool2d(2), _separable(32, 64),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )


def plain_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))


class RowSequence(nn.Module):
    """A recurrent classifier reading each image as a sequence: its 8 rows are 8 time steps of
    8 pixels; the last step's hidden state feeds the classifier."""

    def __init__(self, kind: str, hidden: int = 32, layers: int = 1) -> None:
        super().__init__()
        self.rnn: nn.GRU | nn.LSTM = (nn.GRU if kind == "gru" else nn.LSTM)(
            8, hidden, num_layers=layers, batch_first=True)
        self.fc = nn.Linear(hidden, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(x[:, 0])  # [N, 1, 8, 8] -> [N, T = 8 rows, 8 pixels]
        return self.fc(y[:, -1])


def gru_rows() -> nn.Module:
    return RowSequence("gru")


def lstm_rows() -> nn.Module:
    return RowSequence("lstm")


# (name, model, training steps, an opcode the lowering must use, slow to lower)
MODELS: list[tuple[str, Callable[[], nn.Module], int, str | None, bool]] = [
    ("ds_cnn_avgpool", ds_cnn, 400, "AVG_POOL2D_FLOAT", False),
    ("plain_cnn", plain_cnn, 300, None, False),
    ("mlp", mlp, 300, None, False),
    # the unrolled 8 steps are ~1,000 graph nodes: to_edge alone takes about two minutes
    ("gru_rows", gru_rows, 400, None, True),
    ("lstm_rows", lstm_rows, 800, None, True),
]


def train(make: Callable[[], nn.Module], data: Digits, steps: int) -> nn.Module:
    torch.manual_seed(0)
    m = make()
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    # The rate anneals to 0: the weights settle in the minimum they reached.  At a constant
    # 0.01 the last steps still jump, and another CPU's float sums (another vector width) ended
    # the depthwise CNN at 0.939 accuracy on the test split where this machine saw 0.975.
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        b = torch.randint(0, len(data.x_train), (64,), generator=g)
        loss = F.cross_entropy(m(data.x_train[b]), data.y_train[b])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return m.eval()
