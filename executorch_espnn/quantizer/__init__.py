"""PT2E quantization for the ESP-NN delegate.

Scheme: int8 per-tensor affine activations in [-128, 127]; int8 per-output-channel
symmetric weights in [-127, 127] (axis 0: OIHW conv incl. depthwise, [out, in] linear);
int32 bias with scale[c] = input scale * weight scale[c] and zero point 0.
See ``espnn_quantizer`` for the patterns and ``config`` for the observer choice.
"""

from __future__ import annotations

from .config import EspNNQuantizationConfig
from .espnn_quantizer import EspNNQuantizer
from .workflow import QuantizeResult, quantize

__all__ = ["EspNNQuantizationConfig", "EspNNQuantizer", "QuantizeResult", "quantize"]
