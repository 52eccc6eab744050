"""Helpers shared by the operator families: requantisation, activation ranges, tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import torch
from torch.fx import Node

from ..graph.names import clamp_bounds, static_shape
from ..graph.qdq import QParams, qdq_params
from ..layout import Perm
from ..payload import DType, Opcode
from ..payload.format import MAX_ABS_BIAS
from ..payload_builder import PayloadBuilder
from ..quant_math import SINGLE_ROUNDING_MIN, multiplier_in_range, quantize_multiplier
from ..unsupported import Unsupported
from .base import Unit


def act_range(unit: Unit, qout: QParams) -> tuple[int, int]:
    """int8 output range of the unit: int8's, narrowed by fused relu/relu6/hardtanh/clamp.
    Quantization is monotone, so quantize(clamp(y, lo, hi)) equals
    clamp(quantize(y), quantize(lo), quantize(hi)) exactly.
    """
    lo_q, hi_q = -128, 127
    for node in unit.fused:
        lo, hi = clamp_bounds(node)
        if lo is not None:
            lo_q = max(lo_q, qout.quantize_scalar(lo))
        if hi is not None:
            hi_q = min(hi_q, qout.quantize_scalar(hi))
    if lo_q > hi_q:
        raise Unsupported(f"fused activation range [{lo_q}, {hi_q}] is empty after quantization")
    return lo_q, hi_q


# Below SINGLE_ROUNDING_MIN (quant_math), shift 0 leaves the 31-bit mult with too few
# significant bits.


def requant(real: float, what: str) -> tuple[int, int]:
    """(mult, shift) for one real multiplier below 1, refusing what the format cannot hold.
    TFLite normalises ``mult`` into [2^30, 2^31) and puts the scale in ``shift``; ESP-NN then
    rounds twice (in the doubling high multiply, then in the right shift), which disagrees
    with a single rounding of the exact product in about 2^-(1 - shift) of the outputs:
    ~0.2% per layer for a typical 1x1 convolution, compounding through a network.  With
    ``shift = 0`` the right shift is exact and the only rounding is the high multiply's, so
    for multipliers of at least 2^-11 (mult >= 2^20, a relative precision better than
    float32's) this uses ``mult = round(real * 2^31), shift = 0``: the same kernels, fewer
    disagreements with the float model.  Smaller multipliers keep TFLite's normal form,
    whose shift of 11 or more already makes double rounding rare.
    """
    if not np.isfinite(real) or real < 0:
        raise Unsupported(f"{what}: requantization multiplier {real} is not a finite non-negative number")
    if not multiplier_in_range(real):
        raise Unsupported(
            f"{what}: requantization multiplier {real:.6g} is >= 1 (output scale too small for the "
            "input and weight scales); ESP-NN needs multipliers below 1"
        )
    if real >= SINGLE_ROUNDING_MIN:
        return min(round(real * 2.0**31), 2**31 - 1), 0
    return quantize_multiplier(real)


def channel_requant(real: npt.NDArray[np.float64], what: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    mult = np.zeros(real.shape[0], dtype=np.int32)
    shift = np.zeros(real.shape[0], dtype=np.int32)
    for c, r in enumerate(real.tolist()):
        m, s = requant(float(r), f"{what}, output channel {c}")
        mult[c] = m
        shift[c] = s
    return mult, shift


def quantize_bias(
    bias: npt.NDArray[np.float64] | None, acc_scales: npt.NDArray[np.float64], what: str
) -> npt.NDArray[np.int32] | None:
    """Bias in accumulator units (input scale * weight scale), within the format's ±2^24."""
    if bias is None:
        return None
    if bias.shape != acc_scales.shape:
        raise Unsupported(f"{what} has {bias.shape[0]} values for {acc_scales.shape[0]} output channels")
    if not np.isfinite(bias).all():
        raise Unsupported(f"{what} is not finite")
    q = np.round(bias / acc_scales)
    worst = float(np.abs(q).max()) if q.size else 0.0
    if worst > MAX_ABS_BIAS:
        c = int(np.argmax(np.abs(q)))
        raise Unsupported(
            f"{what} on output channel {c} is {int(q[c])} in accumulator units, beyond the "
            f"engine's ±{MAX_ABS_BIAS} (2^24) that keeps the int32 accumulator exact"
        )
    return q.astype(np.int32)


INT8_CODES = torch.arange(-128, 128, dtype=torch.int32).to(torch.int8)


def lut_table(fn: Callable[[torch.Tensor], torch.Tensor], qin: QParams, qout: QParams) -> npt.NDArray[np.int8]:
    """table[q + 128] = quantize_out(fn(dequantize_in(q))), computed in PyTorch float32."""
    with torch.no_grad():
        x = qin.dequantize(INT8_CODES)
        y = fn(x)
        if not isinstance(y, torch.Tensor) or y.shape != x.shape:
            raise Unsupported("activation is not elementwise")
        if not y.dtype.is_floating_point:
            raise Unsupported(f"activation returns {y.dtype}")
        out = qout.quantize(y.to(torch.float32))
    return out.numpy().astype(np.int8)


def requant_table(qin: QParams, qout: QParams) -> npt.NDArray[np.int8]:
    """A LUT that moves int8 values from ``qin`` to ``qout`` exactly like dequantize → quantize."""
    return lut_table(lambda x: x, qin, qout)


def emit_moved(
    b: PayloadBuilder,
    unit: Unit,
    qin: QParams,
    perm: Perm,
    emit: Callable[[int], object],
    shape: Sequence[int] | None = None,
    output: Node | None = None,
) -> None:
    """Emit a data-movement op into the unit's output (or into ``output``, one of
    ``unit.outputs``); requantise with a LUT when the quantizer gave the output other
    parameters than the input."""
    q = unit.output if output is None else output
    qout = qdq_params(q)
    shp = tuple(shape) if shape is not None else static_shape(q)
    if qout == qin:
        _, out = b.define(q, perm, shp)
        emit(out)
        return
    tmp = b.arena(shp, DType.INT8, qin, perm)
    emit(tmp)
    _, out = b.define(q, perm, shp)
    b.emit(Opcode.LUT, [tmp, b.constant(requant_table(qin, qout))], out)


def normalize_dim(dim: int, rank: int) -> int:
    d = int(dim)
    if d < 0:
        d += rank
    if not 0 <= d < max(rank, 1):
        raise Unsupported(f"dimension {dim} out of range for rank {rank}")
    return d


def pair(v: object, what: str) -> tuple[int, int]:
    """A PyTorch int-or-[int]-or-[int, int] spatial argument as (h, w)."""
    if isinstance(v, int):
        return v, v
    if isinstance(v, (list, tuple)):
        vals = [int(x) for x in v]
        if len(vals) == 1:
            return vals[0], vals[0]
        if len(vals) == 2:
            return vals[0], vals[1]
    raise Unsupported(f"{what} {v!r} is not one or two integers")


def single(v: object, what: str, owner: str, default: int | None = None) -> int:
    """A 1-D operator's int-or-[int] argument (kernel, stride, padding, dilation); an empty
    list means ``default`` when there is one (pooling's stride defaults to the kernel)."""
    if isinstance(v, int):
        return v
    if isinstance(v, (list, tuple)) and len(v) == 1:
        return int(v[0])
    if isinstance(v, (list, tuple)) and not v and default is not None:
        return default
    raise Unsupported(f"{what} {v!r} of a {owner} is not one integer")


def requant_ls(real: float, what: str, max_shift: int) -> tuple[int, int]:
    """(mult, shift) for a multiplier that may be >= 1, with TFLite's meaning of a positive
    shift (a left shift before the multiply, ``MultiplyByQuantizedMultiplier``): below 1 as
    ``requant``; from 1 on ``mult`` in [2^30, 2^31) and ``shift`` in 1 … ``max_shift``, so the
    value shifted left is exact and the high multiply rounds once."""
    if np.isfinite(real) and 0 <= real < 1 and multiplier_in_range(real):
        return requant(real, what)
    if not np.isfinite(real) or real < 0:
        raise Unsupported(f"{what}: requantization multiplier {real} is not a finite non-negative number")
    mult, shift = quantize_multiplier(real)
    if shift > max_shift:
        raise Unsupported(
            f"{what}: requantization multiplier {real:.6g} is >= 2^{max_shift} (output scale far too small "
            "for the input's); the engine allows at most that"
        )
    return mult, shift
