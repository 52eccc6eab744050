"""Constants of an exported program: parameter, buffer and lifted-constant values (real ones,
even where ExecuTorch hands the partitioner FakeTensors), and the symmetric int8 weights and
biases operators read through dequantize nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch._export.utils import (
    get_buffer,
    get_lifted_tensor_constant,
    get_param,
    is_buffer,
    is_lifted_tensor_constant,
    is_param,
)
from torch._subclasses.fake_tensor import FakeTensor
from torch.export import ExportedProgram
from torch.fx import Node

from ..unsupported import Unsupported
from .names import DEQUANTIZE, DEQUANTIZE_PER_CHANNEL, node_arg, node_op


@dataclass(frozen=True)
class QuantWeight:
    """A constant int8 weight with per-output-channel scales along ``axis``."""

    values: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float64]  # one per index of `axis`
    axis: int


def _real_of_fake(fake: FakeTensor) -> torch.Tensor | None:
    """The real tensor a FakeTensor was made from, via its fake mode's conversion memo.

    This reads torch internals (pinned torch 2.13); any change there only makes the
    lookup fail, which the caller turns into a clear "values not visible" reason.
    """
    try:
        conv = fake.fake_mode.fake_tensor_converter.meta_converter
        for real, tid in conv.describer.lookup_tensor.items():  # type: ignore[no-untyped-call]
            if conv.tensor_memo.get(tid) is fake and not isinstance(real, FakeTensor):
                return real if isinstance(real, torch.Tensor) else None
    except Exception:
        return None
    return None


class GraphContext:
    """The constants of one exported program (ATen or edge): parameters, buffers, lifted
    constants, and the quantized weights and biases operators read from them.

    ExecuTorch hands partitioners a copy of the program whose parameters and buffers are
    FakeTensors.  Real values come from ``known`` (tensors the partitioner saw in the
    real ATen program, by state-dict key, see ``EspNNPartitioner.ops_to_not_decompose``)
    or, failing that, from the fake tensor's own memo of the real tensor it was made from.
    """

    def __init__(self, ep: ExportedProgram | None, known: dict[str, torch.Tensor] | None = None) -> None:
        self.ep = ep
        self.known = known or {}
        self._keys: dict[str, str] | None = None
        self._values: dict[Node, torch.Tensor | None] = {}

    def _key(self, node: Node) -> str | None:
        if self.ep is None or node.op != "placeholder":
            return None
        if self._keys is None:
            # graph_signature rebuilds these mappings on every access: read them once
            sig = self.ep.graph_signature
            self._keys = {}
            for table in (sig.inputs_to_parameters, sig.inputs_to_buffers, sig.inputs_to_lifted_tensor_constants):
                self._keys.update({str(k): str(v) for k, v in table.items()})
        return self._keys.get(node.name)

    def is_constant(self, node: object) -> bool:
        """Whether ``node`` is a parameter, buffer or lifted constant (whatever its values)."""
        if not isinstance(node, Node):
            return False
        return node.op == "get_attr" or self._key(node) is not None

    def constant(self, node: object) -> torch.Tensor | None:
        """The real value of a constant node, None for anything computed at run time."""
        if not isinstance(node, Node):
            return None
        if node not in self._values:
            self._values[node] = self._constant(node)
        return self._values[node]

    def _constant(self, node: Node) -> torch.Tensor | None:
        if node.op == "get_attr" and self.ep is not None:
            obj: Any = self.ep.graph_module
            for part in str(node.target).split("."):
                obj = getattr(obj, part, None)
            return obj.detach() if isinstance(obj, torch.Tensor) else None
        key = self._key(node)
        if key is None or self.ep is None:
            return None
        ep = self.ep
        t: Any = None
        if is_param(ep, node):
            t = get_param(ep, node)
        elif is_buffer(ep, node):
            t = get_buffer(ep, node)
        elif is_lifted_tensor_constant(ep, node):
            t = get_lifted_tensor_constant(ep, node)
        if not isinstance(t, torch.Tensor):
            return None
        if isinstance(t, FakeTensor):
            real = self.known.get(key)
            if real is None or real.shape != t.shape or real.dtype != t.dtype:
                real = _real_of_fake(t)
            if real is None:
                raise Unsupported(
                    f"the values of constant '{key}' are not visible to the partitioner; lower with "
                    "to_edge_transform_and_lower(..., partitioner=[EspNNPartitioner()])"
                )
            t = real
        value: torch.Tensor = t.detach()
        return value

    def weight(self, node: object, what: str) -> QuantWeight:
        """A dequantize(_per_channel) of a constant int8 tensor, as symmetric int8 weights."""
        if not isinstance(node, Node) or node.op != "call_function":
            raise Unsupported(f"{what} is not a quantized constant (float weights stay on the CPU)")
        name = node_op(node)
        raw = self.constant(node.args[0])
        if raw is None:
            raise Unsupported(f"{what} is computed at run time, the engine needs constant weights")
        if raw.dtype != torch.int8:
            raise Unsupported(f"{what} is {raw.dtype}, expected int8")
        values = raw.numpy().astype(np.int8)
        if name == DEQUANTIZE_PER_CHANNEL:
            scales_t = self.constant(node.args[1])
            zps_t = self.constant(node.args[2]) if node.args[2] is not None else None
            axis = int(node_arg(node, 3, "axis"))
            if scales_t is None:
                raise Unsupported(f"{what} has non-constant scales")
            scales = scales_t.to(torch.float64).numpy().reshape(-1)
            zps = np.zeros_like(scales) if zps_t is None else zps_t.to(torch.float64).numpy().reshape(-1)
        elif name == DEQUANTIZE:
            s, z = node_arg(node, 1, "scale"), node_arg(node, 2, "zero_point")
            if isinstance(s, Node) or isinstance(z, Node):
                raise Unsupported(f"{what} has tensor-valued quantization parameters")
            axis = 0
            n = values.shape[0] if values.ndim else 1
            scales = np.full(n, float(s), dtype=np.float64)
            zps = np.full(n, float(z), dtype=np.float64)
        else:
            raise Unsupported(f"{what} is produced by {name}, expected a dequantize of int8 weights")
        if (zps != 0).any():
            raise Unsupported(f"{what} is asymmetric (non-zero zero point); ESP-NN needs symmetric weights")
        if (values == -128).any():
            raise Unsupported(f"{what} contains -128; ESP-NN weights must be symmetric in [-127, 127]")
        if not (np.isfinite(scales).all() and (scales > 0).all()):
            raise Unsupported(f"{what} has a zero, negative or non-finite scale")
        if values.ndim == 0 or scales.shape[0] != values.shape[axis]:
            raise Unsupported(f"{what} has {scales.shape[0]} scales for {values.shape} values on axis {axis}")
        return QuantWeight(values, scales, axis)

    def bias(self, node: object, what: str) -> npt.NDArray[np.float64] | None:
        """A bias operand as float64 reals (float constant, or dequantized int32 constant)."""
        if node is None:
            return None
        if not isinstance(node, Node):
            raise Unsupported(f"{what} is not a tensor")
        const = self.constant(node)
        if const is not None:
            if not const.dtype.is_floating_point:
                raise Unsupported(f"{what} is {const.dtype} without quantization parameters")
            return const.to(torch.float32).to(torch.float64).numpy().reshape(-1)
        name = node_op(node) if node.op == "call_function" else ""
        if name in (DEQUANTIZE, DEQUANTIZE_PER_CHANNEL):
            raw = self.constant(node.args[0])
            if raw is None:
                raise Unsupported(f"{what} is computed at run time, the engine needs a constant bias")
            args: list[Any] = [raw]
            for a in node.args[1:]:
                if isinstance(a, Node):
                    c = self.constant(a)
                    if c is None:
                        raise Unsupported(f"{what} has non-constant quantization parameters")
                    args.append(c)
                else:
                    args.append(a)
            # the exact float32 values the program adds
            op = torch.ops.quantized_decomposed
            fn = op.dequantize_per_tensor if name == DEQUANTIZE else op.dequantize_per_channel
            real: torch.Tensor = fn(*args)
            values: npt.NDArray[np.float64] = real.to(torch.float32).to(torch.float64).numpy().reshape(-1)
            return values
        raise Unsupported(f"{what} is computed at run time, the engine needs a constant bias")
