"""``reshape`` of a strided tensor -> ``contiguous`` then ``view``.

``to_edge`` turns a reshape of a non-contiguous tensor (the usual ``x.transpose(1, 2)
.reshape(...)`` of attention and patch folding) into a clone and a view, with no quantize
between them: two operators the quantizer annotated as one, whose middle tensor is float.
Written as the two operators before annotation, each is quantized (sharing the input's
parameters) and lowered.  A reshape is rewritten when its input's metadata is not contiguous
or its input comes from an operator that makes strided views (permute, transpose, slice, ...):
the metadata of a tensor downstream of an earlier rewrite can be stale (attention's fused
output had permuted strides, its decomposition's output has not), the producer cannot.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.fx import GraphModule, Node

from .nodes import call, tensor_meta

aten = torch.ops.aten


STRIDED = frozenset({
    aten.permute.default, aten.transpose.int, aten.t.default, aten.slice.Tensor, aten.select.int,
    aten.expand.default, aten.narrow.default, aten.unfold.default, aten.diagonal.default,
})


def _maybe_strided(x: Node) -> bool:
    val = tensor_meta(x)
    if val is None or not val.is_contiguous():
        return True
    return x.op == "call_function" and x.target in STRIDED


def rewrite_reshape(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.reshape.default or not quantized(node):
            continue
        x = node.args[0]
        if not isinstance(x, Node) or not _maybe_strided(x):
            continue
        dense = call(gm, aten.contiguous.default, (x,), like=node)
        view = call(gm, aten.view.default, (dense, *node.args[1:]), like=node)
        node.replace_all_uses_with(view)
        gm.graph.erase_node(node)
        changed = True
    return changed
