"""person_detection_idf's model: a MobileNetV1-style person detector (0.25 width, 96x96
grayscale, classes no person / person).  Trained by train(), deterministically, in a few seconds on
synthetic scenes (no downloads): a lit gradient background, with a person drawn as a head above
a body, or without one (sometimes a bright bar as a distractor).  The app feeds scene(True) and
scene(False) and logs the scores.
model() does not train: it loads the weights train() gave, shipped as data in mobilenet.weights.pt."""

from pathlib import Path

import torch

from executorch_espnn.modelfile import load_weights

SIZE = 96
LABELS = ("no person", "person")
# the trained state_dict: data, written by train() (scripts/train_example_weights.py)
WEIGHTS = Path(__file__).with_suffix(".weights.pt")
REGENERATE = ".venv/bin/python scripts/train_example_weights.py"  # in the checkout
TEST_SCENES = (True, False)  # what the app feeds, in this order


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
        self.classifier = torch.nn.Linear(256, len(LABELS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def scene(person: bool, cx: float = 48.0, cy: float = 52.0, light: float = 0.0,
          tilt: float = 0.0) -> torch.Tensor:
    """A 96x96 scene in [-1, 1]: a gradient background; with a person, a head (a disc of
    radius 9) above a body (an ellipse of half-axes 14 x 22) centred at (cx, cy), brighter by
    0.9.  The app draws scene(True) and scene(False) with the defaults."""
    y = torch.arange(SIZE, dtype=torch.float32).reshape(SIZE, 1)
    x = torch.arange(SIZE, dtype=torch.float32).reshape(1, SIZE)
    img = -0.4 + light + 0.3 * (x - 48.0) / 96.0 + tilt * (y - 48.0) / 96.0
    if person:
        head = (x - cx) ** 2 + (y - (cy - 26.0)) ** 2 < 81.0
        body = ((x - cx) / 14.0) ** 2 + ((y - cy) / 22.0) ** 2 < 1.0
        img = torch.where(head | body, img + 0.9, img)
    return img.clamp(-1.0, 1.0).reshape(1, 1, SIZE, SIZE)


def _noisy_batch(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    labels = torch.randint(0, 2, (n,), generator=g)
    images = []
    for label in labels.tolist():
        r = torch.rand(5, generator=g)
        img = scene(bool(label), 30 + 36 * float(r[0]), 44 + 16 * float(r[1]),
                    -0.3 + 0.6 * float(r[2]), -0.4 + 0.8 * float(r[3]))
        if not label and float(r[4]) < 0.5:  # a distractor: a bright horizontal bar
            row = int(torch.randint(10, 80, (1,), generator=g))
            img = img.clone()
            img[..., row:row + 8, 10:86] += 0.9
            img = img.clamp(-1.0, 1.0)
        images.append(img + 0.05 * torch.randn(img.shape, generator=g))
    return torch.cat(images), labels


def train() -> torch.nn.Module:
    """How WEIGHTS was made (scripts/train_example_weights.py runs this)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    net = MobileNetV1()
    opt = torch.optim.Adam(net.parameters(), lr=0.005)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run, so the same weights
    try:
        for _ in range(40):
            x, y = _noisy_batch(g, 16)
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        # A few dozen steps leave the batch-norm running statistics behind the weights:
        # recompute them as plain averages over fresh batches, for eval mode.
        with torch.no_grad():
            for m in net.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.reset_running_stats()
                    m.momentum = None
            for _ in range(4):
                net(_noisy_batch(g, 16)[0])
    finally:
        torch.set_num_threads(threads)
    return net.eval()


def model() -> torch.nn.Module:
    """The net with the weights train() gave once, shipped as data next to this file: float
    training rounds differently on other CPUs (vector widths), so training here could give
    other weights, so other scores than the README's."""
    return load_weights(MobileNetV1(), WEIGHTS, regenerate=REGENERATE)


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (scene(TEST_SCENES[0]),)


def calibration_data() -> list[tuple[torch.Tensor, ...]]:
    x, _ = _noisy_batch(torch.Generator().manual_seed(1), 16)
    return [(x[i : i + 1],) for i in range(x.shape[0])]
