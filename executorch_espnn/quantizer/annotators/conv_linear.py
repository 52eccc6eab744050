"""conv1d/conv2d (dense, depthwise, grouped, dilated), linear and the transposed convolutions:
weights per-channel int8 (axis 0 of the [out, in/groups, k...] or [out, in] weight; axis 1 of a
transposed convolution's [in, out/groups, k...] weight), int32 bias."""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import QuantizationSpecBase

from ..config import (
    EspNNQuantizationConfig,
    bias_qspec,
    transposed_bias_qspec,
    transposed_weight_qspec,
)
from ..context import AnnotationContext, annotate
from .fusion import annotate_output
from .patterns import arg, aten


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


class ConvTransposeAnnotator:
    """conv_transpose1d/2d: the weight is ``[in, out/groups, k...]``, so its output channels
    are axis 1; with groups > 1 that axis holds one group's output channels, and the scales
    are shared by the groups (output channel ``c`` has the scale of ``c % (out/groups)``,
    which the bias spec repeats once per group)."""

    targets: frozenset[OpOverload] = frozenset({
        aten.conv_transpose1d.default,
        aten.conv_transpose2d.input,
    })

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x, w = node.args[0], node.args[1]
        b = arg(node, 2, "bias")
        if not isinstance(x, Node) or not isinstance(w, Node):
            return
        groups = arg(node, 6, "groups", 1)
        if not isinstance(groups, int) or groups < 1:
            return  # a symbolic group count: leave the operator float
        inputs: dict[Node, QuantizationSpecBase | None] = {
            x: ctx.act_input(x, cfg),
            w: transposed_weight_qspec(cfg.weight),
        }
        if isinstance(b, Node):
            inputs[b] = transposed_bias_qspec(node, x, w, groups)
        out = annotate_output(node, cfg, ctx)
        annotate(node, inputs, None if out is not node else cfg.activation)
