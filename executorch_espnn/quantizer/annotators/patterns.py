"""aten targets of the patterns the quantizer recognises, and argument readers for them."""

from __future__ import annotations

from typing import Any

import torch
from torch._ops import OpOverload
from torch.fx import Node

aten = torch.ops.aten

#: Activations that fold into the output range of conv/linear/add (ESP-NN act_min/act_max).
CLAMP_TARGETS: frozenset[OpOverload] = frozenset({
    aten.relu.default,
    aten.relu_.default,
    aten.relu6.default,
    aten.hardtanh.default,
    aten.hardtanh_.default,
    aten.clamp.default,
    aten.clamp_.default,
    aten.clamp_min.default,
    aten.clamp_min_.default,
    aten.clamp_max.default,
    aten.clamp_max_.default,
})

_CLAMP_ARGS: dict[OpOverload, tuple[tuple[str, int, float | None], tuple[str, int, float | None]]] = {
    aten.hardtanh.default: (("min_val", 1, -1.0), ("max_val", 2, 1.0)),
    aten.hardtanh_.default: (("min_val", 1, -1.0), ("max_val", 2, 1.0)),
    aten.clamp.default: (("min", 1, None), ("max", 2, None)),
    aten.clamp_.default: (("min", 1, None), ("max", 2, None)),
    aten.clamp_min.default: (("min", 1, None), ("", -1, None)),
    aten.clamp_min_.default: (("min", 1, None), ("", -1, None)),
    aten.clamp_max.default: (("", -1, None), ("max", 1, None)),
    aten.clamp_max_.default: (("", -1, None), ("max", 1, None)),
}


def arg(node: Node, index: int, name: str, default: Any = None) -> Any:
    """An argument of ``node`` whether it was passed positionally or by keyword
    (``index`` -1: the op has no such argument, return ``default``)."""
    if index < 0:
        return default
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def clamp_bounds(node: Node) -> tuple[float | None, float | None]:
    """The (min, max) a relu/relu6/hardtanh/clamp node applies; ``None`` means unbounded.

    Accepts ATen nodes and their edge-dialect counterparts (``EdgeOpOverload._op``), and
    bounds given positionally or by keyword.
    """
    target = node.target
    if not isinstance(target, OpOverload):  # edge dialect wraps the ATen overload
        target = getattr(target, "_op", target)
    if target in (aten.relu.default, aten.relu_.default):
        return 0.0, None
    if target == aten.relu6.default:
        return 0.0, 6.0
    spec = _CLAMP_ARGS.get(target)  # type: ignore[call-overload]
    if spec is None:
        raise ValueError(f"{node.format_node()} is not a clamp-like activation")
    (lo_name, lo_idx, lo_def), (hi_name, hi_idx, hi_def) = spec
    lo = arg(node, lo_idx, lo_name, lo_def)
    hi = arg(node, hi_idx, hi_name, hi_def)
    return (None if lo is None else float(lo)), (None if hi is None else float(hi))

