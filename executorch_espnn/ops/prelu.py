"""PReLU with one slope or one per channel: PRELU, TFLite's int8 PRELU.

``y = x`` for ``x >= 0`` and ``alpha[c] * x`` below, in integers: with ``v = q + in_offset``,
``out = requant(v, pos)`` or ``requant(v * (alpha_q + alpha_offset), neg[c])``, then the output
offset.  The slope is int8 (the quantizer makes it symmetric per tensor); each slope element
has its own negative-side multiplier ``s_in * s_alpha / s_out``.  The positive-side multiplier
``s_in / s_out`` is usually above 1 (PReLU's output range is narrower than its input's), so
both may carry a left shift (``PRELU_SHIFT_MAX``).  The per-channel slope acts on dim 1 (the
channels), which the op reads as its input's last physical dim: NHWC for 4-D inputs,
``[N, L, C]`` for ``[N, C, L]``.
"""

from __future__ import annotations

import numpy as np
from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import node_arg, static_shape
from ..graph.qdq import qdq_params
from ..layout import Perm, nhwc
from ..payload import Opcode
from ..payload.format import PRELU_SHIFT_MAX
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import requant_ls


def channels_last(rank: int) -> Perm:
    """The order with dim 1 (PyTorch's channel dim) last: NHWC, ``[N, L, C]``, ``[N, C]``."""
    return (0, *range(2, rank), 1)


@register
class PRelu(OpLowering):
    targets = ("aten.prelu.default",)
    # to_edge would otherwise write it as gt / mul / where with a float slope
    preserve = ("aten.prelu.default",)

    def weight_nodes(self, node: Node, ctx: GraphContext) -> list[Node]:
        w = node.args[1]
        return [w] if isinstance(w, Node) and w.op == "call_function" else []

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        w = b.ctx.weight(node_arg(node, 1, "weight"), "the PReLU slope")
        if w.values.ndim != 1:
            raise Unsupported(f"the PReLU slope has shape {w.values.shape}; expected one value or one per channel")
        k = int(w.values.shape[0])
        if static_shape(unit.output) != x.shape:
            raise Unsupported(f"output shape {static_shape(unit.output)} differs from the input's {x.shape}")
        if k != 1 and (x.rank < 2 or x.shape[1] != k):
            raise Unsupported(f"{k} slopes for an input of shape {x.shape}; PReLU's slopes act on dim 1")
        qout = qdq_params(unit.output)
        pos_mult, pos_shift = requant_ls(x.qp.scale32 * qout.inv_scale32, "PReLU, x >= 0", PRELU_SHIFT_MAX)
        neg = [requant_ls(x.qp.scale32 * float(np.float32(s)) * qout.inv_scale32, f"PReLU, x < 0, slope {i}",
                          PRELU_SHIFT_MAX) for i, s in enumerate(w.scales.tolist())]
        perm = channels_last(x.rank) if k > 1 else b.any_layout(x, nhwc(x.rank))
        x_t = b.realize(x, perm)
        _, out = b.define(unit.output, perm)
        b.emit(
            Opcode.PRELU,
            [x_t, b.constant(w.values), b.int32s([m for m, _ in neg]), b.int32s([s for _, s in neg])],
            out,
            {"in_offset": -x.qp.zero_point, "alpha_offset": 0, "out_offset": qout.zero_point,
             "pos_mult": pos_mult, "pos_shift": pos_shift},
        )
