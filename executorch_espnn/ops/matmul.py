"""matmul / bmm / mm of two int8 activations: BATCH_MATMUL.

The second operand is handed to the engine transposed (``[..., N, K]``, a fully-connected
filter per batch), which costs nothing when it already is laid out that way: attention's
``q @ k.transpose(-2, -1)`` reads ``k`` as it is, since a transpose only relabels bytes.
Otherwise a ``TRANSPOSE`` makes that layout (``p @ v``).  Operands of lower rank are viewed
with leading unit dims; an operand whose batch dims are all 1 is read for every batch.
"""

from __future__ import annotations

from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import static_shape
from ..graph.qdq import qdq_params
from ..layout import identity
from ..payload import Opcode
from ..payload.format import MAX_MATMUL_DEPTH
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import act_range, requant


@register
class BatchMatmul(OpLowering):
    targets = ("aten.matmul.default", "aten.bmm.default", "aten.mm.default")
    # to_edge would turn a 4-D matmul into expand -> view -> bmm -> view
    preserve = ("aten.matmul.default",)
    fuses_activation = True

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        a, b = node.args[0], node.args[1]
        if not isinstance(a, Node) or not isinstance(b, Node):
            raise Unsupported("matmul of something other than two tensors")
        return [a, b]

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        va, vb = b.operand(unit.inputs[0]), b.operand(unit.inputs[1])
        assert va.qp is not None and vb.qp is not None
        if va.rank < 2 or vb.rank < 2:
            raise Unsupported("matmul with a vector (rank-1) operand")
        out_shape = static_shape(unit.output)
        r = len(out_shape)
        if r > 4:
            raise Unsupported(f"matmul of rank {r}; the engine handles rank <= 4")
        va = b.reshaped(va, (1,) * (r - va.rank) + va.shape) if va.rank < r else va
        vb = b.reshaped(vb, (1,) * (r - vb.rank) + vb.shape) if vb.rank < r else vb
        m, k = va.shape[-2:]
        k2, n = vb.shape[-2:]
        if k != k2 or out_shape[-2:] != (m, n):
            raise Unsupported(f"matmul of {va.shape} and {vb.shape} into {out_shape}")
        batch = out_shape[:-2]
        for v, name in ((va, "first"), (vb, "second")):
            if v.shape[:-2] != batch and any(d != 1 for d in v.shape[:-2]):
                raise Unsupported(f"the {name} operand's batch dims {v.shape[:-2]} broadcast partially to "
                                  f"{batch}; the engine broadcasts a whole batch of 1 only")
        if k > MAX_MATMUL_DEPTH:
            raise Unsupported(f"matmul over {k} terms; the engine's int32 accumulator allows {MAX_MATMUL_DEPTH}")
        qa, qb = va.qp, vb.qp  # not None: asserted above, before the reshapes
        assert qa is not None and qb is not None
        qout = qdq_params(unit.output)
        mult, shift = requant(qa.scale32 * qb.scale32 * qout.inv_scale32, "matmul")
        act_min, act_max = act_range(unit, qout)
        ta = b.realize(va, identity(r))
        tb = b.realize(vb, (*range(r - 2), r - 1, r - 2))
        _, out = b.define(unit.output, identity(r))
        b.emit(Opcode.BATCH_MATMUL, [ta, tb], out, {
            "a_offset": -qa.zero_point, "b_offset": -qb.zero_point, "out_mult": mult,
            "out_shift": shift, "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max,
        })
