"""Binary elementwise add and sub (with fused activation), mul and division by a number:
every tensor input and the output observed separately (ESP-NN rescales each input to the
output scale; sub is its add with the second operand's multiplier negated)."""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import QuantizationSpecBase

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate
from .fusion import annotate_output
from .patterns import aten


def _tensor_inputs(
    node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext
) -> dict[Node, QuantizationSpecBase | None]:
    return {a: ctx.act_input(a, cfg) for a in node.args[:2] if isinstance(a, Node)}


class AddAnnotator:
    targets: frozenset[OpOverload] = frozenset({aten.add.Tensor, aten.add_.Tensor})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        inputs = _tensor_inputs(node, cfg, ctx)
        out = annotate_output(node, cfg, ctx)
        annotate(node, inputs, None if out is not node else cfg.activation)


class SubAnnotator(AddAnnotator):
    """a - b, a - c, c - a (rsub): annotated as add is."""

    targets: frozenset[OpOverload] = frozenset({
        aten.sub.Tensor,
        aten.sub_.Tensor,
        aten.sub.Scalar,
        aten.rsub.Tensor,
        aten.rsub.Scalar,
    })


class MulAnnotator:
    targets: frozenset[OpOverload] = frozenset({aten.mul.Tensor, aten.mul_.Tensor})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        annotate(node, _tensor_inputs(node, cfg, ctx), cfg.activation)


class DivAnnotator:
    """``x / c`` for a number ``c`` (attention's ``/ sqrt(d)``): a unary function, a lookup
    table on the device.  A tensor divisor stays float."""

    targets: frozenset[OpOverload] = frozenset({aten.div.Tensor, aten.div_.Tensor})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x, d = node.args[0], node.args[1]
        if isinstance(x, Node) and isinstance(d, (int, float)) and not isinstance(d, bool):
            annotate(node, {x: ctx.act_input(x, cfg)}, cfg.activation)
