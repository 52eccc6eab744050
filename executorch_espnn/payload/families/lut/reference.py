"""LUT: ``out[i] = table[in[i] + 128]``, the form of every unary activation."""

from __future__ import annotations

import numpy as np

from ...format import Opcode
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.LUT)
def lut(ctx: OpContext) -> None:
    table = ctx.x(1)
    idx = ctx.x(0).astype(np.int16) + 128
    ctx.output[...] = table[idx].reshape(ctx.output.shape)
