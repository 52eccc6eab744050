"""add, sub, mul and div of two int8 tensors (same shape, or broadcasting dims of size 1); add,
sub, mul and division with a number as lookup tables.

sub is ESP-NN's add with the second operand's multiplier negated: ``a - alpha * b`` is
``a + (-alpha) * b``, and the add kernels (ANSI, ESP32-S3 assembly, ESP32-P4) take signed
multipliers: the doubling high multiply is a signed 32 x 32 -> 64 product rounded the same
way for either sign, and ``|(q + offset) << 20| < 2^28`` with ``|mult| <= 2^31 - 1`` never meets
its one saturating case (both operands ``INT32_MIN``).  No opcode of its own is needed.

``a / b`` of two tensors is DIV: the divisor's 256 int8 codes each get the requantisation of
``s_a / (s_b (code - z_b) s_out)`` (``quant_math.div_multipliers``), so the quotient is one
multiply of the numerator, rounded once, with no division on the device.  Delegated when the
divisor's quantized range is non-negative (zero point -128: linear attention's normaliser,
a sum of ReLU products plus an epsilon); its code worth 0 divides by zero as convert_pt2e's
program does: the int8 bounds for a non-zero numerator (``±inf``), code 0 for ``0 / 0`` (the
int8 cast of its NaN).
"""

from __future__ import annotations

import math

import torch
from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import clamp_bounds, node_arg, node_op, static_shape
from ..graph.qdq import qdq_params
from ..layout import Perm, nhwc
from ..payload import Opcode
from ..payload_builder import PayloadBuilder, Value
from ..quant_math import add_params, div_multipliers
from ..unsupported import Unsupported
from .activation import aten_overload, emit_lut
from .base import OpLowering, Unit, register
from .common import act_range, requant

ADD_LEFT_SHIFT = 20  # TFLite's choice for int8: headroom for the rescaled operands


def _number(arg: object, ctx: GraphContext) -> torch.Tensor | float | None:
    """``arg`` when it is a number (a literal, or a lifted one-element float constant)."""
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return arg
    if isinstance(arg, Node) and ctx.is_constant(arg):
        t = ctx.constant(arg)
        if t is not None and t.numel() == 1 and t.dtype.is_floating_point:
            return t
    return None


def _operands(node: Node, ctx: GraphContext) -> list[Node]:
    """Both tensor operands, or the one tensor operand when the other is a number (the
    second, or for sub the first: ``c - x``, which is how to_edge writes ``rsub``)."""
    a, b = node.args[0], node.args[1]
    if isinstance(a, Node) and _number(b, ctx) is not None:
        return [a]
    if _subtracts(node) and isinstance(b, Node) and _number(a, ctx) is not None:
        return [b]
    if not isinstance(a, Node):
        raise Unsupported("the first operand is not a tensor")
    if isinstance(b, Node):
        return [a, b]
    raise Unsupported("operands are neither two tensors nor a tensor and a number")


def _subtracts(node: Node) -> bool:
    return node_op(node).startswith(("aten.sub", "aten.rsub"))


def _scalar_lut(unit: Unit, b: PayloadBuilder) -> bool:
    """x + c, x - c, c - x, x * c and x / c are unary functions: one exact LUT (with any fused
    clamp applied), computed with PyTorch's own operator on the operands as the graph
    passes them."""
    node = unit.anchor
    if len(unit.inputs) != 1:
        return False
    name = node_op(node)
    a0, a1 = node.args[0], node.args[1]
    kwargs = {"alpha": _alpha(node)} if name.startswith(("aten.add", "aten.sub", "aten.rsub")) else {}
    op = aten_overload(name if name.endswith(".Tensor") else name.replace(".Scalar", ".Tensor"))
    if name.startswith("aten.rsub"):
        op = aten_overload("aten.rsub.Scalar")
    c0, c1 = _number(a0, b.ctx), _number(a1, b.ctx)
    bounds = [clamp_bounds(f) for f in unit.fused]

    def fn(t: torch.Tensor) -> torch.Tensor:
        # the tensor takes the place of the operand that is not a number
        y: torch.Tensor = op(t, c1, **kwargs) if c1 is not None else op(c0, t, **kwargs)
        for lo, hi in bounds:
            y = torch.clamp(y, lo, hi)
        return y

    emit_lut(unit, b, fn)
    return True


def _broadcast_operands(unit: Unit, b: PayloadBuilder) -> tuple[Value, Value, Perm, tuple[int, ...]]:
    out_shape = static_shape(unit.output)
    r = len(out_shape)
    vals = []
    for dq in unit.inputs:
        v = b.operand(dq)
        if v.rank > r:
            raise Unsupported(f"operand {v.shape} has more dims than the result {out_shape}")
        if v.rank < r:
            v = b.reshaped(v, (1,) * (r - v.rank) + v.shape)
        for d, o in zip(v.shape, out_shape, strict=True):
            if d not in (1, o):
                raise Unsupported(f"operand {v.shape} does not broadcast to {out_shape}")
        vals.append(v)
    full = [v for v in vals if v.shape == out_shape]
    perm = b.any_layout(full[0], nhwc(r)) if full else nhwc(r)
    return vals[0], vals[1], perm, out_shape


def _alpha(node: Node) -> float:
    """add's and sub's ``alpha`` (a ± alpha * b): a non-zero number, folded into b's rescale
    (a negative one, or sub, makes b's multiplier negative)."""
    alpha = node_arg(node, 2, "alpha", 1)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha == 0:
        raise Unsupported(f"{node_op(node)} with alpha {alpha!r}; only a non-zero finite number is delegated")
    return float(alpha)


def _emit_add(unit: Unit, b: PayloadBuilder, sign: float, what: str) -> None:
    """ADD of the unit's two operands: ``a + sign * alpha * b``."""
    va, vb, perm, shape = _broadcast_operands(unit, b)
    assert va.qp is not None and vb.qp is not None
    qout = qdq_params(unit.output)
    # alpha (and sub's sign) scale the second operand's real value, i.e. its scale
    scale_b = vb.qp.scale * _alpha(unit.anchor) * sign
    twice_max = 2.0 * max(va.qp.scale, abs(scale_b))
    requant(va.qp.scale / twice_max, f"{what}, first operand")
    requant(abs(scale_b) / twice_max, f"{what}, second operand")
    requant(twice_max / ((1 << ADD_LEFT_SHIFT) * qout.scale), f"{what}, output")
    p = add_params(va.qp.scale, scale_b, qout.scale, ADD_LEFT_SHIFT)
    act_min, act_max = act_range(unit, qout)
    ta, tb = b.realize(va, perm), b.realize(vb, perm)
    _, out = b.define(unit.output, perm, shape)
    b.emit(Opcode.ADD, [ta, tb], out, {
        "a_offset": -va.qp.zero_point, "b_offset": -vb.qp.zero_point, **p,
        "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max,
    })


@register
class Add(OpLowering):
    targets = ("aten.add.Tensor", "aten.add.Scalar")
    fuses_activation = True

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        _alpha(node)
        return _operands(node, ctx)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        if _scalar_lut(unit, b):
            return
        _emit_add(unit, b, 1.0, "add")


@register
class Sub(OpLowering):
    """a - alpha * b as ADD with b's multiplier negated; x - c and c - x (rsub) as a LUT."""

    targets = ("aten.sub.Tensor", "aten.sub.Scalar", "aten.rsub.Scalar")
    fuses_activation = True

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        _alpha(node)
        return _operands(node, ctx)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        if _scalar_lut(unit, b):
            return
        if node_op(unit.anchor).startswith("aten.rsub"):  # pragma: no cover - rsub takes a number
            raise Unsupported("rsub of two tensors")
        _emit_add(unit, b, -1.0, "sub")


@register
class Mul(OpLowering):
    targets = ("aten.mul.Tensor", "aten.mul.Scalar")
    fuses_activation = True

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        return _operands(node, ctx)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        if _scalar_lut(unit, b):
            return
        va, vb, perm, shape = _broadcast_operands(unit, b)
        assert va.qp is not None and vb.qp is not None
        qout = qdq_params(unit.output)
        mult, shift = requant(va.qp.scale32 * vb.qp.scale32 * qout.inv_scale32, "mul")
        act_min, act_max = act_range(unit, qout)
        ta, tb = b.realize(va, perm), b.realize(vb, perm)
        _, out = b.define(unit.output, perm, shape)
        b.emit(Opcode.MUL, [ta, tb], out, {
            "a_offset": -va.qp.zero_point, "b_offset": -vb.qp.zero_point, "out_mult": mult, "out_shift": shift,
            "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max,
        })


@register
class Div(OpLowering):
    """x / c for a number c: a LUT; a / b of two tensors with a non-negative divisor: DIV."""

    targets = ("aten.div.Tensor", "aten.div.Scalar")
    fuses_activation = True

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        if node.kwargs.get("rounding_mode") is not None:
            raise Unsupported(f"division with rounding_mode={node.kwargs['rounding_mode']!r}")
        if _number(node.args[0], ctx) is not None:
            raise Unsupported("a number divided by a tensor; only a tensor divided by a number or by a "
                              "non-negative tensor is delegated")
        return _operands(node, ctx)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        if _scalar_lut(unit, b):
            return
        va, vb, perm, shape = _broadcast_operands(unit, b)
        assert va.qp is not None and vb.qp is not None
        if vb.qp.zero_point != -128:
            lo = vb.qp.scale32 * (-128 - vb.qp.zero_point)
            raise Unsupported(
                f"division by a tensor that may be negative (its int8 range starts at {lo:.4g}, zero point "
                f"{vb.qp.zero_point}); only a divisor that is never negative (zero point -128) is delegated")
        qout = qdq_params(unit.output)
        mult, shift = div_multipliers(va.qp.scale32 / vb.qp.scale32 * qout.inv_scale32, vb.qp.zero_point)
        act_min, act_max = act_range(unit, qout)
        ta, tb = b.realize(va, perm), b.realize(vb, perm)
        _, out = b.define(unit.output, perm, shape)
        b.emit(Opcode.DIV, [ta, tb, b.int32s(mult), b.int32s(shift)], out, {
            "a_offset": -va.qp.zero_point, "b_zero_point": vb.qp.zero_point, "out_offset": qout.zero_point,
            "act_min": act_min, "act_max": act_max,
        })
