"""Trained models on real data agree with PyTorch's quantized model, not only random ones.

Small CNNs trained in seconds on scikit-learn's bundled digits (1,797 real 8x8 handwritten
digits shipped with scikit-learn, no download), quantized with EspNNQuantizer (PT2E), lowered
for the ESP32-S3 and run by the bit-exact reference of the delegate (what the chip computes).
The logits are compared with the ``convert_pt2e`` model's on the 360 held-out images, and the
C engine's with the reference's (bit for bit).

The depthwise-separable CNN with 2x2 average pooling is the case issue 17 measured: with
ESP-NN's average pool, a quarter of this data's 2x2 windows tie, ESP-NN rounds them away from
zero, PyTorch to even, and the next depthwise convolution amplifies the 1-LSB differences
(the issue measured 77.7 % of the logits within 1 LSB and 2 of 360 predictions flipped;
benchmarks/rounding.py, with this training: 77.53 % and 1).  On AVG_POOL2D_FLOAT
(tests/test_rounding.py) it agrees exactly; the plain CNN and the MLP (no average pool) for contrast.
The GRU and the LSTM read each image's rows as 8 time steps (issue 25): unrolled by the
quantizer, every step on the delegate.  Two attention models (issue 25) too: a transformer
encoder block over the 8 rows as tokens (softmax attention, layer norms, GELU MLP, the token
mean of [N, T, C]) and EfficientViT-B's ReLU linear attention (LiteMLA, its division by a
tensor and the matmuls around it) over the 64 pixels.
Deterministic: fixed seeds and one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
from torch import nn

from devkit.digits import MODELS, Digits, load_digits_split, train
from devkit.lowering_helpers import Lowered, lower, quantize_module
from executorch_espnn.reference import run_delegate
from tests import engine_helpers as eh
from tests.arch_blocks import LiteMLA
from tests.test_symmetric_matmul import matmul_offsets, matmul_zero_points


class RowTransformer(nn.Module):
    """One pre-norm transformer encoder block over the image's 8 rows as tokens of 8 pixels,
    then the mean over the tokens and a classifier."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.dh = heads, dim // heads
        self.embed = nn.Linear(8, dim)
        self.pos = nn.Parameter(torch.zeros(1, 8, dim))
        self.norm1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.fc = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.embed(x[:, 0]) + self.pos  # [N, 1, 8, 8] -> [N, T = 8 rows, dim]
        n, steps, c = t.shape
        q, k, v = self.project(self.norm1(t))
        a = torch.softmax(q @ k.transpose(-1, -2) * self.dh ** -0.5, dim=-1)
        t = t + self.proj((a @ v).transpose(1, 2).reshape(n, steps, c))
        t = t + self.mlp(self.norm2(t))
        return self.fc(t.mean(1))

    def project(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v as [N, heads, T, dh], from the packed in-projection."""
        n, steps, _ = h.shape
        q, k, v = self.qkv(h).reshape(n, steps, 3, self.heads, self.dh).permute(2, 0, 3, 1, 4)
        return q, k, v


class RowTransformerHead64(RowTransformer):
    """RowTransformer with one head of dim 64 and q, k, v from their own projections: q @ k^T
    reduces over K = 64, where the quantizer makes both of its operands symmetric (ESP-NN's S3
    s8 path; docs/operators.md "Symmetric matmul operands"); a packed q/k/v projection would
    stay affine, its v being read by p @ v."""

    def __init__(self) -> None:
        super().__init__(dim=64, heads=1)
        del self.qkv
        self.q, self.k, self.v = nn.Linear(64, 64), nn.Linear(64, 64), nn.Linear(64, 64)

    def project(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        n, steps, _ = h.shape
        q, k, v = (f(h).reshape(n, steps, self.heads, self.dh).transpose(1, 2) for f in (self.q, self.k, self.v))
        return q, k, v


class PixelLinearAttention(nn.Module):
    """A 3x3 stem to 16 channels, one EfficientViT-B context block (LiteMLA: ReLU linear
    attention over the 64 pixels) as a residual, the spatial mean and a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU())
        self.attn = LiteMLA(16, dim=8)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return self.fc((x + self.attn(x)).mean([2, 3]))


# (name, model, training steps, an opcode the lowering must use, slow to lower), as devkit.digits
ATTENTION_MODELS: list[tuple[str, Callable[[], nn.Module], int, str | None, bool]] = [
    ("row_transformer", RowTransformer, 1500, "SOFTMAX", False),
    ("pixel_linear_attention", PixelLinearAttention, 300, "DIV", False),
]


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # the same float sums on every run: the same weights and logits
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def digits() -> Digits:
    return load_digits_split()


@pytest.mark.parametrize(("make", "steps", "opcode"), [
    pytest.param(make, steps, opcode, id=name, marks=[pytest.mark.slow] if slow else [])
    for name, make, steps, opcode, slow in MODELS + ATTENTION_MODELS
])
def test_trained_on_digits_agrees_with_pytorchs_quantized_model(
        one_thread: None, digits: Digits, make: Callable[[], nn.Module], steps: int,
        opcode: str | None) -> None:
    m = train(make, digits, steps)
    with torch.no_grad():
        float_acc = float((m(digits.x_test).argmax(1) == digits.y_test).float().mean())
    assert float_acc >= 0.95, f"training did not work ({float_acc:.3f})"

    ex = (digits.x_test,)
    converted = quantize_module(m, ex, calib=[(digits.x_train[:360],)])
    low = lower(m, ex, converted=converted, target="esp32s3")
    assert low.cpu() == [] and len(low.payloads) == 1, [(d.op, d.reason) for d in low.cpu()]
    if opcode is not None:
        assert opcode in low.opcodes()

    got = run_delegate(low.payloads[0], [digits.x_test.numpy()])[0]
    with torch.no_grad():
        want = converted(digits.x_test).numpy()
    (s, _), = low.output_qparams()
    lsb = np.abs(np.round(got / s) - np.round(want / s))
    within = float((lsb <= 1).mean())
    assert within >= 0.999, f"{within:.4f} of the logits within 1 LSB (worst {int(lsb.max())} LSB)"
    flipped = int((got.argmax(1) != want.argmax(1)).sum())
    assert flipped == 0, f"{flipped} of {len(got)} predictions differ from PyTorch's quantized model"
    int8_acc = float((got.argmax(1) == digits.y_test.numpy()).mean())
    assert int8_acc >= float_acc - 0.01, f"int8 {int8_acc:.4f} vs float {float_acc:.4f}"

    # host == chip: the C engine computes the reference's bytes
    exe = eh.build(eh.HOST)
    r = eh.run(exe, eh.HOST, low.payloads[0], [digits.x_test.numpy()], 1)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.frombuffer(r.outputs[0], dtype=np.float32).reshape(got.shape), got)



def _head64_run(digits: Digits, m: nn.Module) -> tuple[Lowered, np.ndarray, np.ndarray]:
    """``m`` quantized and lowered in batches of 90 (one [360, 8, 64] tensor would exceed
    ESP-NN's uint16 sizes and stay on the CPU): the lowering, the delegate's logits and
    convert_pt2e's."""
    batch = 90
    chunks = [digits.x_test[i:i + batch] for i in range(0, len(digits.x_test), batch)]
    converted = quantize_module(m, (chunks[0],), calib=[(digits.x_train[i:i + batch],) for i in range(0, 360, batch)])
    low = lower(m, (chunks[0],), converted=converted, target="esp32s3")
    assert low.cpu() == [] and len(low.payloads) == 1, [(d.op, d.reason) for d in low.cpu()]
    got = np.concatenate([run_delegate(low.payloads[0], [c.numpy()])[0] for c in chunks])
    with torch.no_grad():
        want = np.concatenate([converted(c).numpy() for c in chunks])
    return low, got, want


def _agreement(low: Lowered, got: np.ndarray, want: np.ndarray, digits: Digits) -> tuple[float, int, float]:
    """The share of logits within 1 LSB of convert_pt2e, the predictions that differ, the
    delegate's accuracy."""
    (s, _), = low.output_qparams()
    lsb = np.abs(np.round(got / s) - np.round(want / s))
    flipped = int((got.argmax(1) != want.argmax(1)).sum())
    return float((lsb <= 1).mean()), flipped, float((got.argmax(1) == digits.y_test.numpy()).mean())


@pytest.mark.slow
def test_trained_head_dim_64_attention_keeps_its_accuracy_with_symmetric_q_and_k(
        one_thread: None, digits: Digits, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the symmetric-matmul rule fires (q @ k^T over a head dim of 64) on a trained model:
    q and k with zero point 0 in convert_pt2e's graph and the payload, the logits within 1 LSB
    of convert_pt2e, no flipped prediction, int8 accuracy within a point of float and of the
    same weights quantized with the rule off (q, k affine), and the C engine bit-exact.
    Measured Dec 2026: float 0.9639; symmetric: convert_pt2e and delegate 0.9667, 100 % within
    1 LSB; affine: 0.9639 / 0.9639, 100 %."""
    import executorch_espnn.quantizer.espnn_quantizer as espnn_quantizer

    m = train(RowTransformerHead64, digits, 1500)
    with torch.no_grad():
        float_acc = float((m(digits.x_test).argmax(1) == digits.y_test).float().mean())
    assert float_acc >= 0.95, f"training did not work ({float_acc:.3f})"

    low, got, want = _head64_run(digits, m)
    qk, pv = matmul_offsets(low)
    assert matmul_zero_points(low)[0] == (0, 0) and qk == (0, 0), "the symmetric rule did not fire on q @ k^T"
    assert pv[0] != 0, "p @ v's a is the softmax output, whose zero point is fixed"
    within, flipped, int8_acc = _agreement(low, got, want, digits)
    assert within >= 0.99 and flipped == 0, (within, flipped)
    assert int8_acc >= float_acc - 0.01, f"int8 {int8_acc:.4f} vs float {float_acc:.4f}"

    monkeypatch.setattr(espnn_quantizer, "symmetric_matmul_operands", lambda model: None)
    affine_low, affine_got, affine_want = _head64_run(digits, m)
    assert matmul_offsets(affine_low)[0] != (0, 0)
    a_within, a_flipped, affine_acc = _agreement(affine_low, affine_got, affine_want, digits)
    assert a_within >= 0.99 and a_flipped == 0, (a_within, a_flipped)
    assert int8_acc >= affine_acc - 0.01, f"symmetric q, k {int8_acc:.4f} vs affine {affine_acc:.4f}"

    # host == chip: the C engine computes the reference's bytes
    exe = eh.build(eh.HOST)
    first = digits.x_test[:90].numpy()
    r = eh.run(exe, eh.HOST, low.payloads[0], [first], 1)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.frombuffer(r.outputs[0], dtype=np.float32).reshape(90, -1), got[:90])
