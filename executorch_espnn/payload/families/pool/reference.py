"""MAX_POOL2D and AVG_POOL2D over NHWC int8 (no requantisation: in/out share qparams), and
AVG_POOL2D_FLOAT, the float32 average of PyTorch's quantized reference.

Windows start at ``(oy*sh - pad_top, ox*sw - pad_left)``; only taps inside the input count,
as in ESP-NN.  Output sizes come from the output tensor, so floor and ceil mode are the
same code (a ceil-mode window may reach past the bottom/right padding).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from ....quant_math import I64
from ...format import AVG_DIVISOR_VALID, AVG_TORCH_ADAPTIVE, AVG_TORCH_MEAN, Opcode
from ..kernel_common import clamp_to_int8, trunc_div
from ..kernel_registry import OpContext, kernel
from ..quantize.reference import quantize_f32

F32 = npt.NDArray[np.float32]


def _windows(ctx: OpContext, fill: int, x: npt.NDArray[Any] | None = None) -> Iterator[npt.NDArray[Any]]:
    """Yield, per kernel tap in row-major order, the [N, OH, OW, C] values under it (``fill``
    outside the input) of ``x`` (default: input 0)."""
    p = ctx.param
    x = ctx.x(0) if x is None else x
    n, h, w, c = x.shape
    oh, ow = ctx.output.shape[1], ctx.output.shape[2]
    kh, kw, sh, sw = p("kernel_h"), p("kernel_w"), p("stride_h"), p("stride_w")
    pt, pl = p("pad_top"), p("pad_left")
    need_h = (oh - 1) * sh + kh
    need_w = (ow - 1) * sw + kw
    dtype = np.float32 if x.dtype == np.float32 else np.int64
    xp = np.full((n, max(need_h, pt + h), max(need_w, pl + w), c), fill, dtype=dtype)
    xp[:, pt : pt + h, pl : pl + w, :] = x
    for ky in range(kh):
        for kx in range(kw):
            yield xp[:, ky : ky + (oh - 1) * sh + 1 : sh, kx : kx + (ow - 1) * sw + 1 : sw, :]


def _starts(n_out: int, stride: int, pad: int) -> npt.NDArray[np.int64]:
    return np.arange(n_out, dtype=np.int64) * stride - pad


@kernel(Opcode.MAX_POOL2D)
def max_pool2d(ctx: OpContext) -> None:
    # every window holds at least one input element (format rule), so the sentinel never wins
    best: I64 | None = None
    for tap in _windows(ctx, fill=-(1 << 20)):
        best = tap.copy() if best is None else np.maximum(best, tap)
    assert best is not None
    ctx.output[...] = clamp_to_int8(best, ctx.param("act_min"), ctx.param("act_max"))


def _counts(ctx: OpContext) -> tuple[I64, I64]:
    """[OH, OW, 1] number of taps inside the input, and the divisor of the op's divisor_mode."""
    p = ctx.param
    h, w = ctx.x(0).shape[1:3]
    oh, ow = ctx.output.shape[1:3]
    kh, kw = p("kernel_h"), p("kernel_w")
    y0 = _starts(oh, p("stride_h"), p("pad_top"))
    x0 = _starts(ow, p("stride_w"), p("pad_left"))
    vy = np.minimum(y0 + kh, h) - np.maximum(y0, 0)
    vx = np.minimum(x0 + kw, w) - np.maximum(x0, 0)
    inside: I64 = (vy[:, None] * vx[None, :])[:, :, None]
    if p("divisor_mode") == AVG_DIVISOR_VALID:
        return inside, inside
    # PyTorch count_include_pad: the window clipped to the padded input
    cy = np.minimum(y0 + kh, h + p("pad_bottom")) - y0
    cx = np.minimum(x0 + kw, w + p("pad_right")) - x0
    cnt: I64 = (cy[:, None] * cx[None, :])[:, :, None]
    return inside, cnt


@kernel(Opcode.AVG_POOL2D)
def avg_pool2d(ctx: OpContext) -> None:
    total: I64 | None = None
    for tap in _windows(ctx, fill=0):
        total = tap.copy() if total is None else total + tap
    assert total is not None
    inside, cnt = _counts(ctx)
    # padding taps counted by the divisor hold real 0, i.e. the input's zero point
    total = total + ctx.rec(0).zero_point * (cnt - inside)
    # ESP-NN: sum > 0 ? (sum + cnt/2) / cnt : (sum - cnt/2) / cnt, C division
    avg = np.where(total > 0, trunc_div(total + cnt // 2, cnt), trunc_div(total - cnt // 2, cnt))
    ctx.output[...] = clamp_to_int8(avg, ctx.param("act_min"), ctx.param("act_max"))


def _aten_row_sum(seq: F32) -> F32:
    """ATen's row_sum (SumKernel.cpp) over axis 0 of ``seq``, lane-wise over the other axes:
    four interleaved accumulators cascading through four levels every 16 rows (the level
    width max(4, ceil(log2(rows)) / 4) is 4 below 2^20 rows), the leftovers into the first,
    then the four added in order.  The engine's ``aten_row_sum``."""
    ilp, levels, step = 4, 4, 16
    size = seq.shape[0]
    rows = size // ilp
    acc = np.zeros((levels, ilp, *seq.shape[1:]), dtype=np.float32)
    i = 0
    while i + step <= rows:
        for _ in range(step):
            acc[0] = acc[0] + seq[i * ilp : i * ilp + ilp]
            i += 1
        for j in range(1, levels):
            acc[j] = acc[j] + acc[j - 1]
            acc[j - 1] = 0
            if i & ((step - 1) << (j * 4)):
                break
    for r in range(i, rows):
        acc[0] = acc[0] + seq[r * ilp : r * ilp + ilp]
    for j in range(1, levels):
        acc[0] = acc[0] + acc[j]
    total: F32 = acc[0][0]
    for e in range(rows * ilp, size):
        total = total + seq[e]
    for k in range(1, ilp):
        total = total + acc[0][k]
    return total


def aten_sum(seq: F32) -> F32:
    """ATen's float32 sum of ``seq`` over axis 0 (contiguous inner reduction): 8-lane vectors,
    each lane summed by row_sum, then 0 + the leftover elements + the lanes in order; fewer
    than 8 values, one scalar row_sum.  The engine's ``aten_sum``."""
    lanes = 8
    n = seq.shape[0]
    if n < lanes:
        return _aten_row_sum(seq)
    vectors = n // lanes
    per_lane = _aten_row_sum(seq[: vectors * lanes].reshape(vectors, lanes, *seq.shape[1:]))
    total = np.zeros(seq.shape[1:], dtype=np.float32)
    for e in range(vectors * lanes, n):
        total = total + seq[e]
    for lane in range(lanes):
        total = total + per_lane[lane]
    return total


@kernel(Opcode.AVG_POOL2D_FLOAT)
def avg_pool2d_float(ctx: OpContext) -> None:
    p = ctx.param
    table = np.asarray(ctx.x(1), dtype=np.float32)
    v = table[ctx.x(0).astype(np.int64) + 128]  # [N, H, W, C] float32
    out = ctx.output_rec
    op = p("torch_op")
    if op == AVG_TORCH_MEAN:
        n, h, w, c = v.shape
        mean = aten_sum(np.moveaxis(v.reshape(n, h * w, c), 1, 0)) / np.float32(h * w)
        avg: F32 = mean.reshape(n, 1, 1, c)
    else:
        total: F32 = np.zeros(ctx.output.shape, dtype=np.float32)
        for tap in _windows(ctx, 0, v):  # adding +0.0 outside the input changes nothing
            total = total + tap
        if op == AVG_TORCH_ADAPTIVE:
            avg = total / np.float32(p("kernel_h")) / np.float32(p("kernel_w"))
        else:
            cnt: F32 = _counts(ctx)[1].astype(np.float32)
            avg = total / cnt
    q = quantize_f32(avg.astype(np.float32, copy=False), out.scale, out.zero_point)
    ctx.output[...] = clamp_to_int8(q.astype(np.int64), p("act_min"), p("act_max"))
