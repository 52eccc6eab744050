"""A small DS-CNN keyword spotter for a 49x10 MFCC-like input (the MLPerf Tiny KWS shape),
initialised deterministically.  Its weights are not trained: the example shows the pipeline,
the class it prints is whatever these weights say about the synthetic input."""

import math

import torch

LABELS = ("silence", "unknown", "yes", "no", "up", "down", "left", "right")


class DSCNN(torch.nn.Module):
    def __init__(self, channels: int = 32, classes: int = len(LABELS)) -> None:
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


def synthetic_mfcc(phase: float = 0.0) -> torch.Tensor:
    """The input the sketch builds too: a smooth 49x10 pattern in [-1, 1]."""
    t = torch.arange(49, dtype=torch.float32).reshape(49, 1)
    f = torch.arange(10, dtype=torch.float32).reshape(1, 10)
    return torch.sin(0.3 * t + 0.7 * f + phase).reshape(1, 1, 49, 10)


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    net = DSCNN().eval()
    with torch.no_grad():  # non-trivial batch-norm statistics, so folding is exercised
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return net


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (synthetic_mfcc(),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    return [(synthetic_mfcc(2 * math.pi * k / 16),) for k in range(16)]
