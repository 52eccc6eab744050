"""A MobileNetV1-style person detector (0.25 width, 96x96 grayscale, 2 classes), initialised
deterministically; the sketch feeds a synthetic image and prints the person score."""

import torch


def _dw_block(cin: int, cout: int, stride: int) -> list[torch.nn.Module]:
    return [
        torch.nn.Conv2d(cin, cin, 3, stride=stride, padding=1, groups=cin, bias=False),
        torch.nn.BatchNorm2d(cin),
        torch.nn.ReLU6(),
        torch.nn.Conv2d(cin, cout, 1, bias=False),
        torch.nn.BatchNorm2d(cout),
        torch.nn.ReLU6(),
    ]


class MobileNetV1(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        cfg = [(8, 16, 1), (16, 32, 2), (32, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2),
               (128, 128, 1), (128, 256, 2)]
        layers: list[torch.nn.Module] = [
            torch.nn.Conv2d(1, 8, 3, stride=2, padding=1, bias=False),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU6(),
        ]
        for cin, cout, stride in cfg:
            layers += _dw_block(cin, cout, stride)
        self.features = torch.nn.Sequential(*layers)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.classifier = torch.nn.Linear(256, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def synthetic_image(shift: int = 0) -> torch.Tensor:
    """What the app builds too: a bright disc on a gradient, values in [-1, 1]."""
    y = torch.arange(96, dtype=torch.float32).reshape(96, 1)
    x = torch.arange(96, dtype=torch.float32).reshape(1, 96)
    disc = ((x - 48 - shift) ** 2 + (y - 40) ** 2 < 20 * 20).float()
    return (0.6 * disc + x / 96.0 * 0.4 - 0.5).clamp(-1, 1).reshape(1, 1, 96, 96) * 2 - 0.2


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return MobileNetV1().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (synthetic_image(),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    return [(synthetic_image(s),) for s in range(-16, 17, 4)]
