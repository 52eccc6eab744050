"""PRELU: same-shape int8 input and output, the slope and its multipliers per slope element."""

from __future__ import annotations

from ...format import MULT_MAX, PRELU_SHIFT_MAX, SHIFT_MIN, DType, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.PRELU)
def prelu(c: OpCheck) -> None:
    x, o = c.int8_io()
    if o.dims != x.dims or o.rank != x.rank:
        raise c.err("output", f"shape {o.dims}, expected the input's {x.dims}")
    alpha = c.const(1, "alpha")
    c.dtype(alpha, DType.INT8, "alpha")
    k = alpha.dims[0]
    last = x.dims[x.rank - 1] if x.rank else 1
    if alpha.rank != 1 or k not in (1, last):
        raise c.err("alpha", f"shape {alpha.dims}, expected (1,) or ({last},) (the input's last dim)")
    for slot, name in ((2, "neg_mult"), (3, "neg_shift")):
        t = c.const(slot, name)
        c.dtype(t, DType.INT32, name)
        if t.dims != (k,):
            raise c.err(name, f"shape {t.dims}, expected ({k},)")
    m = c.const_values(c.t(2))
    if (m < 0).any():
        raise c.err("neg_mult", f"negative multiplier at slope {int((m < 0).argmax())}")
    s = c.const_values(c.t(3))
    bad = (s < SHIFT_MIN) | (s > PRELU_SHIFT_MAX)
    if bad.any():
        i = int(bad.argmax())
        raise c.err("neg_shift", f"slope {i} shift {int(s[i])} outside [{SHIFT_MIN}, {PRELU_SHIFT_MAX}]")
    c.offsets("in_offset", "alpha_offset", out="out_offset")
    c.param("pos_mult", 0, MULT_MAX)
    c.param("pos_shift", SHIFT_MIN, PRELU_SHIFT_MAX)
