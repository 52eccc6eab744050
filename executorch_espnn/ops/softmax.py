"""softmax over the dim that is contiguous in the payload layout (ESP-NN's int8 softmax)."""

from __future__ import annotations

import numpy as np

from ..graph.names import node_arg, node_op
from ..graph.qdq import qdq_params
from ..layout import identity, nhwc
from ..payload import Opcode
from ..payload.format import (
    SOFTMAX_MAX_ROW,
    SOFTMAX_OUT_SCALE,
    SOFTMAX_OUT_ZERO_POINT,
    SOFTMAX_SHIFT_MAX,
)
from ..payload_builder import PayloadBuilder
from ..quant_math import softmax_params
from ..scratch import softmax_scratch
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import normalize_dim


@register
class Softmax(OpLowering):
    targets = ("aten._softmax.default", "aten.softmax.int")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if node_op(node) == "aten._softmax.default" and node_arg(node, 2, "half_to_float", False):
            raise Unsupported("softmax with half_to_float")
        if node_op(node) == "aten.softmax.int" and node_arg(node, 2, "dtype", None) is not None:
            raise Unsupported("softmax with a dtype argument")
        if x.rank < 1:
            raise Unsupported("softmax of a scalar")
        dim = normalize_dim(node_arg(node, 1, "dim"), x.rank)
        if dim == x.rank - 1:
            perm = identity(x.rank)
        elif x.rank == 4 and dim == 1:
            perm = nhwc(4)  # channels are the contiguous dim of NHWC
        else:
            raise Unsupported(
                f"softmax over dim {dim} of a rank-{x.rank} tensor: ESP-NN's softmax runs over the "
                "contiguous last dim (the last dim, or the channels of a 4-D tensor)"
            )
        qout = qdq_params(unit.output)
        if np.float32(qout.scale) != np.float32(SOFTMAX_OUT_SCALE) or qout.zero_point != SOFTMAX_OUT_ZERO_POINT:
            raise Unsupported(
                f"softmax output is quantized with scale {qout.scale:g}, zero point {qout.zero_point}; "
                "ESP-NN's int8 softmax produces scale 1/256, zero point -128"
            )
        try:
            mult, shift, diff_min = softmax_params(x.qp.scale)
        except ValueError as e:
            raise Unsupported(f"softmax input scale {x.qp.scale:g} is outside the kernel's range: {e}") from None
        if not 0 <= shift <= SOFTMAX_SHIFT_MAX or diff_min > 0 or min(-diff_min, 255) << shift > 2**31 - 1:
            raise Unsupported(
                f"softmax input scale {x.qp.scale:g} gives shift {shift}, diff_min {diff_min}, beyond the "
                "kernel's int32 range"
            )
        row = x.shape[perm[-1]]
        if row > SOFTMAX_MAX_ROW:
            raise Unsupported(
                f"softmax over {row} values; the int8 kernel's int32 sum of exponentials allows {SOFTMAX_MAX_ROW}"
            )
        x_t = b.realize(x, perm)
        _, out = b.define(unit.output, perm)
        b.emit(Opcode.SOFTMAX, [x_t], out, {"mult": mult, "shift": shift, "diff_min": diff_min},
               softmax_scratch(b.target, row))
