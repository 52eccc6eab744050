"""LUT: an int8 [256] constant table, as many output elements as input elements."""

from __future__ import annotations

from ...format import DType, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.LUT)
def lut(c: OpCheck) -> None:
    x, o = c.int8_io()
    t = c.const(1, "table")
    c.dtype(t, DType.INT8, "table")
    if t.dims != (256,):
        raise c.err("table", f"shape {t.dims}, expected (256,)")
    if x.numel != o.numel:
        raise c.err("output", "element count differs from input")
