"""Shared helpers the annotators use to write PT2E annotations consistently."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch.fx import Node
from torchao.quantization.pt2e.quantizer import (
    QuantizationAnnotation,
    QuantizationSpecBase,
    SharedQuantizationSpec,
)
from torchao.quantization.pt2e.quantizer.quantizer import Q_ANNOTATION_KEY

from .config import EspNNQuantizationConfig
from .scope import ConfigScope


def is_annotated(node: Node) -> bool:
    ann = node.meta.get(Q_ANNOTATION_KEY)
    return isinstance(ann, QuantizationAnnotation) and ann._annotated


def output_is_quantized(node: Node) -> bool:
    ann = node.meta.get(Q_ANNOTATION_KEY)
    return isinstance(ann, QuantizationAnnotation) and ann.output_qspec is not None


# what quantized_decomposed.quantize_per_tensor accepts (it upcasts 16-bit floats); a
# float64 tensor given to it fails when the converted model runs or is exported
QUANTIZABLE_DTYPES = frozenset({torch.float32, torch.float16, torch.bfloat16})


def is_float_tensor(node: Node) -> bool:
    """Whether ``node`` produces a floating-point tensor the int8 quantize ops accept
    (True when export recorded no value); float64 tensors stay float."""
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return val.dtype in QUANTIZABLE_DTYPES
    return val is None


def is_float_result(node: Node) -> bool:
    """``is_float_tensor``, also for an operator returning a list of tensors (split,
    chunk): True when every element is a quantizable float tensor."""
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return bool(val) and all(isinstance(v, torch.Tensor) and v.dtype in QUANTIZABLE_DTYPES for v in val)
    return is_float_tensor(node)


def annotate(
    node: Node,
    inputs: Mapping[Node, QuantizationSpecBase | None] | None = None,
    output: QuantizationSpecBase | None = None,
) -> None:
    """Mark ``node`` as handled: its input edges and output get the given specs.

    Inputs that are not float tensors (indices, masks) are never observed.
    """
    node.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map={
            k: v for k, v in (inputs or {}).items() if v is not None and is_float_tensor(k)
        },
        output_qspec=output,
        _annotated=True,
    )


@dataclass
class AnnotationContext:
    """Per-annotate() state: the config scope and a cache of per-node configs."""

    scope: ConfigScope
    _cache: dict[Node, EspNNQuantizationConfig | None] = field(default_factory=dict)

    def config(self, node: Node) -> EspNNQuantizationConfig | None:
        if node not in self._cache:
            self._cache[node] = self.scope.config_for(node)
        return self._cache[node]

    def act_input(self, producer: Node, cfg: EspNNQuantizationConfig) -> QuantizationSpecBase:
        """Spec for an activation input edge: reuse the producer's quantization when it
        has one (so a fixed-qparams output such as softmax's is not requantized), otherwise
        observe the edge with the config's activation observer."""
        if output_is_quantized(producer):
            return SharedQuantizationSpec(producer)
        return cfg.activation
