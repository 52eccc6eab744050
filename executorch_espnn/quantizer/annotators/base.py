"""The annotator interface: one small class per op pattern family, keyed by aten target."""

from __future__ import annotations

from typing import Protocol

from torch._ops import OpOverload
from torch.fx import Node

from ..config import EspNNQuantizationConfig
from ..context import AnnotationContext


class Annotator(Protocol):
    """Annotates the pattern anchored at ``node`` (a call to one of ``targets``).

    Called in topological order, only for nodes that are not yet annotated and whose
    config is not ``None``; an annotator may claim later nodes (fused activations).
    """

    targets: frozenset[OpOverload]

    def annotate(self, node: Node, cfg: EspNNQuantizationConfig, ctx: AnnotationContext) -> None:
        ...
