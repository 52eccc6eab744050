"""PReLU: the input and the output observed separately, the slope (``weight``, one value or
one per channel) int8 symmetric per tensor, as TFLite's int8 PRELU takes an int8 alpha."""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node

from ..config import EspNNQuantizationConfig, slope_qspec
from ..context import AnnotationContext, annotate
from .patterns import aten


class PReluAnnotator:
    targets: frozenset[OpOverload] = frozenset({aten.prelu.default})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x, alpha = node.args[0], node.args[1]
        if not isinstance(x, Node) or not isinstance(alpha, Node):
            return
        annotate(node, {x: ctx.act_input(x, cfg), alpha: slope_qspec(cfg.is_qat)}, cfg.activation)
