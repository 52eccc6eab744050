"""Both operands of an activation x activation matmul are quantized symmetrically (zero point
0: ESP-NN's S3 s8 MAC path with no offsets) where that path is faster (K >= 64, aligned rows)
and sound (quantizer/annotators/symmetric.py):

- the zero points are 0 in PyTorch's quantized model (convert_pt2e) and in the payload
  (BATCH_MATMUL's ``a_offset``/``b_offset``), and the delegate stays within 1 LSB of convert_pt2e;
- a class only such matmuls read (q and k of one projection) turns symmetric as a whole, with no
  requantisation; a class another operator reads too, or another matmul reads as its ``b``
  with an affine ``a`` (v of a packed q/k/v projection, read by ``p @ v``), stays affine;
- a non-negative operand (after a ReLU) and a reduction too short for the s8 path to pay
  (K = 32) keep both operands affine.
"""

from __future__ import annotations

import torch
from torch import nn

from devkit.lowering_helpers import Lowered, check_numerics, lower
from executorch_espnn.payload import Opcode

QUANTIZE = torch.ops.quantized_decomposed.quantize_per_tensor.default
MATMUL = torch.ops.aten.matmul.default


class TwoProjections(nn.Module):
    """``x @ y^T`` of two projections: ``y`` (the b operand) is read by the matmul only."""

    def __init__(self, d: int = 64, relu_b: bool = False, shift: float = 0.0) -> None:
        super().__init__()
        self.pa, self.pb, self.relu_b, self.shift = nn.Linear(d, d), nn.Linear(d, d), relu_b, shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pb(x) + self.shift if self.shift else self.pb(x)
        if self.relu_b:
            y = torch.relu(y)
        return self.pa(x) @ y.transpose(-1, -2)


class SharedProjection(nn.Module):
    """q and k of one projection, skewed by ``shift``: ``q @ k^T`` over a head dim of 64, then
    ``softmax(s) @ v``; v from the same projection (attention's packed in-projection) or its own
    with ``shared_v`` False; with ``mean_reader`` ``k.mean`` reads the projection's values too."""

    def __init__(self, d: int = 64, shift: float = 0.0, shared_v: bool = True,
                 mean_reader: bool = False) -> None:
        super().__init__()
        self.d, self.shift, self.shared_v, self.mean_reader = d, shift, shared_v, mean_reader
        self.proj = nn.Linear(d, (3 if shared_v else 2) * d)
        self.v = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        parts = (y + self.shift if self.shift else y).split(self.d, dim=-1)
        q, k = parts[0], parts[1]
        v = parts[2] if self.shared_v else self.v(x)
        s = q @ k.transpose(-1, -2)
        if self.mean_reader:
            s = s + k.mean(-1, keepdim=True)
        return torch.softmax(s, dim=-1) @ v


def matmul_zero_points(low: Lowered) -> list[tuple[int, int]]:
    """convert_pt2e's (a, b) zero points of each matmul: those of the dequantizes it reads."""
    out = []
    for n in low.converted.graph.nodes:
        if n.op == "call_function" and n.target == MATMUL:
            zps = []
            for dq in n.args[:2]:
                while dq.target != torch.ops.quantized_decomposed.dequantize_per_tensor.default:
                    dq = dq.args[0]  # through the transpose
                zps.append(int(dq.args[2]))
            out.append((zps[0], zps[1]))
    return out


def matmul_offsets(low: Lowered) -> list[tuple[int, int]]:
    return [(op.params["a_offset"], op.params["b_offset"]) for op in low.decoded().ops
            if op.opcode == Opcode.BATCH_MATMUL]


def _lower(m: nn.Module, *shape: int) -> Lowered:
    torch.manual_seed(0)
    return lower(m.eval(), (torch.randn(*shape),), target="esp32s3")


def test_b_read_only_by_the_matmul_is_symmetric_in_pt2e_and_the_payload() -> None:
    low = _lower(TwoProjections(), 1, 20, 64)
    assert matmul_zero_points(low) == [(0, 0)]
    assert matmul_offsets(low) == [(0, 0)]
    assert Opcode.LUT not in {op.opcode for op in low.decoded().ops}  # no requantisation
    check_numerics(low)


def test_q_and_k_of_one_projection_are_symmetric_as_one_class() -> None:
    low = _lower(SharedProjection(shared_v=False), 1, 24, 64)
    assert len(low.payloads) == 1 and not low.cpu()
    (qk, (pv_a, _)) = matmul_zero_points(low)
    assert qk == (0, 0) and pv_a == -128  # p @ v: softmax's fixed zero point
    assert matmul_offsets(low)[0] == (0, 0)
    assert Opcode.LUT not in {op.opcode for op in low.decoded().ops}  # no requantisation
    check_numerics(low)


def test_v_read_by_p_at_v_keeps_the_packed_projection_affine() -> None:
    """p @ v's a (softmax) keeps its zero point: a symmetric v would put p @ v on the s8 path
    with an input offset, slower than its s16 one, so q, k and v (one class) stay affine."""
    low = _lower(SharedProjection(shift=3.0), 1, 24, 64)
    (qk, pv) = matmul_zero_points(low)
    assert qk[0] == qk[1] == pv[1] < -32  # skewed by + 3: affine
    check_numerics(low)


def test_a_class_another_operator_reads_keeps_both_operands_affine() -> None:
    low = _lower(SharedProjection(shift=3.0, shared_v=False, mean_reader=True), 1, 24, 64)
    (qk, _) = matmul_zero_points(low)
    assert qk[0] == qk[1] < -32  # k.mean reads the projection (skewed by + 3): affine kept
    assert len(low.payloads) == 1 and not low.cpu()
    check_numerics(low)


def test_non_negative_b_keeps_both_operands_affine() -> None:
    low = _lower(TwoProjections(relu_b=True, shift=1.0), 1, 20, 64)
    ((_, zp),) = matmul_zero_points(low)
    assert zp == -128  # ReLU's output: the full range of codes for [0, max]
    ((a_off, b_off),) = matmul_offsets(low)
    assert (a_off, b_off) == (-matmul_zero_points(low)[0][0], 128)
    check_numerics(low)


def test_short_reduction_keeps_both_operands_affine() -> None:
    """K = 32 < 64: the s8 path would be slower than the s16 one."""
    low = _lower(TwoProjections(d=32, shift=2.0), 1, 20, 32)
    ((_, zp),) = matmul_zero_points(low)
    assert zp < -32  # skewed by + 2: affine
    check_numerics(low)
