"""keyword_spotting's model: a small DS-CNN keyword spotter on a 49x10 MFCC-like frame (the
MLPerf Tiny KWS input shape).  Trained by train(), deterministically, in a few seconds on synthetic
"MFCC" classes: each keyword is a pattern sin(2 pi c t / 49 + phase) * cos(pi m (f + 0.5) / 10)
with its own (c, m); "unknown" uses cepstral modes no keyword uses; "silence" is noise only.
No downloads.  The sketch builds keyword_frame(label) for the TEST_LABELS and prints the top
class, which is the keyword it built.
model() does not train: it loads the weights train() gave, shipped as data in ds_cnn.weights.pt."""

import math
from pathlib import Path

import torch

from executorch_espnn.modelfile import load_weights

LABELS = ("silence", "unknown", "yes", "no", "up", "down", "left", "right")
# the trained state_dict: data, written by train() (scripts/train_example_weights.py)
WEIGHTS = Path(__file__).with_suffix(".weights.pt")
REGENERATE = ".venv/bin/python scripts/train_example_weights.py"  # in the checkout
FRAMES, COEFFS = 49, 10
# keyword label -> (cycles over the 49 frames, cepstral mode); the sketch has the same table
PATTERNS = {2: (1.0, 1), 3: (2.0, 1), 4: (1.0, 3), 5: (3.0, 2), 6: (2.0, 4), 7: (4.0, 3)}
TEST_LABELS = (2, 5, 6, 0)  # yes, down, left, silence: what the sketch feeds, in this order


class DSCNN(torch.nn.Module):
    def __init__(self, channels: int = 24, classes: int = len(LABELS)) -> None:
        super().__init__()
        layers: list[torch.nn.Module] = [
            torch.nn.Conv2d(1, channels, (10, 4), stride=(2, 2), padding=(5, 1)),
            torch.nn.BatchNorm2d(channels),
            torch.nn.ReLU(),
        ]
        for _ in range(3):
            layers += [
                torch.nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
                torch.nn.BatchNorm2d(channels),
                torch.nn.ReLU(),
                torch.nn.Conv2d(channels, channels, 1),
                torch.nn.BatchNorm2d(channels),
                torch.nn.ReLU(),
            ]
        self.features = torch.nn.Sequential(*layers)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.classifier = torch.nn.Linear(channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def _pattern(cycles: float, mode: int, phase: float, amp: float) -> torch.Tensor:
    t = torch.arange(FRAMES, dtype=torch.float32).reshape(FRAMES, 1)
    f = torch.arange(COEFFS, dtype=torch.float32).reshape(1, COEFFS)
    x = torch.sin(2 * math.pi * cycles * t / FRAMES + phase) * torch.cos(math.pi * mode * (f + 0.5) / COEFFS)
    return (amp * x).reshape(1, 1, FRAMES, COEFFS)


def keyword_frame(label: int, phase: float = 0.0, amp: float = 0.8) -> torch.Tensor:
    """The clean frame of a keyword (what the sketch feeds); silence is all zeros."""
    if label == 0:
        return torch.zeros(1, 1, FRAMES, COEFFS)
    if label not in PATTERNS:
        raise ValueError(f"label {label} ({LABELS[label]}) has no fixed pattern")
    cycles, mode = PATTERNS[label]
    return _pattern(cycles, mode, phase, amp)


def _noisy_batch(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.randint(0, len(LABELS), (n,), generator=g)
    frames = []
    for label in labels.tolist():
        phase = float(torch.rand(1, generator=g)) * 2 * math.pi
        amp = 0.5 + 0.5 * float(torch.rand(1, generator=g))
        if label == 1:  # unknown: a cepstral mode no keyword uses
            cycles = 1.0 + 4.0 * float(torch.rand(1, generator=g))
            mode = int(torch.randint(5, COEFFS, (1,), generator=g))
            x = _pattern(cycles, mode, phase, amp)
        else:
            x = keyword_frame(label, phase, amp)
        frames.append(x + 0.1 * torch.randn(x.shape, generator=g))
    return torch.cat(frames), labels


def train() -> torch.nn.Module:
    """How WEIGHTS was made (scripts/train_example_weights.py runs this)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    net = DSCNN()
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run, so the same weights
    try:
        for _ in range(120):
            x, y = _noisy_batch(g, 32)
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
    return load_weights(DSCNN(), WEIGHTS, regenerate=REGENERATE)


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (keyword_frame(TEST_LABELS[0]),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    x, _ = _noisy_batch(torch.Generator().manual_seed(1), 32)
    return [(x[i : i + 1],) for i in range(x.shape[0])]
