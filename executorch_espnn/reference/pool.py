"""MAX_POOL2D and AVG_POOL2D over NHWC int8 (no requantisation: in/out share qparams).

Windows start at ``(oy*sh - pad_top, ox*sw - pad_left)``; only taps inside the input count,
as in ESP-NN.  Output sizes come from the output tensor, so floor and ceil mode are the
same code (a ceil-mode window may reach past the bottom/right padding).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from ..payload import Opcode
from ..payload.format import AVG_DIVISOR_VALID
from ..quant_math import I64
from .common import clamp_to_int8, trunc_div
from .registry import OpContext, kernel


def _windows(ctx: OpContext, fill: int) -> Iterator[I64]:
    """Yield, per kernel tap, the [N, OH, OW, C] values under it (``fill`` outside the input)."""
    p = ctx.param
    x = ctx.x(0)
    n, h, w, c = x.shape
    oh, ow = ctx.output.shape[1], ctx.output.shape[2]
    kh, kw, sh, sw = p("kernel_h"), p("kernel_w"), p("stride_h"), p("stride_w")
    pt, pl = p("pad_top"), p("pad_left")
    need_h = (oh - 1) * sh + kh
    need_w = (ow - 1) * sw + kw
    xp = np.full((n, max(need_h, pt + h), max(need_w, pl + w), c), fill, dtype=np.int64)
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
