"""Building replacement nodes in an exported (ATen) graph before annotation.

A new node gets the metadata the annotators and the report read from the node it replaces:
``val`` (its FakeTensor, computed by running the ATen operator on the inputs' FakeTensors),
``nn_module_stack`` (which module it belongs to: the quantizer's per-module configs),
``stack_trace`` (the report's source locations) and ``from_node`` (provenance).
"""

from __future__ import annotations

from typing import Any

import torch
from torch._ops import OpOverload
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg

_COPIED = ("nn_module_stack", "stack_trace", "from_node", "source_fn_stack")


def fake(value: Node) -> Any:
    """The FakeTensor a node argument stands for (``map_arg`` calls it on nodes only)."""
    return value.meta.get("val")


def tensor_meta(node: Node) -> torch.Tensor | None:
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def shape(node: Node) -> tuple[int, ...] | None:
    """The static shape of a tensor node, or None (no metadata, or a symbolic size)."""
    val = tensor_meta(node)
    if val is None:
        return None
    try:
        return tuple(int(d) for d in val.shape)
    except (TypeError, ValueError):  # a symbolic size
        return None


def call(gm: GraphModule, target: OpOverload, args: tuple[Any, ...], like: Node,
         kwargs: dict[str, Any] | None = None) -> Node:
    """Insert ``target(*args)`` before ``like``, with ``like``'s module/trace metadata and the
    FakeTensor the operator computes from its inputs' FakeTensors."""
    with gm.graph.inserting_before(like):
        node = gm.graph.call_function(target, args, kwargs or {})
    for key in _COPIED:
        if key in like.meta:
            node.meta[key] = like.meta[key]
    fargs = map_arg(args, fake)
    fkwargs = map_arg(kwargs or {}, fake)
    node.meta["val"] = target(*fargs, **fkwargs)
    return node


def constant(gm: GraphModule, name: str, value: torch.Tensor, like: Node) -> Node:
    """A new ``get_attr`` constant (a parameter of the module, so PT2E observes and folds it
    like any weight), inserted before ``like``."""
    base, i = name, 0
    while hasattr(gm, name):
        i += 1
        name = f"{base}_{i}"
    gm.register_parameter(name, torch.nn.Parameter(value.detach().clone(), requires_grad=False))
    with gm.graph.inserting_before(like):
        node = gm.graph.get_attr(name)
    mode = getattr(tensor_meta(like), "fake_mode", None)
    node.meta["val"] = mode.from_tensor(getattr(gm, name)) if mode is not None else getattr(gm, name)
    return node


def attr_value(gm: GraphModule, node: object) -> torch.Tensor | None:
    """The real tensor behind a ``get_attr`` node (a parameter or buffer), else None."""
    if not isinstance(node, Node) or node.op != "get_attr" or not isinstance(node.target, str):
        return None
    obj: Any = gm
    for part in node.target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj if isinstance(obj, torch.Tensor) else None
