"""``wrap_with_autocast`` with autocast disabled -> its body, inlined.

``torch.export`` records a ``with torch.autocast(..., enabled=False)`` block as a
higher-order operator calling a submodule (EfficientViT-B's linear attention keeps its two
matmuls and its division in float32 that way).  The quantizer would see one opaque node, so
everything inside it would stay float on the CPU.  A disabled autocast changes nothing for
float32 tensors: the body's nodes move into the graph in the operator's place, without the
body's ``to(float32)`` of a tensor that already is float32 and its dtype assertions (both
no-ops).  An enabled autocast (whose casts are real) and a body that reads attributes of its
own are left alone.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg

from .nodes import tensor_meta

aten = torch.ops.aten
_WRAP_WITH_AUTOCAST = getattr(torch.ops.higher_order, "wrap_with_autocast", None)


def _is_identity_cast(node: Node) -> bool:
    """``x.to(dtype)`` of a tensor that already has ``dtype`` (and no other change)."""
    if node.target is not aten.to.dtype or node.kwargs or len(node.args) != 2:
        return False
    src = node.args[0]
    val = tensor_meta(src) if isinstance(src, Node) else None
    return val is not None and val.dtype == node.args[1]


def _inline(gm: GraphModule, node: Node, body: GraphModule, args: list[Any]) -> None:
    env: dict[Node, Any] = {}
    outputs: Any = None
    placeholders = [n for n in body.graph.nodes if n.op == "placeholder"]
    env.update(zip(placeholders, args, strict=True))
    with gm.graph.inserting_before(node):
        for n in body.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                outputs = map_arg(n.args[0], lambda x: env[x])
                break
            if n.target is aten._assert_tensor_metadata.default:
                continue
            if _is_identity_cast(n):
                env[n] = env[n.args[0]]
                continue
            copy = gm.graph.node_copy(n, lambda x: env[x])
            for key in ("nn_module_stack", "stack_trace"):  # the block's module, for scoped configs
                if key not in copy.meta and key in node.meta:
                    copy.meta[key] = node.meta[key]
            env[n] = copy
    results = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    for user in list(node.users):
        index = user.args[1]
        assert isinstance(index, int)  # every user is a getitem of an int: checked by the caller
        user.replace_all_uses_with(results[index])
        gm.graph.erase_node(user)
    gm.graph.erase_node(node)


def rewrite_autocast(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    if _WRAP_WITH_AUTOCAST is None:  # pragma: no cover - every supported torch has it
        return False
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not _WRAP_WITH_AUTOCAST or not quantized(node):
            continue
        if len(node.args) < 5 or node.args[2] is not False or not isinstance(node.args[4], Node):
            continue  # autocast enabled: its casts change the numbers
        body = getattr(gm, str(node.args[4].target), None)
        if not isinstance(body, GraphModule) or any(n.op == "get_attr" for n in body.graph.nodes):
            continue
        if not all(u.op == "call_function" and u.target is operator.getitem and isinstance(u.args[1], int)
                   for u in node.users):
            continue
        sub = node.args[4]
        _inline(gm, node, body, list(node.args[5:]))
        if not sub.users:
            gm.graph.erase_node(sub)
            delattr(gm, str(sub.target))
        changed = True
    return changed
