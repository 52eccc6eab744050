"""TRANSPOSE_CONV2D, NHWC activations, in scatter form (independent of the engine's gather
loop): every input pixel's contribution ``x @ w[ky, kx]`` is added at output
``(iy * stride - pad + ky * dilation, ...)``.  float64 sums of integers far below 2**53 are
exact, whatever order they are added in."""

from __future__ import annotations

import numpy as np

from ...format import Opcode
from ..kernel_common import as_i64, requant_epilogue
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.TRANSPOSE_CONV2D)
def transpose_conv2d(ctx: OpContext) -> None:
    p = ctx.param
    x = as_i64(ctx.x(0)).astype(np.float64) + p("in_offset")  # [N, H, W, Cin]
    w = ctx.x(1).astype(np.float64)  # [Cout, KH, KW, Cin/groups]
    cout, kh, kw, cin_g = w.shape
    n, h, wd, _ = x.shape
    groups = p("groups")
    cout_g = cout // groups
    sh, sw, dh, dw = p("stride_h"), p("stride_w"), p("dilation_h"), p("dilation_w")
    pt, pl = p("pad_top"), p("pad_left")
    oh, ow = ctx.output.shape[1], ctx.output.shape[2]
    # the full (unpadded, uncropped) output, large enough for every tap and the output size
    full_h = max((h - 1) * sh + dh * (kh - 1) + 1, pt + oh)
    full_w = max((wd - 1) * sw + dw * (kw - 1) + 1, pl + ow)
    acc = np.zeros((n, full_h, full_w, cout), dtype=np.float64)
    for gi in range(groups):
        xg = x[..., gi * cin_g:(gi + 1) * cin_g]
        wg = w[gi * cout_g:(gi + 1) * cout_g]  # [cout_g, KH, KW, cin_g]
        for ky in range(kh):
            for kx in range(kw):
                contrib = xg @ wg[:, ky, kx, :].T  # [N, H, W, cout_g]
                y0, x0 = ky * dh, kx * dw
                acc[:, y0:y0 + (h - 1) * sh + 1:sh, x0:x0 + (wd - 1) * sw + 1:sw,
                    gi * cout_g:(gi + 1) * cout_g] += contrib
    out = acc[:, pt:pt + oh, pl:pl + ow, :]
    bias = ctx.inputs[2]
    ctx.output[...] = requant_epilogue(
        out.astype(np.int64), None if bias is None else as_i64(bias), as_i64(ctx.x(3)), as_i64(ctx.x(4)),
        p("out_offset"), p("act_min"), p("act_max"),
    )
