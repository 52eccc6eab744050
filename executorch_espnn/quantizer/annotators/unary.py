"""Unary activations that run as 256-entry lookup tables, and clamp-like activations that
could not be fused into a producer: input observed, output with its own observer.

sigmoid and tanh deliberately get an observed output rather than TFLite's fixed
1/256 and 1/128 scales: a table maps any int8 input to any int8 output, so the
observed range (often much narrower than (0, 1) or (-1, 1)) buys resolution for free.
"""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate
from .patterns import CLAMP_TARGETS, aten

LUT_TARGETS: frozenset[OpOverload] = frozenset({
    aten.hardswish.default,
    aten.hardswish_.default,
    aten.sigmoid.default,
    aten.sigmoid_.default,
    aten.tanh.default,
    aten.tanh_.default,
    aten.silu.default,
    aten.silu_.default,
    aten.gelu.default,
    aten.hardsigmoid.default,
    aten.hardsigmoid_.default,
    aten.leaky_relu.default,
    aten.leaky_relu_.default,
})


class UnaryAnnotator:
    targets: frozenset[OpOverload] = LUT_TARGETS | CLAMP_TARGETS

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x = node.args[0]
        if isinstance(x, Node):
            annotate(node, {x: ctx.act_input(x, cfg)}, cfg.activation)
