"""Unary activations as 256-entry lookup tables.

Each table entry is what the quantized program computes for that int8 code:
``quantize_out(f(dequantize_in(q)))``, with PyTorch's own float32 ``f`` and the
program's own quantize/dequantize.  The LUT is therefore exact for any elementwise
function; relu/relu6/hardtanh/clamp use it when they cannot fold into the op before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx import Node

from ..graph.names import FUSABLE_ACTIVATIONS, node_op, static_shape
from ..graph.qdq import qdq_params
from ..layout import nhwc
from ..payload import Opcode
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import lut_table


def aten_overload(name: str) -> Any:
    """torch.ops.aten.<op>.<overload> for a canonical name like "aten.gelu.default"."""
    ns, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, ns), op), overload)


@register
class Lut(OpLowering):
    targets = (
        *FUSABLE_ACTIVATIONS,  # on their own, when no operator before them takes them in
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
        node = unit.anchor
        if any(isinstance(a, Node) for a in (*node.args[1:], *node.kwargs.values())):
            raise Unsupported("activation with tensor-valued parameters")
        fn = aten_overload(node_op(node))
        rest = node.args[1:]
        emit_lut(unit, b, lambda t: fn(t, *rest, **node.kwargs))


def emit_lut(unit: Unit, b: PayloadBuilder, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Lower a unary elementwise unit as a LUT, in whatever layout its input already has."""
    x = b.operand(unit.inputs[0])
    assert x.qp is not None
    table = lut_table(fn, x.qp, qdq_params(unit.output))
    perm = b.any_layout(x, nhwc(x.rank))
    x_t = b.realize(x, perm)
    if static_shape(unit.output) != x.shape:
        raise Unsupported(f"output shape {static_shape(unit.output)} differs from the input's {x.shape}")
    _, out = b.define(unit.output, perm)
    b.emit(Opcode.LUT, [x_t, b.constant(table)], out)
