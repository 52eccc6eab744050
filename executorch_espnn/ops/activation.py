"""Unary activations as 256-entry lookup tables.

Each table entry is what the quantized program computes for that int8 code:
``quantize_out(f(dequantize_in(q)))``, with PyTorch's own float32 ``f`` and the
program's own quantize/dequantize.  The LUT is therefore exact for any elementwise
function; relu/relu6/hardtanh/clamp use it when they cannot fold into the op before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch.fx import Node

from ..lowering_graph import static_shape
from ..payload import Opcode
from . import OpLowering, Unit, Unsupported, register
from .common import lut_table

if TYPE_CHECKING:
    from ..payload_builder import PayloadBuilder


def aten_overload(name: str) -> Any:
    """torch.ops.aten.<op>.<overload> for a canonical name like "aten.gelu.default"."""
    ns, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, ns), op), overload)


@register
class Lut(OpLowering):
    targets = (
        "aten.relu.default",
        "aten.relu6.default",
        "aten.hardtanh.default",
        "aten.clamp.default",
        "aten.clamp_min.default",
        "aten.clamp_max.default",
        "aten.hardswish.default",
        "aten.hardsigmoid.default",
        "aten.sigmoid.default",
        "aten.tanh.default",
        "aten.silu.default",
        "aten.gelu.default",
        "aten.leaky_relu.default",
    )
    # to_edge decomposes these into several float ops; keep them whole so they stay one LUT
    preserve = ("aten.hardswish.default", "aten.hardsigmoid.default", "aten.silu.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        from ..lowering_graph import node_op

        node = unit.anchor
        if any(isinstance(a, Node) for a in (*node.args[1:], *node.kwargs.values())):
            raise Unsupported("activation with tensor-valued parameters")
        fn = aten_overload(node_op(node))
        rest = node.args[1:]
        emit_lut(unit, b, lambda t: fn(t, *rest, **node.kwargs))


def emit_lut(unit: Unit, b: PayloadBuilder, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Lower a unary elementwise unit as a LUT, in whatever layout its input already has."""
    from ..lowering_graph import qdq_params
    from ..payload_builder import nhwc

    x = b.operand(unit.inputs[0])
    assert x.qp is not None
    table = lut_table(fn, x.qp, qdq_params(unit.output))
    perm = b.any_layout(x, nhwc(x.rank))
    x_t = b.realize(x, perm)
    if static_shape(unit.output) != x.shape:
        raise Unsupported(f"output shape {static_shape(unit.output)} differs from the input's {x.shape}")
    _, out = b.define(unit.output, perm)
    b.emit(Opcode.LUT, [x_t, b.constant(table)], out)
