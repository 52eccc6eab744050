"""linear: FULLY_CONNECTED over the last dim, for inputs of any rank up to 4."""

from __future__ import annotations

from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import node_arg, static_shape
from ..graph.qdq import qdq_params
from ..layout import identity
from ..payload import Opcode
from ..payload.format import MAX_REDUCTION
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import act_range, channel_requant, quantize_bias


@register
class Linear(OpLowering):
    targets = ("aten.linear.default",)
    # to_edge would otherwise split it into permute + addmm (+ views for 3-D inputs)
    preserve = ("aten.linear.default",)
    fuses_activation = True

    def weight_nodes(self, node: Node, ctx: GraphContext) -> list[Node]:
        return [a for a in node.args[1:3] if isinstance(a, Node) and a.op == "call_function"]

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        w = b.ctx.weight(node.args[1], "the linear weight")
        if w.values.ndim != 2 or w.axis != 0:
            raise Unsupported("linear weights must be [out, in] quantized per output channel")
        n_out, k = w.values.shape
        if x.rank < 1 or x.shape[-1] != k:
            raise Unsupported(f"input {x.shape} does not end in the weight's {k} features")
        if k > MAX_REDUCTION:
            raise Unsupported(f"{k} input features exceed the engine's {MAX_REDUCTION}")
        qout = qdq_params(unit.output)
        out_shape = static_shape(unit.output)
        if out_shape != (*x.shape[:-1], n_out):
            raise Unsupported(f"unexpected output shape {out_shape}")
        acc_scales = x.qp.scale32 * w.scales
        mult, shift = channel_requant(acc_scales * qout.inv_scale32, "linear")
        bias = quantize_bias(b.ctx.bias(node_arg(node, 2, "bias", None), "the linear bias"), acc_scales,
                             "the linear bias")
        act_min, act_max = act_range(unit, qout)
        x_t = b.realize(x, identity(x.rank))
        _, out_t = b.define(unit.output, identity(len(out_shape)))
        b.emit(
            Opcode.FULLY_CONNECTED,
            [x_t, b.constant(w.values), None if bias is None else b.constant(bias), b.constant(mult),
             b.constant(shift)],
            out_t,
            {"in_offset": -x.qp.zero_point, "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max},
        )
