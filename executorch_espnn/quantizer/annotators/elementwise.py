"""Binary elementwise add and sub (with fused activation), mul and division: every tensor
input and the output observed separately (ESP-NN rescales each input to the output scale; sub
is its add with the second operand's multiplier negated)."""

from __future__ import annotations

import torch
from torch._ops import OpOverload
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import QuantizationSpecBase

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate, is_float_tensor
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


def _one_element_constant(node: Node) -> bool:
    """A lifted one-element constant (``x / torch.tensor(3.0)``): the lowering reads it as a
    number, so it stays float rather than being quantized to 8 bits."""
    val = node.meta.get("val")
    return node.op == "get_attr" and isinstance(val, torch.Tensor) and val.numel() == 1


class DivAnnotator:
    """``x / c`` for a number ``c`` (attention's ``/ sqrt(d)``): a unary function, a lookup
    table on the device.  ``x / y`` of two tensors (linear attention's normaliser): both
    operands and the result observed as add's are; the lowering delegates it when the
    divisor's observed range is never negative (DIV), and leaves it to the CPU otherwise."""

    targets: frozenset[OpOverload] = frozenset({aten.div.Tensor, aten.div_.Tensor})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        if node.kwargs.get("rounding_mode") is not None:
            return
        x, d = node.args[0], node.args[1]
        if not isinstance(x, Node) or not is_float_tensor(x):
            return
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            annotate(node, {x: ctx.act_input(x, cfg)}, cfg.activation)
        elif isinstance(d, Node) and is_float_tensor(d) and not _one_element_constant(d):
            # a relu/clamp after it folds into DIV's act_min/act_max, as after add
            out = annotate_output(node, cfg, ctx)
            annotate(node, {x: ctx.act_input(x, cfg), d: ctx.act_input(d, cfg)},
                     None if out is not node else cfg.activation)
