"""hello_world's model: a tiny MLP (4 -> 16 -> 3) that tells whether four samples of a signal
are falling, flat or rising.  Trained by train(), deterministically, in about a second on synthetic
ramps (no downloads); the sketch feeds the three TEST_INPUTS below.
model() does not train: it loads the weights train() gave, shipped as data in mlp.weights.pt."""

from pathlib import Path

import torch

from executorch_espnn.modelfile import load_weights

LABELS = ("falling", "flat", "rising")
# the trained state_dict: data, written by train() (scripts/train_example_weights.py)
WEIGHTS = Path(__file__).with_suffix(".weights.pt")
REGENERATE = ".venv/bin/python scripts/train_example_weights.py"  # in the checkout

# What the sketch (src/main.cpp) feeds, in this order.
TEST_INPUTS = (
    ("rising ramp", (-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0)),
    ("flat line", (0.2, 0.2, 0.2, 0.2)),
    ("falling ramp", (0.9, 0.3, -0.3, -0.9)),
)
EXPECTED = ("rising", "flat", "falling")


class TinyMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def samples(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n noisy ramps offset + slope * t (t = -1, -1/3, 1/3, 1) and their class."""
    slope = torch.rand(n, 1, generator=g) * 2 - 1
    offset = torch.rand(n, 1, generator=g) - 0.5
    t = torch.linspace(-1.0, 1.0, 4).reshape(1, 4)
    x = offset + slope * t + 0.05 * torch.randn(n, 4, generator=g)
    y = torch.where(slope[:, 0] < -0.25, 0, torch.where(slope[:, 0] > 0.25, 2, 1))
    return x, y


def train() -> torch.nn.Module:
    """How WEIGHTS was made (scripts/train_example_weights.py runs this)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    net = TinyMLP()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run, so the same weights
    try:
        for _ in range(200):
            x, y = samples(g, 64)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return net.eval()


def model() -> torch.nn.Module:
    """The net with the weights train() gave once, shipped as data next to this file: float
    training rounds differently on other CPUs (vector widths), so training here could give
    other weights, so other scores than the README's."""
    return load_weights(TinyMLP(), WEIGHTS, regenerate=REGENERATE)


def test_input(index: int) -> torch.Tensor:
    return torch.tensor([TEST_INPUTS[index][1]], dtype=torch.float32)


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (test_input(0),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    x, _ = samples(torch.Generator().manual_seed(1), 64)
    return [(x[i : i + 1],) for i in range(64)]
