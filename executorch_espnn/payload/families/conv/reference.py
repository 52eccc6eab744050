"""CONV2D (dense, grouped, dilated) and DEPTHWISE_CONV2D, NHWC activations.

The reductions run as float64 matrix products: every operand and partial sum is an integer
far below 2**53 (the format bounds them by 2**31), so the result is exact whatever order
the BLAS sums in, and fast enough for whole networks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...format import Opcode
from ..kernel_common import as_i64, requant_epilogue
from ..kernel_registry import OpContext, kernel

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class _Geometry:
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    oh: int
    ow: int


def _geometry(ctx: OpContext, kh: int, kw: int) -> _Geometry:
    p = ctx.param
    return _Geometry(
        kh, kw, p("stride_h"), p("stride_w"), p("dilation_h"), p("dilation_w"),
        p("pad_top"), p("pad_left"), ctx.output.shape[1], ctx.output.shape[2],
    )


def _padded_input(ctx: OpContext, g: _Geometry) -> F64:
    """``x + in_offset`` surrounded by zeros, so padded taps contribute nothing."""
    x = ctx.x(0)
    n, h, w, c = x.shape
    # rows/cols the last window reaches; never more than the declared padding
    need_h = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1
    need_w = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1
    xp = np.zeros((n, max(need_h, g.pt + h), max(need_w, g.pl + w), c), dtype=np.float64)
    xp[:, g.pt : g.pt + h, g.pl : g.pl + w, :] = as_i64(x) + ctx.param("in_offset")
    return xp


def _tap(xp: F64, g: _Geometry, ky: int, kx: int) -> F64:
    y0, x0 = ky * g.dh, kx * g.dw
    return xp[:, y0 : y0 + (g.oh - 1) * g.sh + 1 : g.sh, x0 : x0 + (g.ow - 1) * g.sw + 1 : g.sw, :]


def _requant_arrays(ctx: OpContext) -> tuple[npt.NDArray[np.int64] | None, npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    bias = ctx.inputs[2]
    return (
        None if bias is None else as_i64(bias),
        as_i64(ctx.x(3)),
        as_i64(ctx.x(4)),
    )


def _finish(ctx: OpContext, acc: F64) -> None:
    bias, mult, shift = _requant_arrays(ctx)
    ctx.output[...] = requant_epilogue(
        acc.astype(np.int64), bias, mult, shift,
        ctx.param("out_offset"), ctx.param("act_min"), ctx.param("act_max"),
    )


@kernel(Opcode.CONV2D)
def conv2d(ctx: OpContext) -> None:
    w = ctx.x(1)  # [Cout, KH, KW, Cin/groups]
    cout, kh, kw, cin_g = w.shape
    groups = ctx.param("groups")
    g = _geometry(ctx, kh, kw)
    xp = _padded_input(ctx, g)
    n = xp.shape[0]
    # im2col: [N, OH, OW, KH, KW, Cin], in the filter's (ky, kx, ic) order
    cols = np.stack([_tap(xp, g, ky, kx) for ky in range(kh) for kx in range(kw)], axis=3)
    cols = cols.reshape(n * g.oh * g.ow, kh * kw, groups, cin_g)
    wf = w.astype(np.float64).reshape(groups, cout // groups, kh * kw * cin_g)
    acc = np.empty((n * g.oh * g.ow, cout), dtype=np.float64)
    cout_g = cout // groups
    for gi in range(groups):
        a = cols[:, :, gi, :].reshape(-1, kh * kw * cin_g)
        acc[:, gi * cout_g : (gi + 1) * cout_g] = a @ wf[gi].T
    _finish(ctx, acc.reshape(n, g.oh, g.ow, cout))


@kernel(Opcode.DEPTHWISE_CONV2D)
def depthwise_conv2d(ctx: OpContext) -> None:
    w = ctx.x(1)  # [1, KH, KW, Cin * ch_mult]
    _, kh, kw, cout = w.shape
    ch_mult = ctx.param("ch_mult")
    g = _geometry(ctx, kh, kw)
    xp = _padded_input(ctx, g)
    if ch_mult > 1:  # output channel ic * ch_mult + m reads input channel ic
        xp = np.repeat(xp, ch_mult, axis=3)
    wf = w.astype(np.float64)[0]
    acc = np.zeros((xp.shape[0], g.oh, g.ow, cout), dtype=np.float64)
    for ky in range(kh):
        for kx in range(kw):
            acc += _tap(xp, g, ky, kx) * wf[ky, kx]
    _finish(ctx, acc)
