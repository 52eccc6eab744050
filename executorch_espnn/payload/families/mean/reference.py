"""MEAN_HW: the mean over H and W of an NHWC tensor, as ESP-NN's ``esp_nn_mean_nhwc_s8``."""

from __future__ import annotations

import numpy as np

from ....quant_math import requant
from ...format import Opcode
from ..kernel_common import as_i64, clamp_to_int8
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.MEAN_HW)
def mean_hw(ctx: OpContext) -> None:
    p = ctx.param
    s = np.sum(as_i64(ctx.x(0)) + p("in_offset"), axis=(1, 2), keepdims=True)
    v = requant(s, p("mult"), p("shift")) + p("out_offset")
    ctx.output[...] = clamp_to_int8(v, -128, 127)
