"""PRELU: TFLite's int8 PReLU, one slope or one per element of the last dim."""

from __future__ import annotations

import numpy as np

from ....quant_math import requant_ls
from ...format import Opcode
from ..kernel_common import as_i64
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.PRELU)
def prelu(ctx: OpContext) -> None:
    p = ctx.param
    v = as_i64(ctx.x(0)) + p("in_offset")
    alpha = as_i64(ctx.x(1)) + p("alpha_offset")  # [K]: K == 1 or the last dim
    neg_mult, neg_shift = as_i64(ctx.x(2)), as_i64(ctx.x(3))
    pos = requant_ls(v, p("pos_mult"), p("pos_shift"))
    neg = requant_ls(v * alpha, neg_mult, neg_shift)
    out = np.where(v >= 0, pos, neg) + p("out_offset")
    ctx.output[...] = np.clip(out, -128, 127).astype(np.int8).reshape(ctx.output.shape)
