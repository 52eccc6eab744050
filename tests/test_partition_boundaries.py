"""Partition boundaries: a model with nothing on the CPU is one partition unless an engine
limit splits it, and every partition says why it starts where it does (the report prints it).

The known case that used to split: EfficientNet-B0's and MNASNet's classifiers use
``nn.Dropout(inplace=True)``.  In eval mode ``dropout_`` vanishes in ``to_edge``, which left
the dequantize before it read directly by the quantize after it: a pair that belonged to no
operator, so one partition ended at the dequantize and the next began at the quantize (a
float round trip on the CPU in between).  Such a pair is now a unit of its own (nothing when
both sides share qparams, one requantising LUT otherwise), and the quantizer gives the
in-place dropouts their input's qparams as it does the others.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import executorch_espnn as ee
from devkit.lowering_helpers import check_numerics, lower
from executorch_espnn.payload.format import MAX_IO

qd = torch.ops.quantized_decomposed


class Classifier(nn.Module):
    """conv → global pool → flatten → dropout → linear: EfficientNet-B0's/MNASNet's head."""

    def __init__(self, dropout: nn.Module) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.drop = dropout
        self.fc = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(F.relu(self.conv(x)), 1).flatten(1)
        return self.fc(self.drop(x))


@pytest.mark.parametrize(
    "dropout",
    [nn.Dropout(0.2), nn.Dropout(0.2, inplace=True), nn.Dropout2d(0.2, inplace=True),
     nn.AlphaDropout(0.2, inplace=True), nn.FeatureAlphaDropout(0.2, inplace=True)],
    ids=["dropout", "dropout_inplace", "dropout2d_inplace", "alpha_inplace", "feature_alpha_inplace"],
)
def test_eval_dropout_in_place_or_not_is_one_partition(dropout: nn.Module) -> None:
    torch.manual_seed(0)
    low = lower(Classifier(dropout), (torch.randn(2, 3, 8, 8),))
    assert low.cpu() == [] and len(low.payloads) == 1, [d for d in low.cpu()]
    assert low.partitioner.partition_starts == ["at the model's inputs"]
    # the dropout's output shares the flatten's qparams: no requantisation was added
    assert "LUT" not in low.opcodes()
    check_numerics(low, max_lsb=1)


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, r: int) -> None:
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class MBConv(nn.Module):
    """EfficientNet-B0's block (torchvision's MBConv, written out): 1x1 expand, depthwise,
    squeeze-excite, 1x1 project, residual when the shape allows; MNASNet's without SE, ReLU."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int, se: bool) -> None:
        super().__init__()
        mid = cin * expand
        act: type[nn.Module] = nn.SiLU if se else nn.ReLU
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act(inplace=True),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid), act(inplace=True),
            SqueezeExcite(mid, max(1, cin // 4)) if se else nn.Identity(),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class TinyEfficientNet(nn.Module):
    """EfficientNet-B0's / MNASNet's layout at toy size: stem, MBConv stages, 1x1 head, global
    average, and torchvision's classifier ``Sequential(Dropout(p, inplace=True), Linear)``."""

    def __init__(self, se: bool) -> None:
        super().__init__()
        act: type[nn.Module] = nn.SiLU if se else nn.ReLU
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), act(inplace=True),
            MBConv(8, 8, 1, 1, se), MBConv(8, 12, 2, 4, se), MBConv(12, 12, 1, 4, se),
            nn.Conv2d(12, 32, 1, bias=False), nn.BatchNorm2d(32), act(inplace=True),
        )
        self.se = se
        self.classifier = nn.Sequential(nn.Dropout(0.2, inplace=True), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        # EfficientNet: AdaptiveAvgPool2d(1) + flatten; MNASNet: x.mean([2, 3])
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1) if self.se else x.mean([2, 3])
        return self.classifier(x)


@pytest.mark.parametrize("se", [True, False], ids=["efficientnet_style", "mnasnet_style"])
def test_an_efficientnet_or_mnasnet_style_classifier_is_one_partition(se: bool) -> None:
    torch.manual_seed(0)
    m = TinyEfficientNet(se).eval()
    g = torch.Generator().manual_seed(0)
    calib = [(torch.randn(2, 3, 32, 32, generator=g),) for _ in range(3)]
    rep = ee.lower(m, calib[0], calibration=calib).report
    assert rep.cpu_ops == [] and len(rep.partitions) == 1, [(e.operator, e.reason) for e in rep.cpu_ops]
    assert rep.partitions[0].starts == "at the model's inputs"
    assert "partition 0 starts at the model's inputs" in str(rep)


class Requantize(nn.Module):
    """A dequantize read straight by a quantize with other qparams (what an operator that
    vanished in to_edge leaves between two observers), written out as the converted graph."""

    def __init__(self, second: tuple[float, int]) -> None:
        super().__init__()
        self.second = second

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s2, z2 = self.second
        q = qd.quantize_per_tensor.default(x, 0.05, 3, -128, 127, torch.int8)
        y = qd.dequantize_per_tensor.default(q, 0.05, 3, -128, 127, torch.int8)
        q2 = qd.quantize_per_tensor.default(y, s2, z2, -128, 127, torch.int8)
        return qd.dequantize_per_tensor.default(q2, s2, z2, -128, 127, torch.int8)


def test_a_dequantize_read_by_a_quantize_is_one_requantising_lut() -> None:
    # (with equal qparams the pair is nothing at all: the in-place dropouts above)
    m = Requantize((0.031, -7))
    ex = (torch.linspace(-9, 9, 4 * 97).reshape(4, 97),)
    low = lower(m, ex, converted=m)
    assert low.cpu() == [] and len(low.payloads) == 1
    assert low.opcodes() == ["QUANTIZE", "LUT", "DEQUANTIZE"]
    from executorch_espnn.reference import run_delegate

    got = run_delegate(low.payloads[0], [ex[0].numpy()])[0]
    np.testing.assert_array_equal(got, m(*ex).numpy())  # the LUT is exactly dq → q


class ConvExpConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.exp(self.a(x) * 0.1))


def test_a_cpu_operator_between_partitions_is_named_as_the_boundary() -> None:
    torch.manual_seed(0)
    low = lower(ConvExpConv(), (torch.randn(1, 3, 8, 8),))
    starts = low.partitioner.partition_starts
    assert len(low.payloads) == 2 and len(starts) == 2
    assert starts[0] == "at the model's inputs"
    assert starts[1].startswith("after CPU operator aten.exp.default (aten_exp_default: ")
    assert "no ESP-NN lowering" in starts[1] and starts[1].endswith("(between partition 0 and this one)")


class AddChain(nn.Module):
    """x0 + x1 + ... + x{n-1}: one partition would need n delegate inputs."""

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        y = xs[0]
        for x in xs[1:]:
            y = y + x
        return y


def test_the_engine_input_limit_splits_and_the_report_names_it() -> None:
    n = MAX_IO + 8  # the engine's own limit (32 inputs per delegate), not a lowered option
    torch.manual_seed(0)
    ex = tuple(torch.randn(1, 8) for _ in range(n))
    lm = ee.lower(AddChain(), ex, calibration=[ex])
    rep = lm.report
    assert rep.cpu_ops == [] and len(rep.partitions) == 2
    first, second = rep.partitions
    assert first.starts == "at the model's inputs"
    assert second.starts.startswith("here: with aten.add.Tensor (")
    assert (f"the previous partition would exceed an engine limit: the partition needs {MAX_IO + 1} "
            f"inputs, the engine allows {MAX_IO} (limit max_io)") in second.starts
    text = str(rep)
    assert f"partition 1 starts {second.starts}" in text
    assert rep.to_dict()["partitions"][1]["starts"] == second.starts


def test_an_option_limit_split_names_the_option() -> None:
    torch.manual_seed(0)
    chain = nn.Sequential(*[nn.Conv2d(4, 4, 1) for _ in range(6)])
    low = lower(chain, (torch.randn(1, 4, 4, 4),), max_ops=4)
    starts = low.partitioner.partition_starts
    assert len(starts) == len(low.payloads) >= 2 and low.cpu() == []
    for s in starts[1:]:
        assert "would exceed an engine limit: the partition needs 5 ops, the engine allows 4 (limit max_ops)" in s
