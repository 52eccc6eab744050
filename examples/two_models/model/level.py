"""two_models' second model: a tiny MLP (4 -> 8 -> 2) that tells whether four samples of a
signal are quiet or loud (mean absolute value under or over 0.5).  Trained by train(),
deterministically, in well under a second; the first model is hello_world's trend MLP.
model() does not train: it loads the weights train() gave, shipped as data in level.weights.pt."""

from pathlib import Path

import torch

from executorch_espnn.modelfile import load_weights

LABELS = ("quiet", "loud")
# the trained state_dict: data, written by train() (scripts/train_example_weights.py)
WEIGHTS = Path(__file__).with_suffix(".weights.pt")
REGENERATE = ".venv/bin/python scripts/train_example_weights.py"  # in the checkout

# What the sketch (src/main.cpp) feeds both models, in this order.
TEST_INPUTS = (
    ("rising ramp", (-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0)),
    ("flat line", (0.2, 0.2, 0.2, 0.2)),
    ("falling ramp", (0.9, 0.3, -0.3, -0.9)),
)
EXPECTED = ("loud", "quiet", "loud")


class LevelMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def samples(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n random signals of 4 samples and their class (mean |x| over 0.5: loud)."""
    x = (torch.rand(n, 4, generator=g) * 2 - 1) * (torch.rand(n, 1, generator=g) * 1.2)
    y = (x.abs().mean(dim=1) > 0.5).long()
    return x, y


def train() -> torch.nn.Module:
    """How WEIGHTS was made (scripts/train_example_weights.py runs this)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    net = LevelMLP()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run, so the same weights
    try:
        for _ in range(300):
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
    return load_weights(LevelMLP(), WEIGHTS, regenerate=REGENERATE)


def test_input(index: int) -> torch.Tensor:
    return torch.tensor([TEST_INPUTS[index][1]], dtype=torch.float32)


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (test_input(0),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    x, _ = samples(torch.Generator().manual_seed(1), 64)
    return [(x[i : i + 1],) for i in range(64)]
