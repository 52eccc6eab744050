"""Layer norm and activation x activation matrix products: every activation input observed
(or sharing its producer's quantization), the output with its own observer.  Layer norm's
weight and bias stay float: the lowering turns them into per-channel integer constants."""

from __future__ import annotations

from torch._ops import OpOverload
from torch.fx import Node

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate
from .patterns import aten
from .symmetric import MATMUL_TARGETS


class LayerNormAnnotator:
    targets: frozenset[OpOverload] = frozenset({aten.layer_norm.default})

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        x = node.args[0]
        if isinstance(x, Node):
            annotate(node, {x: ctx.act_input(x, cfg)}, cfg.activation)


class MatmulAnnotator:
    """``a @ b`` with both operands activations (attention's ``q @ k^T`` and ``p @ v``);
    a constant operand is quantized per tensor like an activation.

    After every node is annotated, ``symmetric.symmetric_matmul_operands`` makes both operands
    symmetric (zero point 0) where ESP-NN's S3 s8 MAC path then runs faster (K >= 64, aligned
    rows) and neither is non-negative or fixed: ``q @ k^T`` with a head dim >= 64."""

    targets: frozenset[OpOverload] = MATMUL_TARGETS

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        a, b = node.args[0], node.args[1]
        if isinstance(a, Node) and isinstance(b, Node):
            annotate(node, {a: ctx.act_input(a, cfg), b: ctx.act_input(b, cfg)}, cfg.activation)
