"""Agreement with PyTorch's quantized reference where ESP-NN's rounding differs from it.

PyTorch's ``convert_pt2e`` model computes every quantized operator as float32 ops between a
dequantize and a quantize (``quantize_per_tensor``: ``torch.round(x * (1/scale))``, half to
even).  ESP-NN's integer average pool rounds a window sum that ties away from zero; PyTorch
rounds the float32 average half to even, after the float rounding of each step (so a tie
may even go either way).  Averages whose windows can tie (an even divisor) therefore run on
AVG_POOL2D_FLOAT, the float32 arithmetic of PyTorch's avg_pool2d / adaptive_avg_pool2d /
mean kernel, and agree exactly; averages that cannot tie stay on ESP-NN's kernel.  The
other operators with a rounding step (QUANTIZE at the boundary, ADD, MEAN_HW, SOFTMAX) were
checked the same way and agree (docs/operators.md, "Rounding: agreement with PyTorch", has
the figures of benchmarks/rounding.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import executorch_espnn as ee
import executorch_espnn.ops.pool as pool_lowering
from devkit.lowering_helpers import Lowered, lower
from devkit.payload_factory import QParams as Q
from devkit.payload_factory import torch_dequantize, torch_quantize
from executorch_espnn.ops.pool import tie_free
from executorch_espnn.reference import run_delegate


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(*xs)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _lsb_off(low: Lowered, seeds: range) -> tuple[int, int]:
    """(elements that differ from the convert_pt2e module's, elements compared) over grid
    inputs: every int8 code equally likely, so a quarter of the 2x2 window sums tie."""
    off = total = 0
    s, _ = low.output_qparams()[0]
    for seed in seeds:
        xs = low.grid_inputs(seed)
        got = run_delegate(low.payloads[0], [x.numpy() for x in xs])[0]
        want = low.converted(*xs).numpy()
        off += int((np.round(got / s) != np.round(want / s)).sum())
        total += want.size
    return off, total


AVERAGES = [
    ("avg_pool2d_2x2", lambda x: F.avg_pool2d(x, 2), (2, 8, 12, 12), 0),
    ("avg_pool2d_3x3_pad_exclude", lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
     (1, 8, 9, 9), 0),
    ("avg_pool2d_ceil_include_pad", lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (1, 8, 8, 8), 0),
    ("avg_pool1d_4", lambda x: F.avg_pool1d(x, 4, 2), (2, 6, 22), 0),
    ("adaptive_15x12_to_5x3", lambda x: F.adaptive_avg_pool2d(x, (5, 3)), (2, 8, 15, 12), 1),
    ("global_average_4x4", lambda x: F.adaptive_avg_pool2d(x, 1), (4, 32, 4, 4), 2),
    ("mean_hw_6x8", lambda x: x.mean((2, 3), keepdim=True), (4, 16, 6, 8), 2),
]


@pytest.mark.parametrize(("fn", "shape", "torch_op"), [a[1:] for a in AVERAGES], ids=[a[0] for a in AVERAGES])
def test_averages_that_can_tie_agree_exactly_with_pytorch(
        fn: Callable[[torch.Tensor], torch.Tensor], shape: tuple[int, ...], torch_op: int,
        monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    ex = (torch.randn(shape),)
    low = lower(Fn(fn), ex)
    assert low.cpu() == [] and len(low.payloads) == 1
    (op,) = [o for o in low.decoded().ops if o.opcode.name.startswith("AVG_POOL2D")]
    assert op.opcode.name == "AVG_POOL2D_FLOAT" and op.params["torch_op"] == torch_op
    off, total = _lsb_off(low, range(3))
    assert off == 0, f"{off} of {total} elements differ from PyTorch's quantized model"
    # ESP-NN's integer average (ties away from zero) on the same inputs does differ: the
    # check above would have seen it
    monkeypatch.setattr(pool_lowering, "tie_free", lambda counts: True)
    esp = lower(Fn(fn), ex, converted=low.converted)
    assert "AVG_POOL2D_FLOAT" not in esp.opcodes()
    esp_off, _ = _lsb_off(esp, range(3))
    assert esp_off > total // 100, f"ESP-NN's rounding differs on {esp_off} of {total} only"


@pytest.mark.parametrize("k", [3, 5, 7])
def test_averages_that_cannot_tie_stay_on_esp_nn(k: int) -> None:
    torch.manual_seed(0)
    low = lower(Fn(lambda x: F.avg_pool2d(x, k)), (torch.randn(1, 8, 2 * k, 3 * k),))
    assert "AVG_POOL2D" in low.opcodes() and "AVG_POOL2D_FLOAT" not in low.opcodes()
    off, total = _lsb_off(low, range(3))
    assert off == 0, f"{off} of {total}"


def _integer_average(codes: np.ndarray, zp: int) -> np.ndarray:
    """ESP-NN's: (sum + n/2) / n (C division) of the centred codes, or (sum - n/2) / n."""
    k = codes.astype(np.int64) - zp
    n = k.shape[-1]
    s = k.sum(-1)
    avg = np.where(s > 0, np.abs(s + n // 2) // n * np.sign(s + n // 2),
                   np.abs(s - n // 2) // n * np.sign(s - n // 2))
    return np.clip(avg + zp, -128, 127)


@pytest.mark.parametrize("n", [1, 9, 25, 49, 81, 121, 169, 177])
def test_odd_counts_up_to_the_bound_round_alike_in_both_arithmetics(n: int) -> None:
    """The rule of ``tie_free``: with an odd count no sum ties and PyTorch's float32 error
    stays below the distance to a rounding boundary, so the integer average is PyTorch's."""
    assert tie_free({n})
    rng = np.random.default_rng(n)
    for _ in range(20):
        q = Q(float(np.float32(rng.uniform(1e-3, 0.2))), int(rng.integers(-128, 128)))
        codes = torch.from_numpy(rng.integers(-128, 128, (64, 1, 8, n)).astype(np.int8))
        x = torch_dequantize(codes, q)
        for y in (F.avg_pool2d(x, (1, n)), x.mean(-1, keepdim=True)):
            want = torch_quantize(y, q).numpy()[..., 0]
            np.testing.assert_array_equal(_integer_average(codes.numpy(), q.zero_point), want)


def test_even_counts_and_large_counts_are_not_tie_free() -> None:
    assert not tie_free({4}) and not tie_free({9, 6}) and not tie_free({179})
    # an even count does tie, and the two roundings then differ
    q = Q(0.05, 0)
    codes = torch.tensor([[[[1, 2, 3, 4]]]], dtype=torch.int8)  # sum 10: 2.5 -> 2 (even) or 3
    want = torch_quantize(F.avg_pool2d(torch_dequantize(codes, q), (1, 4)), q)
    assert int(want) == 2 and int(_integer_average(codes.numpy(), 0).item()) == 3


def test_quantize_at_the_boundary_is_pytorchs_quantize_per_tensor() -> None:
    """QUANTIZE multiplies by float32(1/scale), rounds half to even, adds the zero point:
    quantize_per_tensor computes 1/scale in double and rounds it to float32 for the multiply,
    which gives the same float for every float32 scale (one binade exhaustively: the
    mantissas repeat in every binade), and the ties round alike."""
    from executorch_espnn.payload.families.quantize.reference import quantize_f32

    mant = np.arange(1 << 23, dtype=np.uint32) | np.uint32((127 - 7) << 23)
    s = mant.view(np.float32)
    assert np.array_equal(np.float32(1) / s, (1.0 / s.astype(np.float64)).astype(np.float32))
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = Q(float(np.float32(rng.uniform(1e-4, 1.0))), int(rng.integers(-128, 128)))
        k = rng.integers(-300, 300, 4000)
        ties = ((k + 0.5) * q.scale).astype(np.float32)
        x = np.concatenate([ties, np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))])
        want = torch_quantize(torch.from_numpy(x), q).numpy()
        np.testing.assert_array_equal(quantize_f32(x, q.scale, q.zero_point), want)


OTHERS = [
    ("add", lambda a, b: a + b, [(2, 16, 8, 8), (2, 16, 8, 8)], "ADD"),
    ("add_relu", lambda a, b: F.relu(a + b), [(2, 16, 8, 8), (2, 16, 8, 8)], "ADD"),
    ("mean_last_dim_own_scale", lambda x: x.mean(-1), [(8, 64, 16)], "MEAN_HW"),
    ("softmax", lambda x: torch.softmax(x, -1), [(64, 10)], "SOFTMAX"),
]


@pytest.mark.parametrize(("fn", "shapes", "opcode"), [o[1:] for o in OTHERS], ids=[o[0] for o in OTHERS])
def test_other_rounding_ops_agree_with_pytorch(
        fn: Callable[..., torch.Tensor], shapes: list[tuple[int, ...]], opcode: str) -> None:
    """ESP-NN's fixed-point ADD, the integer MEAN_HW and TFLite's softmax against PyTorch's
    float32 ops (random scales, every int8 code): at most 1 LSB, and only where the exact
    value is within about 1e-7 LSB of a rounding boundary and the fixed-point approximation
    lands on the other side of it than float32 does.  benchmarks/rounding.py measures 3 to
    17 such elements per million (docs/operators.md, "Rounding"); here, none or a few in 24,576."""
    off = total = 0
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        ex = tuple(torch.randn(s, generator=g) * (1 + i) for i, s in enumerate(shapes))
        calib = [ex, *(tuple(torch.randn(s, generator=g) * (1 + i) for i, s in enumerate(shapes))
                       for _ in range(3))]
        low = lower(Fn(fn), ex, calib=calib)
        assert low.cpu() == [] and opcode in low.opcodes()
        o, t = _lsb_off(low, range(2))
        off, total = off + o, total + t
        s, _ = low.output_qparams()[0]
        xs = low.grid_inputs(7)
        got = run_delegate(low.payloads[0], [x.numpy() for x in xs])[0]
        assert np.abs(np.round(got / s) - np.round(low.converted(*xs).numpy() / s)).max() <= 1
    assert off <= total // 10_000, f"{off} of {total} elements differ"


def test_the_report_names_the_float_averages() -> None:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(8, 8, 3),
                      nn.ReLU(), nn.AvgPool2d(3), nn.Flatten(), nn.Linear(8, 4))
    ex = (torch.randn(2, 1, 10, 10),)
    rep = ee.lower(m, ex, calibration=[ex]).report
    (a,) = rep.float_averages  # the 2x2 pool ties, the 3x3 one (odd divisor) cannot
    assert (a.layer, a.shape, a.adds) == ("avg pool 2x2/2", "10x10x8 -> 5x5x8", 2 * 8 * 100)
    text = str(rep)
    assert "Averages on the engine's float32 kernel instead of ESP-NN's" in text
    assert "avg pool 2x2/2" in text
    assert rep.to_dict()["float_averages"][0]["layer"] == "avg pool 2x2/2"
