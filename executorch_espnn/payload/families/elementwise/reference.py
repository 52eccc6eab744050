"""ADD and MUL with ESP-NN's arithmetic, DIV with its per-divisor-code multipliers; numpy-style
broadcasting of size-1 dims."""

from __future__ import annotations

import numpy as np

from ....quant_math import I64, rdbp, requant, requant_ls, srdhm
from ...format import Opcode
from ..kernel_common import as_i64, clamp_to_int8
from ..kernel_registry import OpContext, kernel


def _operands(ctx: OpContext) -> tuple[I64, I64]:
    shape = ctx.output.shape
    a = np.broadcast_to(as_i64(ctx.x(0)), shape)
    b = np.broadcast_to(as_i64(ctx.x(1)), shape)
    return a, b


@kernel(Opcode.ADD)
def add(ctx: OpContext) -> None:
    p = ctx.param
    a, b = _operands(ctx)
    ls = p("left_shift")
    va = rdbp(srdhm((a + p("a_offset")) << ls, p("a_mult")), -p("a_shift"))
    vb = rdbp(srdhm((b + p("b_offset")) << ls, p("b_mult")), -p("b_shift"))
    v = rdbp(srdhm(va + vb, p("out_mult")), -p("out_shift")) + p("out_offset")
    ctx.output[...] = clamp_to_int8(v, p("act_min"), p("act_max"))


@kernel(Opcode.MUL)
def mul(ctx: OpContext) -> None:
    p = ctx.param
    a, b = _operands(ctx)
    prod = (a + p("a_offset")) * (b + p("b_offset"))
    v = requant(prod, p("out_mult"), p("out_shift")) + p("out_offset")
    ctx.output[...] = clamp_to_int8(v, p("act_min"), p("act_max"))


@kernel(Opcode.DIV)
def div(ctx: OpContext) -> None:
    """``a / b``: the numerator times the multiplier of the divisor's code (``b + 128``)."""
    p = ctx.param
    a, b = _operands(ctx)
    code = b + 128
    mult, shift = as_i64(ctx.x(2))[code], as_i64(ctx.x(3))[code]
    num = a + p("a_offset")
    v = requant_ls(num, mult, shift) + p("out_offset")
    # 0 / 0: PyTorch's NaN, which quantize_per_tensor's cast turns into code 0
    v = np.where((num == 0) & (b == p("b_zero_point")), 0, v)
    ctx.output[...] = clamp_to_int8(v, p("act_min"), p("act_max"))
