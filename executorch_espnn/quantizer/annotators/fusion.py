"""Activation fusion: a clamp-like activation that is the only user of conv/linear/add; and,
in quantization-aware training, a training-mode batch norm that is the only user of a conv.

Calibration (prepare_pt2e) folds batch norms into the convs before the quantizer annotates,
so it never sees one.  QAT (prepare_qat_pt2e) annotates first, then replaces each conv -> batch
norm it finds by a subgraph that simulates the fold (convert_pt2e folds it for good): the
output quantization must then sit after the batch norm (or its fused activation), and nothing
between the conv and the batch norm.
"""

from __future__ import annotations

from torch.fx import Node

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate, is_annotated
from .patterns import CLAMP_TARGETS, aten

# the conv targets torchao's QAT conv-bn fusion matches, and the batch norms it folds
_CONVS = frozenset({aten.conv1d.default, aten.conv2d.default})
_TRAINING_BATCH_NORMS = frozenset({aten.batch_norm.default})


def fusable_activation(node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> Node | None:
    """The activation to fuse into ``node``'s output, or None.

    Fusion needs the activation to be the sole consumer (otherwise the unclamped value
    is needed elsewhere) and the activation's own region to be quantized (a module left
    float never has an activation pulled out of it).  The fused output is observed with
    ``node``'s config: it is the output the fused op writes on the device.
    """
    if len(node.users) != 1:
        return None
    (user,) = node.users
    if (
        user.op != "call_function"
        or user.target not in CLAMP_TARGETS
        or not user.args
        or user.args[0] is not node
        or is_annotated(user)
        or ctx.config(user) is None
    ):
        return None
    return user


def batch_norm_after(node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> Node | None:
    """The training-mode batch norm that is the only user of conv ``node`` in QAT, or None
    (a batch norm calibration did not fold stays a float op of its own)."""
    if not cfg.is_qat or node.target not in _CONVS or len(node.users) != 1:
        return None
    (user,) = node.users
    if (
        user.op != "call_function"
        or user.target not in _TRAINING_BATCH_NORMS
        or not user.args
        or user.args[0] is not node
        or is_annotated(user)
        or ctx.config(user) is None
    ):
        return None
    return user


def annotate_output(node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> Node:
    """Give the output of ``node`` (or of its batch norm and/or fused activation) the
    activation spec.

    Returns the node that now carries the output quantization.
    """
    bn = batch_norm_after(node, cfg, ctx)
    tail = bn if bn is not None else node
    act = fusable_activation(tail, cfg, ctx)
    if bn is not None:
        # no input spec: the batch norm's statistics and affine parameters stay float
        annotate(bn, output=None if act is not None else cfg.activation)
    if act is None:
        return tail
    # The activation has no input spec: no q/dq may separate it from the op it is fused into.
    annotate(act, output=cfg.activation)
    return act
