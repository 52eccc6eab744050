"""SOFTMAX: row length, the kernel's int32 range, the fixed output quantization."""

from __future__ import annotations

import numpy as np

from ...format import (
    MULT_MAX,
    SOFTMAX_MAX_ROW,
    SOFTMAX_OUT_SCALE,
    SOFTMAX_OUT_ZERO_POINT,
    SOFTMAX_SHIFT_MAX,
    Opcode,
)
from ..check_registry import OpCheck, check


@check(Opcode.SOFTMAX)
def softmax(c: OpCheck) -> None:
    x, o = c.int8_io()
    if x.rank < 1 or x.dims != o.dims:
        raise c.err("output", f"shape {o.dims} must equal input {x.dims}")
    if x.dims[-1] > SOFTMAX_MAX_ROW:
        raise c.err("input", f"softmax row of {x.dims[-1]} exceeds {SOFTMAX_MAX_ROW} (int32 sum of exponentials)")
    c.param("mult", 0, MULT_MAX)
    shift = c.param("shift", 0, SOFTMAX_SHIFT_MAX)
    diff_min = c.param("diff_min", -(2**31), 0)
    # every difference the kernel rescales (diff >= diff_min, diff >= -255) times 2^shift
    # must fit in int32
    if min(-diff_min, 255) << shift > 2**31 - 1:
        raise c.err("diff_min", f"{diff_min} with shift {shift} overflows int32")
    if o.scale != np.float32(SOFTMAX_OUT_SCALE) or o.zero_point != SOFTMAX_OUT_ZERO_POINT:
        raise c.err("output", "softmax output must have scale 1/256 and zero point -128")
