"""UPSAMPLE_BILINEAR: the engine's fixed-point bilinear resampling of NHWC int8."""

from __future__ import annotations

import numpy as np

from ....quant_math import rdbp
from ...format import BILINEAR_FRAC_BITS, BILINEAR_ONE, Opcode
from ..kernel_common import as_i64
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.UPSAMPLE_BILINEAR)
def upsample_bilinear(ctx: OpContext) -> None:
    x = as_i64(ctx.x(0))  # [N, H, W, C]
    h, w = x.shape[1], x.shape[2]
    y0, wy1 = as_i64(ctx.x(1)), as_i64(ctx.x(2))
    x0, wx1 = as_i64(ctx.x(3)), as_i64(ctx.x(4))
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy0, wx0 = BILINEAR_ONE - wy1, BILINEAR_ONE - wx1
    top = wx0[None, None, :, None] * x[:, y0][:, :, x0] + wx1[None, None, :, None] * x[:, y0][:, :, x1]
    bot = wx0[None, None, :, None] * x[:, y1][:, :, x0] + wx1[None, None, :, None] * x[:, y1][:, :, x1]
    acc = wy0[None, :, None, None] * top + wy1[None, :, None, None] * bot
    ctx.output[...] = rdbp(acc, 2 * BILINEAR_FRAC_BITS).astype(np.int8)
