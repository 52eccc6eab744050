"""EspNNQuantizer: the PT2E quantizer for the ESP-NN delegate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn
from torch.fx import GraphModule, Node
from torchao.quantization.pt2e.quantizer import Quantizer

from ..errors import QuantizerConfigError
from .annotators import BY_TARGET
from .annotators.recurrent import tie_recurrent_steps
from .annotators.symmetric import symmetric_matmul_operands
from .config import EspNNQuantizationConfig
from .context import AnnotationContext, is_annotated, is_float_result
from .rewrites import rewrite_for_annotation
from .scope import ConfigScope

if TYPE_CHECKING:
    from collections.abc import Iterator


class EspNNQuantizer(Quantizer):  # type: ignore[misc]  # torchao is untyped
    """Annotates an exported graph with exactly the int8 scheme ESP-NN executes.

    ``EspNNQuantizer()`` quantizes the whole model with
    ``EspNNQuantizationConfig.default()``.  Per-region settings, most specific first:
    ``set_module_name(name, cfg)`` > ``set_module_type(type, cfg)`` > ``set_global(cfg)``;
    ``cfg=None`` leaves that region float.  Every annotation, fused activations and
    shared-qparams ops included, consults the config of each node it touches.

    ``EspNNQuantizer(is_qat=True)`` is the same annotation with fake-quantize specs
    (``EspNNQuantizationConfig.default(is_qat=True)``), for torchao's ``prepare_qat_pt2e``
    (see ``executorch_espnn.quantizer.prepare_qat``); a conv followed by a training-mode
    batch norm is then quantized after the batch norm, which ``prepare_qat_pt2e`` simulates
    folding and ``convert_pt2e`` folds.  Every config given to it must be a QAT config.
    """

    def __init__(self, config: EspNNQuantizationConfig | None = None, *, is_qat: bool = False) -> None:
        super().__init__()
        self.is_qat = bool(is_qat)
        self._global: EspNNQuantizationConfig | None = self._checked(
            config if config is not None else EspNNQuantizationConfig.default(is_qat=self.is_qat)
        )
        self._by_type: dict[type[nn.Module], EspNNQuantizationConfig | None] = {}
        self._by_name: dict[str, EspNNQuantizationConfig | None] = {}

    def set_global(self, config: EspNNQuantizationConfig | None) -> EspNNQuantizer:
        self._global = self._checked(config)
        return self

    def set_module_type(
        self, module_type: type[nn.Module], config: EspNNQuantizationConfig | None
    ) -> EspNNQuantizer:
        if not (isinstance(module_type, type) and issubclass(module_type, nn.Module)):
            raise TypeError(f"set_module_type expects an nn.Module subclass, got {module_type!r}")
        self._by_type[module_type] = self._checked(config)
        return self

    def set_module_name(
        self, module_name: str, config: EspNNQuantizationConfig | None
    ) -> EspNNQuantizer:
        if not isinstance(module_name, str):
            raise TypeError(
                f"set_module_name expects a qualified module name such as 'features.3', got {module_name!r}"
            )
        self._by_name[module_name] = self._checked(config)
        return self

    @property
    def scope(self) -> ConfigScope:
        return ConfigScope(self._global, dict(self._by_type), dict(self._by_name))

    def _checked(self, config: object) -> EspNNQuantizationConfig | None:
        return _checked(config, self.is_qat)

    def transform_for_annotation(self, model: GraphModule) -> GraphModule:
        """Rewrite what the delegate cannot take as it is into equivalent operators it can
        (``executorch_espnn.quantizer.rewrites``: batch norms without a convolution,
        ``unbind``, GRU/LSTM layers and cells unrolled into their steps, scaled dot product
        attention, rank-5/6 data movement), in the regions this quantizer quantizes."""
        scope = self.scope
        return rewrite_for_annotation(model, lambda node: scope.config_for(node) is not None)

    def annotate(self, model: GraphModule) -> GraphModule:
        ctx = AnnotationContext(self.scope)
        for node in _call_functions(model):
            annotator = BY_TARGET.get(node.target)  # type: ignore[call-overload]
            if annotator is None or is_annotated(node) or not is_float_result(node):
                continue
            cfg = ctx.config(node)
            if cfg is not None:
                annotator.annotate(node, cfg, ctx)
        tie_recurrent_steps(model)
        symmetric_matmul_operands(model)
        return model

    def validate(self, model: GraphModule) -> None:
        """Nothing to check: annotate() only ever emits the ESP-NN scheme."""


def _call_functions(model: GraphModule) -> Iterator[Node]:
    # list(): annotators never mutate the graph, but be robust to it anyway
    return (n for n in list(model.graph.nodes) if n.op == "call_function")


def _checked(config: object, is_qat: bool) -> EspNNQuantizationConfig | None:
    if config is not None and not isinstance(config, EspNNQuantizationConfig):
        raise TypeError(
            f"expected an EspNNQuantizationConfig or None, got {type(config).__name__}; "
            "build one with EspNNQuantizationConfig.default()"
        )
    if config is not None and config.is_qat != is_qat:
        raise QuantizerConfigError(
            "EspNNQuantizer(is_qat=True) takes QAT configs only: build them with "
            "EspNNQuantizationConfig.default(is_qat=True)" if is_qat else
            "a QAT config (fake quantizes) given to EspNNQuantizer() for calibration: use "
            "EspNNQuantizer(is_qat=True) with torchao's prepare_qat_pt2e, or "
            "EspNNQuantizationConfig.default() for calibration"
        )
    return config
