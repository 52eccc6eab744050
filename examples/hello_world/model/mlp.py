"""A tiny MLP (4 -> 16 -> 3), initialised deterministically: enough to see a model run."""

import torch


class TinyMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return TinyMLP().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.linspace(-1.0, 1.0, 4).reshape(1, 4),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    g = torch.Generator().manual_seed(1)
    return [(torch.rand(1, 4, generator=g) * 2 - 1,) for _ in range(32)]
