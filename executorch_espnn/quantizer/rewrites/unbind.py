"""``unbind(x, d)[i]`` -> ``select(x, d, i)``.

``unbind`` returns a list that aliases its input, so it can neither be annotated as one
operator nor kept whole through ``to_edge`` (which turns each piece into ``slice`` ->
``squeeze`` with no quantize between them: pieces the quantizer never saw).  Each piece read
through ``getitem`` is exactly ``select(x, d, i)``, which is quantized like any slice (the
input's parameters) and lowered as ``SLICE`` + ``RESHAPE``.  Attention's head split
``q, k, v = qkv.unbind(0)`` is the common case.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch
from torch.fx import GraphModule, Node

from .nodes import call

aten = torch.ops.aten


def rewrite_unbind(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.unbind.int or not quantized(node):
            continue
        pieces = list(node.users)
        if not all(p.op == "call_function" and p.target is operator.getitem and isinstance(p.args[1], int)
                   for p in pieces):
            continue  # the list itself is used (returned, passed on): leave it
        x = node.args[0]
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if not isinstance(x, Node) or not isinstance(dim, int):
            continue
        for p in pieces:
            if not p.users:
                gm.graph.erase_node(p)
                continue
            sel = call(gm, aten.select.int, (x, dim, p.args[1]), like=p)
            p.replace_all_uses_with(sel)
            gm.graph.erase_node(p)
        gm.graph.erase_node(node)
        changed = True
    return changed
