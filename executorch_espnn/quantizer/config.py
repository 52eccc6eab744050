"""The quantization scheme ESP-NN executes, as PT2E quantization specs.

ESP-NN runs int8 activations with a per-tensor affine quantisation (offsets are applied
by the kernels), int8 weights that are symmetric and per output channel (the conv,
depthwise and fully-connected kernels take one multiplier/shift per output channel and
no filter offset for conv), and int32 biases expressed in the accumulator's scale
(input scale * weight scale of the channel, zero point 0).  A config may only change
*how* the ranges are observed, never the numeric scheme: anything else would produce
a graph the delegate cannot execute.

Observer choice (a measured decision):
  * Activations use ``MinMaxObserver`` by default, ``HistogramObserver`` with
    ``observer="histogram"``.  Measured on a 6-layer conv net (32x32 input), a single
    conv and a keyword-spotting style MLP, with 1/4/16 calibration batches and 4-12
    seeds each, the median output SQNR of the two differs by at most 0.3 dB; per tensor
    (100k samples, Gaussian/Laplace/heavy-tailed) the histogram's L2 range search gains
    0.4-0.9 dB.  What dominates with MCU-sized calibration sets is range
    underestimation from too few samples (single conv: median 23 dB with 1 batch,
    40 dB with 16), which no observer fixes.  Min/max is ~2x cheaper to calibrate,
    never clips a value it has seen, and matches what TFLite's converter does (the
    baseline ESP-NN users compare against), so it is the default.
  * Weights always use ``PerChannelMinMaxObserver``: weights are known exactly, so
    the full range of every channel is representable with no clipping.

Quantization-aware training (``default(is_qat=True)``, ``EspNNQuantizer(is_qat=True)``,
torchao's ``prepare_qat_pt2e``): the same numeric scheme, observed by fake-quantize modules
that round in the forward pass and pass gradients straight through.  Activations:
``FusedMovingAvgObsFakeQuantize`` over a moving-average min/max (the range settles while the
weights train; torch's default QAT activation observer).  Weights: the same fused fake
quantize over a per-channel min/max with averaging constant 1, i.e. the current weights'
own full range at every step, as the PTQ weight observer gives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.fx import Node
from torchao.quantization.pt2e import (
    FakeQuantize,
    FakeQuantizeBase,
    FusedMovingAvgObsFakeQuantize,
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    PerChannelMinMaxObserver,
)
from torchao.quantization.pt2e.quantizer import (
    DerivedQuantizationSpec,
    FixedQParamsQuantizationSpec,
    QuantizationSpec,
)

from ..errors import QuantizerConfigError

ACT_QMIN = -128
ACT_QMAX = 127
WEIGHT_QMIN = -127
WEIGHT_QMAX = 127
BIAS_QMIN = -(2**31)
BIAS_QMAX = 2**31 - 1

#: ESP-NN's softmax writes its output with this fixed quantisation.
SOFTMAX_SCALE = 1.0 / 256.0
SOFTMAX_ZERO_POINT = -128

ObserverKind = Literal["histogram", "minmax"]
_ACT_OBSERVERS: dict[str, Callable[..., Any]] = {
    "histogram": HistogramObserver,
    "minmax": MinMaxObserver,
}


# One constructor object each, so that two default(is_qat=True) configs compare equal.
_QAT_ACTIVATION = FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver)
_QAT_WEIGHT = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, averaging_constant=1.0
)


def activation_qspec(observer: ObserverKind = "minmax", is_qat: bool = False) -> QuantizationSpec:
    """int8 per-tensor affine activations over the full [-128, 127] range."""
    ctr: Callable[..., Any]
    if is_qat:
        if observer != "minmax":
            raise QuantizerConfigError(
                f"observer={observer!r} is a calibration (PTQ) choice; quantization-aware training "
                "observes moving-average min/max ranges: leave observer at its default with is_qat=True"
            )
        ctr = _QAT_ACTIVATION
    else:
        try:
            ctr = _ACT_OBSERVERS[observer]
        except KeyError:
            raise QuantizerConfigError(
                f"unknown activation observer {observer!r}; choose one of {sorted(_ACT_OBSERVERS)}"
            ) from None
    return QuantizationSpec(
        dtype=torch.int8,
        quant_min=ACT_QMIN,
        quant_max=ACT_QMAX,
        qscheme=torch.per_tensor_affine,
        observer_or_fake_quant_ctr=ctr,
    )


def weight_qspec(is_qat: bool = False) -> QuantizationSpec:
    """int8 symmetric weights, one scale per output channel (axis 0 for OIHW and [out, in])."""
    ctr: Callable[..., Any] = _QAT_WEIGHT if is_qat else PerChannelMinMaxObserver
    return QuantizationSpec(
        dtype=torch.int8,
        quant_min=WEIGHT_QMIN,
        quant_max=WEIGHT_QMAX,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
        observer_or_fake_quant_ctr=ctr,
    )


_QAT_SLOPE = FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver, averaging_constant=1.0)


def slope_qspec(is_qat: bool = False) -> QuantizationSpec:
    """PReLU's slope: int8 symmetric per tensor in [-127, 127], as TFLite's int8 PRELU alpha
    (the per-channel observers need a weight of rank >= 2; the slope is ``[C]``).  In QAT it
    is observed like a weight: the current values' own range at every step."""
    return QuantizationSpec(
        dtype=torch.int8,
        quant_min=WEIGHT_QMIN,
        quant_max=WEIGHT_QMAX,
        qscheme=torch.per_tensor_symmetric,
        observer_or_fake_quant_ctr=_QAT_SLOPE if is_qat else MinMaxObserver,
    )


def softmax_output_qspec() -> FixedQParamsQuantizationSpec:
    return FixedQParamsQuantizationSpec(
        dtype=torch.int8,
        scale=SOFTMAX_SCALE,
        zero_point=SOFTMAX_ZERO_POINT,
        quant_min=ACT_QMIN,
        quant_max=ACT_QMAX,
        qscheme=torch.per_tensor_affine,
    )


def _derive_bias_qparams(observers: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """Bias scale[c] = input scale * weight scale[c]; zero point 0 (the accumulator's scale)."""
    act_obs, weight_obs = observers
    act_scale, _ = act_obs.calculate_qparams()
    weight_scale, _ = weight_obs.calculate_qparams()
    scale = (act_scale.to(torch.float64) * weight_scale.to(torch.float64)).to(torch.float32)
    scale = scale.reshape(-1)
    return scale, torch.zeros_like(scale, dtype=torch.int64)


def bias_qspec(node: Node, act: Node, weight: Node) -> DerivedQuantizationSpec:
    """int32 per-channel bias derived from the input edge and weight edge of ``node``."""
    return DerivedQuantizationSpec(
        derived_from=[(act, node), (weight, node)],
        derive_qparams_fn=_derive_bias_qparams,
        dtype=torch.int32,
        quant_min=BIAS_QMIN,
        quant_max=BIAS_QMAX,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )


# torch's fused fake quantize observes per channel on axis 0 only; the unfused one takes any
# axis, given here: torchao passes a spec's ch_axis only to constructors named "PerChannel..."
_QAT_WEIGHT_AXIS1 = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, averaging_constant=1.0, ch_axis=1
)


def transposed_weight_qspec(weight: QuantizationSpec) -> QuantizationSpec:
    """The config's weight spec on axis 1, where a transposed convolution's
    ``[in, out/groups, k...]`` weight keeps its output channels (in QAT with the unfused fake
    quantize: ``fused_moving_avg_obs_fake_quant`` refuses per-channel axes other than 0)."""
    if is_fake_quantize(weight.observer_or_fake_quant_ctr):
        return dataclasses.replace(weight, ch_axis=1, observer_or_fake_quant_ctr=_QAT_WEIGHT_AXIS1)
    return dataclasses.replace(weight, ch_axis=1)


def _tiled_bias_qparams(groups: int) -> Callable[[Sequence[Any]], tuple[torch.Tensor, torch.Tensor]]:
    def derive(observers: Sequence[Any]) -> tuple[torch.Tensor, torch.Tensor]:
        scale, zp = _derive_bias_qparams(observers)
        return scale.repeat(groups), zp.repeat(groups)

    return derive


def transposed_bias_qspec(node: Node, act: Node, weight: Node, groups: int) -> DerivedQuantizationSpec:
    """int32 bias of a transposed convolution: one scale per output channel, the weight's
    per-group scales repeated for each of the ``groups`` groups."""
    return DerivedQuantizationSpec(
        derived_from=[(act, node), (weight, node)],
        derive_qparams_fn=_tiled_bias_qparams(groups),
        dtype=torch.int32,
        quant_min=BIAS_QMIN,
        quant_max=BIAS_QMAX,
        qscheme=torch.per_channel_symmetric,
        ch_axis=0,
    )


def _constructor_class(ctr: Any) -> Any:
    """The class behind an observer/fake-quantize constructor (a class or a ``with_args``
    partial)."""
    return getattr(getattr(ctr, "p", None), "func", ctr)


def _observer_name(ctr: Any) -> str:
    """Class name of the observer behind a constructor; for a fake quantize, of the observer
    it wraps (its ``observer=`` argument)."""
    cls = _constructor_class(ctr)
    if isinstance(cls, type) and issubclass(cls, FakeQuantizeBase):
        keywords = getattr(getattr(ctr, "p", None), "keywords", {}) or {}
        inner = keywords.get("observer")
        if inner is None:  # FakeQuantize's own default observer
            return "MovingAverageMinMaxObserver"
        return _observer_name(inner)
    return str(getattr(cls, "__name__", type(cls).__name__))


def is_fake_quantize(ctr: Any) -> bool:
    """Whether a spec's constructor builds a fake quantize (QAT) rather than an observer (PTQ)."""
    cls = _constructor_class(ctr)
    return isinstance(cls, type) and issubclass(cls, FakeQuantizeBase)


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise QuantizerConfigError(
            f"{what}: ESP-NN only executes int8 per-tensor affine activations in [-128, 127] "
            "and int8 per-output-channel symmetric weights in [-127, 127] (axis 0); build the "
            "config with EspNNQuantizationConfig.default(observer=...) instead"
        )


@dataclass(frozen=True)
class EspNNQuantizationConfig:
    """How one region of the model is quantized.  Only the observers are a choice."""

    activation: QuantizationSpec
    weight: QuantizationSpec

    def __post_init__(self) -> None:
        a, w = self.activation, self.weight
        _check(isinstance(a, QuantizationSpec), "activation spec must be a QuantizationSpec")
        _check(isinstance(w, QuantizationSpec), "weight spec must be a QuantizationSpec")
        _check(a.dtype == torch.int8, f"activation dtype {a.dtype}")
        _check(a.qscheme == torch.per_tensor_affine, f"activation qscheme {a.qscheme}")
        _check((a.quant_min, a.quant_max) == (ACT_QMIN, ACT_QMAX),
               f"activation range [{a.quant_min}, {a.quant_max}]")
        _check(not a.is_dynamic, "dynamic activation quantization")
        _check(w.dtype == torch.int8, f"weight dtype {w.dtype}")
        _check(w.qscheme == torch.per_channel_symmetric, f"weight qscheme {w.qscheme}")
        _check((w.quant_min, w.quant_max) == (WEIGHT_QMIN, WEIGHT_QMAX),
               f"weight range [{w.quant_min}, {w.quant_max}]")
        _check(w.ch_axis == 0, f"weight channel axis {w.ch_axis}")
        obs_name = _observer_name(w.observer_or_fake_quant_ctr)
        _check("PerChannel" in obs_name, f"weight observer {obs_name} is not per-channel")
        if is_fake_quantize(a.observer_or_fake_quant_ctr) != is_fake_quantize(w.observer_or_fake_quant_ctr):
            raise QuantizerConfigError(
                "the activation and weight specs mix a fake quantize (QAT) with an observer (PTQ); "
                "build the config with EspNNQuantizationConfig.default(is_qat=True) for "
                "quantization-aware training, or default() for calibration"
            )

    @property
    def is_qat(self) -> bool:
        """True for fake-quantize specs (prepare_qat_pt2e), False for observers (prepare_pt2e)."""
        return is_fake_quantize(self.activation.observer_or_fake_quant_ctr)

    @classmethod
    def default(cls, observer: ObserverKind = "minmax", is_qat: bool = False) -> EspNNQuantizationConfig:
        """The ESP-NN scheme observed by min/max (or ``"histogram"``) observers, or with
        ``is_qat=True`` by fake quantizes for quantization-aware training."""
        return cls(activation=activation_qspec(observer, is_qat), weight=weight_qspec(is_qat))
