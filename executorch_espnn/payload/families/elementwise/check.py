"""ADD, MUL and DIV: int8 operands that broadcast to the output, offsets, multipliers and shifts."""

from __future__ import annotations

from ...format import (
    ADD_LEFT_SHIFT_MAX,
    DIV_SHIFT_MAX,
    DIV_TABLE_SIZE,
    MULT_MAX,
    SHIFT_MAX,
    SHIFT_MIN,
    DType,
    Opcode,
)
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


@check(Opcode.DIV)
def div(c: OpCheck) -> None:
    _broadcast(c)
    for slot, name in ((2, "mult"), (3, "shift")):
        t = c.const(slot, name)
        c.dtype(t, DType.INT32, name)
        if t.dims != (DIV_TABLE_SIZE,):
            raise c.err(name, f"shape {t.dims}, expected ({DIV_TABLE_SIZE},): one per divisor code")
    # signed: a divisor code below its zero point divides by a negative value; -MULT_MAX keeps
    # INT32_MIN (SRDHM's one saturating operand) out
    m = c.const_values(c.t(2))
    bad = (m < -MULT_MAX) | (m > MULT_MAX)
    if bad.any():
        i = int(bad.argmax())
        raise c.err("mult", f"code {i - 128} multiplier {int(m[i])} outside [{-MULT_MAX}, {MULT_MAX}]")
    s = c.const_values(c.t(3))
    bad = (s < SHIFT_MIN) | (s > DIV_SHIFT_MAX)
    if bad.any():
        i = int(bad.argmax())
        raise c.err("shift", f"code {i - 128} shift {int(s[i])} outside [{SHIFT_MIN}, {DIV_SHIFT_MAX}]")
    c.offsets("a_offset", out="out_offset")
    c.param("b_zero_point", -128, 127)
    c.act()
