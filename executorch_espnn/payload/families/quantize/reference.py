"""QUANTIZE (float32 -> int8) and DEQUANTIZE (int8 -> float32), each with a permutation.

QUANTIZE is ExecuTorch's ``quantize_per_tensor`` kernel: the inverse scale and the product
are float32, ties round to even, then the zero point is added and the result clamped.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...format import Opcode
from ..kernel_registry import OpContext, kernel

# Clipping the rounded float32 value to this range before the integer conversion gives the
# same int8 result as unbounded arithmetic (any |v| >= 384 saturates after the zero point)
# and keeps infinities and huge values from overflowing the cast.
_PRE_CLIP = 384.0


def quantize_f32(x: npt.NDArray[np.float32], scale: float, zero_point: int) -> npt.NDArray[np.int8]:
    """PyTorch's quantize_per_tensor in float32: ``x * float32(1 / scale)`` rounded half to
    even, plus the zero point, clamped; NaN gives the zero point (the engine's
    ``espnn_quantize_f32``)."""
    inv = np.float32(1.0) / np.float32(scale)
    with np.errstate(invalid="ignore", over="ignore"):
        prod = np.multiply(x, inv, dtype=np.float32)
        r = np.rint(prod)  # round half to even, in float32
        nan = np.isnan(r)
        r = np.clip(np.where(nan, np.float32(0), r), -_PRE_CLIP, _PRE_CLIP)
    q = r.astype(np.int64) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


@kernel(Opcode.QUANTIZE)
def quantize(ctx: OpContext) -> None:
    x = np.transpose(ctx.x(0), ctx.perm(ctx.rec(0).rank)).astype(np.float32, copy=False)
    out = ctx.output_rec
    ctx.output[...] = quantize_f32(x, out.scale, out.zero_point)


@kernel(Opcode.DEQUANTIZE)
def dequantize(ctx: OpContext) -> None:
    src = ctx.rec(0)
    x = np.transpose(ctx.x(0), ctx.perm(src.rank)).astype(np.int32)
    centred = (x - np.int32(src.zero_point)).astype(np.float32)
    ctx.output[...] = np.multiply(centred, np.float32(src.scale), dtype=np.float32)
