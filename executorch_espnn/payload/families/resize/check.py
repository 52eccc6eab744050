"""UPSAMPLE_BILINEAR: NHWC int8 in and out with one quantization, the coordinate tables."""

from __future__ import annotations

from ...format import BILINEAR_ONE, DType, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.UPSAMPLE_BILINEAR)
def upsample_bilinear(c: OpCheck) -> None:
    x, o = c.int8_io(rank=4)
    n, h, w, ch = x.dims
    if o.dims[0] != n or o.dims[3] != ch:
        raise c.err("output", f"shape {o.dims} does not match input {x.dims}")
    for slot, name, size, hi in ((1, "y_index", o.dims[1], h - 1), (2, "y_frac", o.dims[1], BILINEAR_ONE),
                                 (3, "x_index", o.dims[2], w - 1), (4, "x_frac", o.dims[2], BILINEAR_ONE)):
        t = c.const(slot, name)
        c.dtype(t, DType.INT32, name)
        if t.dims != (size,):
            raise c.err(name, f"shape {t.dims}, expected ({size},)")
        v = c.const_values(t)
        if ((v < 0) | (v > hi)).any():
            raise c.err(name, f"value outside [0, {hi}]")
    if x.scale != o.scale or x.zero_point != o.zero_point:
        raise c.err("output", "input and output quantization must be equal")
