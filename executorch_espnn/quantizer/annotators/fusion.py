"""Activation fusion: a clamp-like activation that is the only user of conv/linear/add."""

from __future__ import annotations

from torch.fx import Node

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext, annotate, is_annotated
from .patterns import CLAMP_TARGETS


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


def annotate_output(node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> Node:
    """Give the output of ``node`` (or of its fused activation) the activation spec.

    Returns the node that now carries the output quantization.
    """
    act = fusable_activation(node, cfg, ctx)
    if act is None:
        return node
    # The activation has no input spec: no q/dq may separate it from the op it is fused into.
    annotate(act, output=cfg.activation)
    return act
