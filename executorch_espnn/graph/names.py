"""What an FX node is and what it is called with: canonical operator names, the q/dq
predicates, arguments, tensor metadata and the bounds of clamp-like activations."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node

from ..unsupported import Unsupported

QUANTIZE = "quantized_decomposed.quantize_per_tensor.default"
DEQUANTIZE = "quantized_decomposed.dequantize_per_tensor.default"
DEQUANTIZE_PER_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
QDQ_OPS = frozenset({
    QUANTIZE,
    DEQUANTIZE,
    DEQUANTIZE_PER_CHANNEL,
    "quantized_decomposed.quantize_per_tensor.tensor",
    "quantized_decomposed.dequantize_per_tensor.tensor",
    "quantized_decomposed.quantize_per_channel.default",
})
GETITEM = "getitem"

# clamp-like activations that fold into a preceding operator's output range (``clamp_bounds``)
FUSABLE_ACTIVATIONS = (
    "aten.relu.default",
    "aten.relu6.default",
    "aten.hardtanh.default",
    "aten.clamp.default",
    "aten.clamp_min.default",
    "aten.clamp_max.default",
)

_MISSING: Any = object()


def op_name(target: object) -> str:
    """Canonical name of an FX call target: "aten.linear.default", "getitem", …"""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    name = getattr(target, "__name__", None)
    if isinstance(name, str):
        # EdgeOpOverload.__name__ is already "aten.linear.default"
        return name
    return str(target)


def node_op(node: Node) -> str:
    return op_name(node.target) if node.op == "call_function" else node.op


def is_quantize(node: object) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node_op(node) == QUANTIZE


def is_dequantize(node: object) -> bool:
    return isinstance(node, Node) and node.op == "call_function" and node_op(node) == DEQUANTIZE


def is_qdq(node: Node) -> bool:
    return node.op == "call_function" and node_op(node) in QDQ_OPS


def node_arg(node: Node, index: int, name: str, default: Any = _MISSING) -> Any:
    """Argument ``index``/``name`` of a call, positional or keyword."""
    if len(node.args) > index:
        return node.args[index]
    if name in node.kwargs:
        return node.kwargs[name]
    if default is _MISSING:
        raise Unsupported(f"{node_op(node)} is missing its '{name}' argument")
    return default


def meta_val(node: Node) -> torch.Tensor:
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        val = val[0]
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"{node.name} has no tensor metadata")
    return val


def static_shape(node: Node) -> tuple[int, ...]:
    shape = meta_val(node).shape
    out: list[int] = []
    for d in shape:
        if not isinstance(d, int):
            try:
                d = int(d)
            except (TypeError, ValueError):
                raise Unsupported(f"{node.name} has a dynamic shape {tuple(shape)}") from None
        out.append(d)
    return tuple(out)


def clamp_bounds(node: Node) -> tuple[float | None, float | None]:
    """(min, max) of a relu/relu6/hardtanh/clamp node; None means unbounded."""
    name = node_op(node)
    if name == "aten.relu.default":
        return 0.0, None
    if name == "aten.relu6.default":
        return 0.0, 6.0
    if name == "aten.hardtanh.default":
        return float(node_arg(node, 1, "min_val", -1.0)), float(node_arg(node, 2, "max_val", 1.0))
    if name == "aten.clamp.default":
        lo = node_arg(node, 1, "min", None)
        hi = node_arg(node, 2, "max", None)
        if isinstance(lo, Node) or isinstance(hi, Node):
            raise Unsupported("clamp with tensor bounds")
        return (None if lo is None else float(lo)), (None if hi is None else float(hi))
    if name in ("aten.clamp_min.default", "aten.clamp_max.default"):
        bound = node_arg(node, 1, "min" if name.endswith("min.default") else "max")
        if isinstance(bound, Node):
            raise Unsupported(f"{name} with a tensor bound")
        return (float(bound), None) if name.endswith("min.default") else (None, float(bound))
    raise Unsupported(f"{name} is not a clamp-like activation")
