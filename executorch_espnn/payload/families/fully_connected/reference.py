"""FULLY_CONNECTED: rows of the input times the [Out, K] filter, requantised per output."""

from __future__ import annotations

import numpy as np

from ...format import Opcode
from ..kernel_common import as_i64, requant_epilogue
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.FULLY_CONNECTED)
def fully_connected(ctx: OpContext) -> None:
    w = ctx.x(1)  # [Out, K]
    _, k = w.shape
    x = ctx.x(0).reshape(-1, k).astype(np.float64) + ctx.param("in_offset")
    # exact: |terms| <= 256 * 127 and at most 65535 of them, far below 2**53
    acc = (x @ w.astype(np.float64).T).astype(np.int64)
    bias = ctx.inputs[2]
    out = requant_epilogue(
        acc, None if bias is None else as_i64(bias), as_i64(ctx.x(3)), as_i64(ctx.x(4)),
        ctx.param("out_offset"), ctx.param("act_min"), ctx.param("act_max"),
    )
    ctx.output[...] = out.reshape(ctx.output.shape)
