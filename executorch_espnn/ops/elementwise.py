"""add and mul of two int8 tensors (same shape, or broadcasting dims of size 1); add, mul and
div with a number as lookup tables."""

from __future__ import annotations

import torch
from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import clamp_bounds, node_arg, node_op, static_shape
from ..graph.qdq import qdq_params
from ..layout import Perm, nhwc
from ..payload import Opcode
from ..payload_builder import PayloadBuilder, Value
from ..quant_math import add_params
from ..unsupported import Unsupported
from .activation import aten_overload, emit_lut
from .base import OpLowering, Unit, register
from .common import act_range, requant

ADD_LEFT_SHIFT = 20  # TFLite's choice for int8: headroom for the rescaled operands


def _scalar(node: Node, ctx: GraphContext) -> torch.Tensor | float | None:
    """The second operand when it is a number (a literal, or a lifted one-element constant)."""
    b = node.args[1]
    if isinstance(b, (int, float)) and not isinstance(b, bool):
        return b
    if isinstance(b, Node) and ctx.is_constant(b):
        t = ctx.constant(b)
        if t is not None and t.numel() == 1 and t.dtype.is_floating_point:
            return t
    return None


def _operands(node: Node, ctx: GraphContext) -> list[Node]:
    """Both tensor operands, or the one tensor operand when the other is a number."""
    a, b = node.args[0], node.args[1]
    if not isinstance(a, Node):
        raise Unsupported("the first operand is not a tensor")
    if _scalar(node, ctx) is not None:
        return [a]
    if isinstance(b, Node):
        return [a, b]
    raise Unsupported("operands are neither two tensors nor a tensor and a number")


_SCALAR_OPS = {"aten.add": "aten.add.Tensor", "aten.mul": "aten.mul.Tensor", "aten.div": "aten.div.Tensor"}


def _scalar_lut(unit: Unit, b: PayloadBuilder) -> bool:
    """x + c, x * c and x / c are unary functions: one exact LUT (with any fused clamp
    applied), computed with PyTorch's own float32 operator."""
    node = unit.anchor
    if len(unit.inputs) != 1:
        return False
    family = node_op(node).rsplit(".", 1)[0]
    is_add = family == "aten.add"
    op = aten_overload(_SCALAR_OPS[family])
    scalar = _scalar(node, b.ctx)
    if scalar is None:  # pragma: no cover - _operands returned one input only for a number
        raise Unsupported("second operand is not a number")
    if is_add:
        scalar = scalar * _alpha(node)
    bounds = [clamp_bounds(f) for f in unit.fused]

    def fn(t: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = op(t, scalar)
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
    """add's ``alpha`` (a + alpha * b); a positive number folds into b's rescale."""
    alpha = node_arg(node, 2, "alpha", 1)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not alpha > 0:
        raise Unsupported(f"add with alpha {alpha!r}; only a positive number is delegated")
    return float(alpha)


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
        va, vb, perm, shape = _broadcast_operands(unit, b)
        assert va.qp is not None and vb.qp is not None
        qout = qdq_params(unit.output)
        # a + alpha * b: alpha scales the second operand's real value, i.e. its scale
        scale_b = vb.qp.scale * _alpha(unit.anchor)
        twice_max = 2.0 * max(va.qp.scale, scale_b)
        requant(va.qp.scale / twice_max, "add, first operand")
        requant(scale_b / twice_max, "add, second operand")
        requant(twice_max / ((1 << ADD_LEFT_SHIFT) * qout.scale), "add, output")
        p = add_params(va.qp.scale, scale_b, qout.scale, ADD_LEFT_SHIFT)
        act_min, act_max = act_range(unit, qout)
        ta, tb = b.realize(va, perm), b.realize(vb, perm)
        _, out = b.define(unit.output, perm, shape)
        b.emit(Opcode.ADD, [ta, tb], out, {
            "a_offset": -va.qp.zero_point, "b_offset": -vb.qp.zero_point, **p,
            "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max,
        })


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
    """x / c for a number c: a LUT (division by a tensor has no kernel)."""

    targets = ("aten.div.Tensor", "aten.div.Scalar")

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        if node.kwargs.get("rounding_mode") is not None:
            raise Unsupported(f"division with rounding_mode={node.kwargs['rounding_mode']!r}")
        if _scalar(node, ctx) is None:
            raise Unsupported("division by a tensor; only division by a number is delegated (as a lookup table)")
        return _operands(node, ctx)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        if not _scalar_lut(unit, b):  # pragma: no cover - activation_args admits numbers only
            raise Unsupported("division by a tensor")
