"""ADD and MUL: int8 operands that broadcast to the output, offsets, multipliers and shifts."""

from __future__ import annotations

from ...format import ADD_LEFT_SHIFT_MAX, MULT_MAX, SHIFT_MAX, SHIFT_MIN, DType, Opcode
from ..check_registry import OpCheck, check


def _broadcast(c: OpCheck) -> None:
    a, b, o = c.t(0), c.t(1), c.out()
    for t, name in ((a, "a"), (b, "b"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        if t.rank != o.rank:
            raise c.err(name, f"rank {t.rank}, expected {o.rank}")
    for i, d in enumerate(o.dims):
        for t, name in ((a, "a"), (b, "b")):
            if t.dims[i] not in (1, d):
                raise c.err(name, f"dim {i} is {t.dims[i]}, cannot broadcast to {d}")


@check(Opcode.ADD)
def add(c: OpCheck) -> None:
    _broadcast(c)
    c.offsets("a_offset", "b_offset", out="out_offset")
    # a negative input multiplier subtracts that operand (sub, add with a negative alpha;
    # format 2.1); -MULT_MAX keeps INT32_MIN, SRDHM's one saturating operand, out
    for n in ("a_mult", "b_mult"):
        c.param(n, -MULT_MAX, MULT_MAX)
    c.param("out_mult", 0, MULT_MAX)
    for n in ("a_shift", "b_shift", "out_shift"):
        c.param(n, SHIFT_MIN, SHIFT_MAX)
    c.param("left_shift", 0, ADD_LEFT_SHIFT_MAX)
    c.act()


@check(Opcode.MUL)
def mul(c: OpCheck) -> None:
    _broadcast(c)
    c.offsets("a_offset", "b_offset", out="out_offset")
    c.param("out_mult", 0, MULT_MAX)
    c.param("out_shift", SHIFT_MIN, SHIFT_MAX)
    c.act()
