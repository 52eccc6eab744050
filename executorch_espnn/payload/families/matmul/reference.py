"""BATCH_MATMUL: ``out[b] = requant((a[b] + a_offset) @ (bt[b] + b_offset)^T)`` per batch."""

from __future__ import annotations

import numpy as np

from ...format import Opcode
from ..kernel_common import requant_epilogue
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.BATCH_MATMUL)
def batch_matmul(ctx: OpContext) -> None:
    a, bt, out = ctx.x(0), ctx.x(1), ctx.output
    m, k = a.shape[-2:]
    n = bt.shape[-2]
    a3 = a.reshape(-1, m, k).astype(np.float64) + ctx.param("a_offset")
    b3 = bt.reshape(-1, n, k).astype(np.float64) + ctx.param("b_offset")
    # exact: |terms| <= 255 * 255, at most MAX_MATMUL_DEPTH of them, far below 2**53
    acc = np.matmul(a3, b3.transpose(0, 2, 1)).astype(np.int64)
    res = requant_epilogue(acc, None, np.asarray(ctx.param("out_mult"), np.int64),
                           np.asarray(ctx.param("out_shift"), np.int64),
                           ctx.param("out_offset"), ctx.param("act_min"), ctx.param("act_max"))
    ctx.output[...] = np.broadcast_to(res, (out.size // (m * n), m, n)).reshape(out.shape)
