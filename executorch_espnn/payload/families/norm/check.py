"""LAYER_NORM: int8 rows over the last dim, per-channel int32 gamma and beta, the epsilon."""

from __future__ import annotations

from ...format import (
    LAYER_NORM_EPS_HI_MAX,
    LAYER_NORM_GAMMA_SHIFT_MAX,
    LAYER_NORM_MAX_ROW,
    DType,
    Opcode,
)
from ..check_registry import OpCheck, check


@check(Opcode.LAYER_NORM)
def layer_norm(c: OpCheck) -> None:
    x, o = c.int8_io()
    if x.rank < 1:
        raise c.err("input", "rank 0, expected a last dim to normalize")
    if o.dims != x.dims or o.rank != x.rank:
        raise c.err("output", f"shape {o.dims}, expected {x.dims}")
    d = x.dims[x.rank - 1]
    if d > LAYER_NORM_MAX_ROW:
        raise c.err("input", f"rows of {d} values exceed {LAYER_NORM_MAX_ROW}")
    for slot, name in ((1, "gamma"), (2, "beta")):
        t = c.const(slot, name)
        c.dtype(t, DType.INT32, name)
        if t.dims != (d,):
            raise c.err(name, f"shape {t.dims}, expected ({d},)")
    c.param("out_offset", -128, 127)
    c.param("gamma_shift", 0, LAYER_NORM_GAMMA_SHIFT_MAX)
    c.param("eps_hi", 0, LAYER_NORM_EPS_HI_MAX)
    c.param("eps_lo", -(2**31), 2**31 - 1)
