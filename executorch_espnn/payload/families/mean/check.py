"""MEAN_HW: [N, H, W, C] to [N, 1, 1, C], a bounded count, requantisation."""

from __future__ import annotations

from ...format import MAX_MEAN_COUNT, MULT_MAX, SHIFT_MAX, SHIFT_MIN, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.MEAN_HW)
def mean_hw(c: OpCheck) -> None:
    x, o = c.int8_io(rank=4)
    n, h, w, ch = x.dims
    if o.dims != (n, 1, 1, ch):
        raise c.err("output", f"shape {o.dims}, expected {(n, 1, 1, ch)}")
    if h * w > MAX_MEAN_COUNT:
        raise c.err("input", f"H*W = {h * w} exceeds {MAX_MEAN_COUNT}")
    c.offsets("in_offset", out="out_offset")
    c.param("mult", 0, MULT_MAX)
    c.param("shift", SHIFT_MIN, SHIFT_MAX)
