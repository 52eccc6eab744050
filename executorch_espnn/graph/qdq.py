"""Quantize and dequantize nodes: their int8 parameters (``QParams``), and the pass that
gives each reader of a shared dequantize its own copy."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.fx import Node

from ..unsupported import Unsupported
from .names import DEQUANTIZE, DEQUANTIZE_PER_CHANNEL, node_arg, node_op

INT8_MIN = -128
INT8_MAX = 127


@dataclass(frozen=True)
class QParams:
    """Per-tensor affine int8 quantization: real = scale * (q - zero_point)."""

    scale: float
    zero_point: int

    @property
    def scale32(self) -> float:
        """The scale as dequantize_per_tensor applies it (a float32 multiply)."""
        return float(np.float32(self.scale))

    @property
    def inv_scale32(self) -> float:
        """1/scale as quantize_per_tensor applies it (a float32 multiply)."""
        return float(np.float32(1.0 / self.scale))

    def quantize(self, values: torch.Tensor) -> torch.Tensor:
        """Exactly what the program's quantize_per_tensor computes, as int8."""
        out: torch.Tensor = torch.ops.quantized_decomposed.quantize_per_tensor(
            values.to(torch.float32), self.scale, self.zero_point, INT8_MIN, INT8_MAX, torch.int8
        )
        return out

    def dequantize(self, values: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.ops.quantized_decomposed.dequantize_per_tensor(
            values.to(torch.int8), self.scale, self.zero_point, INT8_MIN, INT8_MAX, torch.int8
        )
        return out

    def quantize_scalar(self, v: float) -> int:
        return int(self.quantize(torch.tensor([v], dtype=torch.float32))[0])


def qdq_params(node: Node) -> QParams:
    """The int8 per-tensor parameters of a quantize/dequantize node (refusing anything else)."""
    scale = node_arg(node, 1, "scale")
    zp = node_arg(node, 2, "zero_point")
    qmin = node_arg(node, 3, "quant_min")
    qmax = node_arg(node, 4, "quant_max")
    dtype = node_arg(node, 5, "dtype")
    if dtype != torch.int8:
        raise Unsupported(f"{node.name} quantizes to {dtype}, the engine runs int8 only")
    if (qmin, qmax) != (INT8_MIN, INT8_MAX):
        raise Unsupported(f"{node.name} uses the range [{qmin}, {qmax}]; activations need int8's full [-128, 127]")
    if isinstance(scale, Node) or isinstance(zp, Node):
        raise Unsupported(f"{node.name} has tensor-valued quantization parameters")
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0):
        raise Unsupported(f"{node.name} has scale {scale}")
    zp = int(zp)
    if not INT8_MIN <= zp <= INT8_MAX:
        raise Unsupported(f"{node.name} has zero point {zp} outside int8")
    return QParams(scale, zp)


def duplicate_dequantize(gm: torch.fx.GraphModule) -> bool:
    """Give each reader of a shared dequantize node its own copy (per tensor and per channel).

    Each quantized operator then owns the dequantize nodes in front of it, which keeps the
    groups the partitioner forms disjoint.  Works on ATen and edge graphs alike.
    """
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node_op(node) not in (DEQUANTIZE, DEQUANTIZE_PER_CHANNEL):
            continue
        readers = [u for u in node.users if u.op == "call_function"]
        for user in readers[1:] if len(readers) == len(node.users) else readers:
            with gm.graph.inserting_before(user):
                dup = gm.graph.call_function(node.target, node.args, dict(node.kwargs))
            dup.meta = dict(node.meta)
            user.replace_input_with(node, dup)
            changed = True
    if changed:
        gm.recompile()
    return changed
