"""The PyTorch quantized program (convert_pt2e output), evaluated without float32 round-off.

The golden for whole models is the quantized program PyTorch produced.  Evaluated by torch in
float32, that program carries the round-off of float32 convolutions and matmuls: near a
rounding boundary of the next quantize node it lands on either side depending on summation
order.  Measured on the zoo's MobileNetV2-0.35/96: torch's own float32 result differs from the
same program evaluated in float64 on up to 61% of the logits (up to 8 LSB) for one input, and
oneDNN-vs-native convolution alone moves 80% of them.  Those flips are not ours, so whole-model
accuracy is judged against the same program with every float op in float64 and quantize /
dequantize computed exactly (``round_half_even(x / scale) + zp``); the float32 figures are
still reported next to it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
import torchao.quantization.pt2e  # noqa: F401  (registers the quantized_decomposed ops)

_QD = torch.ops.quantized_decomposed


def _quantize(x: torch.Tensor, scale: float, zp: int, qmin: int, qmax: int, dtype: torch.dtype,
              **_: object) -> torch.Tensor:
    return torch.clamp(torch.round(x.double() / float(scale)) + zp, qmin, qmax).to(dtype)


def _dequantize(x: torch.Tensor, scale: float, zp: int, qmin: int, qmax: int, dtype: torch.dtype,
                **_: object) -> torch.Tensor:
    return (x.double() - zp) * float(scale)


def _dequantize_per_channel(x: torch.Tensor, scales: torch.Tensor, zps: torch.Tensor, axis: int,
                            qmin: int, qmax: int, dtype: torch.dtype, **_: object) -> torch.Tensor:
    shape = [1] * x.dim()
    shape[axis] = -1
    return (x.double() - zps.double().reshape(shape)) * scales.double().reshape(shape)


_EXACT = {
    _QD.quantize_per_tensor.default: _quantize,
    _QD.dequantize_per_tensor.default: _dequantize,
    _QD.dequantize_per_channel.default: _dequantize_per_channel,
}


def exact_program(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``gm`` whose q/dq nodes compute exactly and whose float math runs in float64."""
    g = copy.deepcopy(gm)
    for n in g.graph.nodes:
        if n.op == "call_function" and n.target in _EXACT:
            n.target = _EXACT[n.target]
    g.recompile()
    return g


def run_exact(gm: torch.fx.GraphModule, inputs: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """Outputs of the exact evaluation, as float32 arrays (they are dequantized int8 values)."""
    with torch.no_grad():
        out = exact_program(gm)(*[t.double() if t.is_floating_point() else t for t in inputs])
    outs = out if isinstance(out, tuple | list) else [out]
    return [o.detach().to(torch.float32).numpy() for o in outs]


def lsb_distance(a: np.ndarray, b: np.ndarray, scale: float) -> np.ndarray:
    """Per-element distance in output LSBs between two dequantized int8 tensors."""
    qa = np.round(np.asarray(a, dtype=np.float64) / scale)
    qb = np.round(np.asarray(b, dtype=np.float64) / scale)
    return np.abs(qa - qb)
