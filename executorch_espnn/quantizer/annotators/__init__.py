"""The annotator registry: one annotator per op pattern family, looked up by aten target."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from torch._ops import OpOverload

from .base import Annotator
from .conv_linear import ConvLinearAnnotator, ConvTransposeAnnotator
from .elementwise import AddAnnotator, DivAnnotator, MulAnnotator, SubAnnotator
from .norm_matmul import LayerNormAnnotator, MatmulAnnotator
from .prelu import PReluAnnotator
from .shared import CatAnnotator, MeanAnnotator, SharedInputAnnotator, SplitAnnotator
from .softmax import SoftmaxAnnotator
from .unary import UnaryAnnotator

ANNOTATORS: tuple[Annotator, ...] = (
    ConvLinearAnnotator(),
    ConvTransposeAnnotator(),
    AddAnnotator(),
    SubAnnotator(),
    MulAnnotator(),
    DivAnnotator(),
    LayerNormAnnotator(),
    MatmulAnnotator(),
    SharedInputAnnotator(),
    MeanAnnotator(),
    CatAnnotator(),
    SplitAnnotator(),
    SoftmaxAnnotator(),
    PReluAnnotator(),
    UnaryAnnotator(),
)


def _by_target(annotators: tuple[Annotator, ...]) -> Mapping[OpOverload, Annotator]:
    table: dict[OpOverload, Annotator] = {}
    for a in annotators:
        for t in a.targets:
            if t in table:
                raise RuntimeError(f"{t} is claimed by two annotators")
            table[t] = a
    return MappingProxyType(table)


BY_TARGET: Mapping[OpOverload, Annotator] = _by_target(ANNOTATORS)

__all__ = ["ANNOTATORS", "BY_TARGET", "Annotator"]
