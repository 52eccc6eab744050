"""softmax: input observed, output fixed at scale 1/256, zero point -128 (ESP-NN's format)."""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node

from ..config import EspNNQuantizationConfig, softmax_output_qspec
from ..context import AnnotationContext, annotate
from .patterns import aten


class SoftmaxAnnotator:
    targets: frozenset[OpOverload] = frozenset({aten.softmax.int, aten._softmax.default})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x = node.args[0]
        if isinstance(x, Node):
            annotate(node, {x: ctx.act_input(x, cfg)}, softmax_output_qspec())
