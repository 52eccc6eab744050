"""PT2E quantization for the ESP-NN delegate: ``EspNNQuantizer`` and ``quantize()``.

Scheme (exactly what ESP-NN executes)
-------------------------------------
* activations: int8, per-tensor affine, [-128, 127];
* weights: int8, per-output-channel symmetric, [-127, 127], axis 0 (conv OIHW, depthwise
  [C*mult, 1, kh, kw], linear [out, in]);
* bias: int32, per channel, scale[c] = s_in * s_w[c] (float32), zero point 0.

Graph after ``convert_pt2e`` (default ``fold_quantize=True``), what the lowering matches
-----------------------------------------------------------------------------------------
``qd`` = ``torch.ops.quantized_decomposed``.  Per-tensor scales/zero points are Python
float/int literals in the args; per-channel ones are constant tensors.  convert_pt2e
gives every consumer its own dequantize node.

conv1d / conv2d / linear (bias optional)::

    w_dq = qd.dequantize_per_channel.default(W_i8, W_scale_f32[C], W_zp_i64[C]=0, 0, -127, 127, torch.int8)
    b_dq = qd.dequantize_per_channel.default(B_i32, B_scale_f32[C], B_zp_i64[C]=0, 0,
                                             -2147483648, 2147483647, torch.int32)
    x_dq = qd.dequantize_per_tensor.default(x_q, s_in, zp_in, -128, 127, torch.int8)
    y    = aten.conv2d.default(x_dq, w_dq, b_dq, stride, padding, dilation, groups)  # trailing
           # defaults omitted by export; aten.conv2d.padding when padding="same"/"valid";
           # aten.conv1d.default / .padding likewise with a 3-D [out, in/groups, k] weight;
           # aten.linear.default(x_dq, w_dq, b_dq)
    [y   = <clamp-like>(y, ...)]          # fused activation: NO q/dq between op and activation
    y_q  = qd.quantize_per_tensor.default(y, s_out, zp_out, -128, 127, torch.int8)

  W_i8, W_scale, B_i32, B_scale are ``get_attr`` constants (``_frozen_paramN``/``_scale_N``/
  ``_zero_point_N``); after a later ``torch.export`` they are lifted as BUFFER inputs.
  B_scale[c] == float32(s_in * W_scale[c]); B_i32 = round(b / B_scale) (BN already folded).

clamp-like (fused after conv1d/conv2d/linear/add when it is the op's only user, else standalone):
  ``aten.relu(_)``, ``aten.relu6``, ``aten.hardtanh(_)(x, min_val, max_val)``,
  ``aten.clamp(_)(x, min, max)`` (either bound may be None), ``aten.clamp_min(_)``,
  ``aten.clamp_max(_)``; export writes bounds positionally, but read them with
  ``executorch_espnn.quantizer.clamp_bounds(node)``, which also accepts keywords and
  edge-dialect nodes.  A later
  ``torch.export`` of the converted module rewrites relu6 as ``hardtanh(x, 0.0, 6.0)``.

add / mul::

    aten.add.Tensor(a_dq, b_dq) [-> fused clamp] -> q(s_out, zp_out)    # each input its own qparams
    aten.mul.Tensor(a_dq, b_dq) -> q(s_out, zp_out)                     # broadcasting allowed
    # a Python scalar operand stays a literal: aten.add.Tensor(a_dq, 1.5)

shared-qparams ops (output q has exactly the input dq's scale/zero point):
  max_pool2d, avg_pool2d, adaptive_avg_pool2d, mean.dim over dims {2,3} of a 4-D tensor,
  pad / constant_pad_nd, view / reshape / _unsafe_view / flatten.using_ints / unflatten /
  squeeze(.dim/.dims) / unsqueeze, permute / transpose.int / t, slice.Tensor / select.int /
  narrow, clone / contiguous, dropout / feature_dropout / alpha_dropout / feature_alpha_dropout
  and their in-place forms (eval), upsample_nearest2d(.vec).
  ``aten.cat.default([a_dq, b_dq, ...], dim) -> q``: all inputs and the output share one
  (scale, zero point); the producers write their outputs directly in it.

softmax: ``aten.softmax.int(x_dq, dim) -> q(0.00390625, -128)`` (fixed 1/256, -128).

lookup-table unary ops (input dq and output q with their own qparams): hardswish, sigmoid,
tanh, silu, gelu (either approximation), hardsigmoid, leaky_relu, and clamp-like ops that
were not fused.  sigmoid/tanh outputs are observed, not fixed (a table can map to any scale).

sub (``aten.sub``/``rsub``): annotated as add is; ``aten.div`` by a number (attention's
``/ sqrt(d)``): a lookup-table unary op; ``aten.div.Tensor(a_dq, b_dq) [-> fused clamp] -> q``
of two tensors (linear attention's normaliser): annotated as add is (DIV when the divisor's
observed range is never negative, else it runs on the CPU).

prelu: ``aten.prelu.default(x_dq, alpha_dq) -> q``: the input and the output observed
separately, the slope (one value or one per channel) int8 symmetric per tensor
(``config.slope_qspec``, as TFLite's int8 PRELU takes an int8 alpha).

layer norm and matmul (``annotators/norm_matmul.py``): ``aten.layer_norm.default(x_dq, ...)
-> q`` (the input observed, weight and bias stay float: the lowering makes them integer
constants); ``aten.matmul`` / ``bmm`` / ``mm`` of two activations, each operand observed.

GRU / LSTM layers and cells (``aten.gru.input``, ``aten.lstm.input``, ``aten.gru_cell``,
``aten.lstm_cell``) are unrolled before annotation (``rewrites/recurrent.py``) into per-step
linear / add / sub / mul / sigmoid / tanh / select / stack, each annotated as above; each
quantity of a step (``h``, ``c``, a gate's pre-activation, ...) shares the first step's observer
(``annotators/recurrent.py``).

Regions configured ``None`` (``set_global/set_module_type/set_module_name``) keep float ops
with float ``get_attr`` weights; a quantized neighbour still quantizes its own input edge.
Other ops (batch_norm not after conv/linear, division with a ``rounding_mode``, ...) are left
unannotated.

Quantization-aware training: ``prepare_qat(model, example_inputs)`` (training-mode export +
``prepare_qat_pt2e`` with ``EspNNQuantizer(is_qat=True)``: the same scheme with fake
quantizes; a training-mode batch norm after a conv is quantized after the batch norm and
folded by ``convert_pt2e``), the user's training loop, ``convert_qat(prepared)``, then
``lower()`` of the converted model (already quantized: calibration is skipped).  See
docs/quantization.md.
"""

from __future__ import annotations

from .annotators.patterns import CLAMP_TARGETS, clamp_bounds
from .config import EspNNQuantizationConfig
from .espnn_quantizer import EspNNQuantizer
from .workflow import QuantizeResult, convert_qat, prepare_qat, quantize

__all__ = [
    "CLAMP_TARGETS",
    "EspNNQuantizationConfig",
    "EspNNQuantizer",
    "QuantizeResult",
    "clamp_bounds",
    "convert_qat",
    "prepare_qat",
    "quantize",
]
