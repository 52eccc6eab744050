"""conv1d/conv2d (dense, depthwise, grouped, dilated) and linear: weights per-channel int8
(axis 0 of the [out, in/groups, k...] or [out, in] weight), int32 bias."""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import QuantizationSpecBase

from ..config import EspNNQuantizationConfig, bias_qspec
from ..context import AnnotationContext, annotate
from .fusion import annotate_output
from .patterns import aten


class ConvLinearAnnotator:
    targets: frozenset[OpOverload] = frozenset({
        aten.conv1d.default,
        aten.conv1d.padding,
        aten.conv2d.default,
        aten.conv2d.padding,
        aten.linear.default,
    })

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x, w = node.args[0], node.args[1]
        b = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
        if not isinstance(x, Node) or not isinstance(w, Node):
            return
        inputs: dict[Node, QuantizationSpecBase | None] = {
            x: ctx.act_input(x, cfg),
            w: cfg.weight,
        }
        if isinstance(b, Node):
            inputs[b] = bias_qspec(node, x, w)
        out = annotate_output(node, cfg, ctx)
        annotate(node, inputs, None if out is not node else cfg.activation)
