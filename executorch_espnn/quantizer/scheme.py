"""Is an already quantized model in a scheme ESP-NN can execute?

``lower()`` takes a model that is already quantized (after ``convert_qat()``, or quantized by
the user with ``EspNNQuantizer`` or another static int8 PT2E quantizer) and skips its own
calibration.  Before partitioning it checks the quantize/dequantize operators here, so that
a scheme the delegate can never run fails with one message naming the node and the fix
instead of a report that leaves every operator on the CPU.

Accepted: static int8 activations over [-128, 127] (per tensor), int8 weights in 8 bits with
zero points 0 (per channel or per tensor; XNNPACK's static symmetric configs qualify), int32
biases.  Refused: dynamic quantization (``choose_qparams``, ``.tensor`` overloads), other
activation dtypes or ranges, weights below 8 bits or with zero points, and quantization
operators of other schemes (per token, groupwise, torchao's affine ops).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ..errors import QuantizerConfigError

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.fx import Node

_PER_TENSOR = ("quantized_decomposed.quantize_per_tensor.default",
               "quantized_decomposed.dequantize_per_tensor.default")
_PER_CHANNEL = ("quantized_decomposed.quantize_per_channel.default",
                "quantized_decomposed.dequantize_per_channel.default")
_FIX = ("quantize the float model with EspNNQuantizer instead (lower() does it when given the "
        "float model; prepare_qat()/convert_qat() for quantization-aware training)")


def _name(node: Node) -> str:
    return str(node.target)


def _is_quant_op(name: str) -> bool:
    return "quantized_decomposed" in name or "quantize_affine" in name or "choose_qparams" in name


def _refuse(node: Node, what: str) -> QuantizerConfigError:
    return QuantizerConfigError(
        f"the model is already quantized, in a scheme ESP-NN cannot execute: {node.name} "
        f"({_name(node)}) {what}; ESP-NN runs static int8 activations over [-128, 127] and 8-bit "
        f"int8 weights with zero point 0; {_FIX}"
    )


def _constant(ep: ExportedProgram, node: Any) -> Any:
    """The value of a lifted constant or get_attr argument, None when not a constant."""
    from torch.fx import Node

    if not isinstance(node, Node):
        return node
    if node.op == "get_attr":
        obj: Any = ep.graph_module
        for part in str(node.target).split("."):
            obj = getattr(obj, part, None)
        return obj
    if node.op == "placeholder":
        sig = ep.graph_signature
        for table in (sig.inputs_to_parameters, sig.inputs_to_buffers,
                      getattr(sig, "inputs_to_lifted_tensor_constants", {})):
            if node.name in table:
                key = table[node.name]
                return ep.state_dict.get(key, ep.constants.get(key) if ep.constants else None)
    return None


def check_quantized_scheme(ep: ExportedProgram) -> None:
    """Raise QuantizerConfigError naming the first quantize/dequantize node ESP-NN cannot
    execute; return silently for a model in the ESP-NN scheme (or one it contains)."""
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        name = _name(node)
        if not _is_quant_op(name):
            continue
        if "choose_qparams" in name or name.endswith(".tensor") or name.endswith(".tensor2"):
            raise _refuse(node, "computes its quantization at run time (dynamic quantization)")
        if name in _PER_TENSOR:
            qmin, qmax, dtype = node.args[3], node.args[4], node.args[5]
            if dtype == torch.int32 and name.startswith("quantized_decomposed.dequantize"):
                continue  # a per-tensor int32 bias
            if dtype != torch.int8 or (qmin, qmax) != (-128, 127):
                if dtype == torch.int8 and qmax - qmin >= 254 and _is_weight(ep, node):
                    continue  # per-tensor symmetric int8 weights ([-127, 127])
                raise _refuse(node, f"uses {dtype} over [{qmin}, {qmax}]")
        elif name in _PER_CHANNEL:
            qmin, qmax, dtype = node.args[4], node.args[5], node.args[6]
            if dtype == torch.int32:
                continue  # biases
            if dtype != torch.int8 or qmax - qmin < 254:
                raise _refuse(node, f"uses {dtype} over [{qmin}, {qmax}] (weights below 8 bits)")
            zero_points = _constant(ep, node.args[2])
            if isinstance(zero_points, torch.Tensor) and bool((zero_points != 0).any()):
                raise _refuse(node, "has weight zero points other than 0 (asymmetric weights)")
        else:
            raise _refuse(node, "is a quantization operator of another scheme")


def _is_weight(ep: ExportedProgram, node: Node) -> bool:
    """Whether a dequantize reads a constant (a weight), not an activation."""
    src = node.args[0] if node.args else None
    return _constant(ep, src) is not None
